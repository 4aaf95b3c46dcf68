"""Record files for the streaming tests: generated pairs (one or several references, empty
texts, unicode) written as JSONL, CSV and Parquet, and the same items as plain lists."""
from __future__ import annotations

import csv
import json
import random
from pathlib import Path

WORDS = ("the cat sat on a mat dog ran far away quickly slowly big small red blue "
         "naïve café über straße, \"quoted\" words. new-line").split()


def generate_items(n: int, seed: int = 0) -> list[dict]:
    """``n`` items with ``output`` and ``reference`` (a string, or a list of 2-3 strings)."""
    rng = random.Random(seed)
    items = []
    for _ in range(n):
        output = " ".join(rng.choices(WORDS, k=rng.randint(0, 14)))
        refs = [" ".join(rng.choices(WORDS, k=rng.randint(1, 14))) for _ in range(rng.choice([1, 1, 2, 3]))]
        items.append({"output": output, "reference": refs[0] if len(refs) == 1 else refs})
    return items


def write_jsonl(path: Path, items: list[dict]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


def write_parquet(path: Path, items: list[dict]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"output": [i["output"] for i in items],
                      "reference": [i["reference"] if isinstance(i["reference"], list) else [i["reference"]]
                                    for i in items]})
    pq.write_table(table, str(path), row_group_size=97)     # row groups that do not align with chunks
    return path


def write_csv(path: Path, items: list[dict], newline_in_field: bool = True) -> Path:
    """One reference column; outputs sometimes hold a quoted newline (a record over two lines)."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["pred", "ref"])
        for k, item in enumerate(items):
            ref = item["reference"] if isinstance(item["reference"], str) else item["reference"][0]
            out = item["output"] + ("\nmore" if newline_in_field and k % 7 == 3 else "")
            writer.writerow([out, ref])
    return path


def csv_items(items: list[dict], newline_in_field: bool = True) -> list[dict]:
    """The items ``write_csv`` stores, as they read back."""
    out = []
    for k, item in enumerate(items):
        ref = item["reference"] if isinstance(item["reference"], str) else item["reference"][0]
        text = item["output"] + ("\nmore" if newline_in_field and k % 7 == 3 else "")
        out.append({"output": text, "reference": ref})
    return out
