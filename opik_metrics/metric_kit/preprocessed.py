"""A metric that scores preprocessed text: what papers' scripts do to outputs and references before
scoring (one sentence a line by nltk's Punkt, as rouge-score's ``split_summaries``; lowercasing),
done to the texts the metric reads and recorded in its signature, so that a record of a run says it
and a comparison of a preprocessed run with a plain one shows an option difference.

``Preprocessed(metric, lowercase=True)`` scores as ``metric`` does on the prepared texts: its
output, references, source, and its ``text_field``; images and the metric's own options are left
as they are. Its facts are the metric's with ``lowercase:yes`` and ``split:<splitter>`` added to
the signature; the results are the metric's own (their metadata keeps the metric's signature, which
the metric's ``item_statistics`` recognises). ``build`` makes one from a ``MetricRecipe`` entry, so
that worker processes and Ray actors build the same.
"""
from __future__ import annotations

import dataclasses
import importlib
from typing import Any, Callable, Mapping, Sequence

from opik_metrics.core import Signature, facts_of
from opik_metrics.text.tokenizers.sentences import english_sentence_splitter

UNTRAINED_PUNKT_WARNING = (
    "nltk's English Punkt model is not installed (python -m nltk.downloader punkt_tab): sentences "
    "are split by untrained Punkt, which also splits after abbreviations such as 'Dr.' (the "
    "signature says split:punkt-untrained)")

#: How sentences are found: ``newline`` (the text's own lines, rouge-score's rule: nothing done)
#: or ``nltk`` (nltk's Punkt, rouge-score's ``split_summaries=True``).
SPLITTERS = ("newline", "nltk")


class Preparation:
    """The text steps, in order: sentences split (on the text as written: Punkt reads its case),
    then lowercasing. ``fields``: what the signature gains."""

    def __init__(self, lowercase: bool = False, split_sentences: str | None = None) -> None:
        if not isinstance(lowercase, bool):
            raise ValueError(f"lowercase: expected True or False, got {lowercase!r}")
        if split_sentences is not None and split_sentences not in SPLITTERS:
            raise ValueError(f"split_sentences: expected one of {', '.join(SPLITTERS)}, got {split_sentences!r}")
        self.lowercase = lowercase
        self._split: Callable[[str], list[str]] | None = None
        self.fields: dict[str, Any] = {}
        if split_sentences == "nltk":
            self._split, self.fields["split"] = english_sentence_splitter(UNTRAINED_PUNKT_WARNING)
        if lowercase:
            self.fields["lowercase"] = True

    def __bool__(self) -> bool:
        return bool(self.fields)

    def text(self, text: Any) -> Any:
        """One text prepared (anything else, left for the metric to refuse, as it is)."""
        if not isinstance(text, str):
            return text
        if self._split is not None:
            # one sentence a line; a newline inside a sentence becomes a space (each is a separator
            # to every tokeniser that reads lines), so the lines are Punkt's sentences exactly
            text = "\n".join(s.replace("\r", " ").replace("\n", " ") for s in self._split(text))
        return text.lower() if self.lowercase else text

    def texts(self, texts: Any) -> Any:
        """A list of texts (or of lists of texts: references) prepared."""
        if isinstance(texts, str):
            return self.text(texts)
        if isinstance(texts, Sequence):
            return [self.texts(t) for t in texts]
        return texts


class Preprocessed:
    """``metric`` scoring prepared texts (see the module); every other attribute is the metric's."""

    def __init__(self, metric: Any, *, lowercase: bool = False, split_sentences: str | None = None) -> None:
        self.metric = metric
        self.preparation = Preparation(lowercase, split_sentences)
        #: What preprocessing adds to a signature (``lowercase:yes|split:punkt-english``).
        self.preprocessing = Signature(self.preparation.fields)
        own = getattr(metric, "signature", None)
        self.signature = own.extended(**self.preparation.fields) if isinstance(own, Signature) else self.preprocessing
        self.facts = dataclasses.replace(facts_of(metric), signature=self.signature)

    def __getattr__(self, name: str) -> Any:
        if name in ("metric", "preparation", "__setstate__"):     # not set yet (a copy being made)
            raise AttributeError(name)
        return getattr(self.metric, name)

    def __repr__(self) -> str:
        return f"Preprocessed({self.metric!r}, {self.preprocessing})"

    @property
    def name(self) -> str:
        return str(self.metric.name)

    @property
    def needs_reference(self) -> bool:
        """Whether the metric compares with references (a reference metric, or one that says so):
        what a streamed run reads of each record."""
        from opik_metrics.metric_kit.base import ReferenceMetric
        return isinstance(self.metric, ReferenceMetric) or getattr(self.metric, "needs_reference", False) is True

    def _text_inputs(self) -> set[str]:
        names = {"output", getattr(self.metric, "text_field", "output")}
        source = getattr(self.metric, "source_field", None)
        if isinstance(source, str):
            names.add(source)
        return names

    def _inputs(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        texts = self._text_inputs() | {"reference"}
        return {k: self.preparation.texts(v) if k in texts else v for k, v in inputs.items()}

    def _more(self, more: Mapping[str, Any]) -> dict[str, Any]:
        """``score_batch``'s other inputs: the ones that are a text input (sources) prepared."""
        texts = self._text_inputs()
        fields = dict(getattr(self.metric, "batch_fields", None) or {})
        return {k: self.preparation.texts(v) if fields.get(k) in texts else v for k, v in more.items()}

    # -- scoring: the metric's, on prepared texts ---------------------------------------------
    def score(self, **inputs: Any) -> Any:
        return self.metric.score(**self._inputs(inputs))

    def score_batch(self, outputs: Sequence[Any], references: Sequence[Any] | None = None, **more: Any) -> Any:
        return self.metric.score_batch(self.preparation.texts(outputs), self.preparation.texts(references),
                                       **self._more(more))

    def statistics(self, outputs: Sequence[Any], references: Sequence[Any] | None = None, **more: Any) -> Any:
        return self.metric.statistics(self.preparation.texts(outputs), self.preparation.texts(references),
                                      **self._more(more))

    def corpus_score(self, outputs: Sequence[Any], references: Sequence[Any] | None = None, **more: Any) -> Any:
        return self.metric.corpus_score(self.preparation.texts(outputs), self.preparation.texts(references),
                                        **self._more(more))

    def fit_corpus(self, references: Sequence[Any]) -> None:
        self.metric.fit_corpus(self.preparation.texts(references))


def build(target: str, arguments: Mapping[str, Any], lowercase: bool = False,
          split_sentences: str | None = None) -> Preprocessed:
    """The metric class at ``target`` (``module:qualname``) built with ``arguments``, scoring prepared
    texts: what a ``MetricRecipe`` entry names to build a preprocessed metric in any process."""
    module, _, qualname = target.partition(":")
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return Preprocessed(found(**arguments), lowercase=lowercase, split_sentences=split_sentences)


#: ``build``'s place, for a ``MetricRecipe``.
BUILD_TARGET = f"{__name__}:build"
