"""Scoring records streamed from files (JSONL, CSV, Parquet) in chunks with bounded memory:
sources read them, an engine scores them (this process, or Ray), a run writes one row per item,
resumable, and aggregates the rows in index order."""
from opik_metrics.streams.rescore import RecordsError, RescoredRecords, rescore_records
from opik_metrics.streams.fields import FieldError, FieldMap, parse_field_options
from opik_metrics.streams.output import OutputError, RunOutput, read_metadata, read_rows
from opik_metrics.streams.processes import ProcessEngine
from opik_metrics.scoring.rows import Aggregator, RowMaker
from opik_metrics.streams.run import (ChunkScorer, LocalEngine, StreamResult, StreamRun, read_references,
                                      score_file, score_source)
from opik_metrics.streams.sources import BadRecord, Chunk, ChunkRef, Source, SourceError, open_source

__all__ = ["Aggregator", "BadRecord", "Chunk", "ChunkRef", "ChunkScorer", "FieldError", "FieldMap", "LocalEngine",
           "OutputError", "ProcessEngine", "RecordsError", "RescoredRecords", "RowMaker", "RunOutput", "Source",
           "SourceError", "StreamResult", "StreamRun", "open_source", "parse_field_options", "read_metadata",
           "read_references", "read_rows", "rescore_records", "score_file", "score_source"]
