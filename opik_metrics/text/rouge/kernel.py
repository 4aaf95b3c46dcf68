"""A picklable recipe of a RougeScorer that scores slices of a batch into one float array: what worker
processes run for a large batch (each builds the scorer once, and hands back one compact array)."""
from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from opik_metrics.text.rouge.scorer import RougeScorer

if TYPE_CHECKING:
    import numpy as np


class RougeKernel:
    """``kernel(outputs, references)``: P, R, F of each type for each item, a row per item, in order
    (``RougeScorer.values_many``); references are checked lists of str."""

    def __init__(self, rouge_types: Sequence[str], options: Mapping[str, Any]) -> None:
        self.rouge_types, self.options = tuple(rouge_types), dict(options)
        self._scorer: RougeScorer | None = None

    @classmethod
    def of(cls, rouge_types: Sequence[str], options: Mapping[str, Any]) -> "RougeKernel | None":
        """The kernel, or None when its options cannot travel to another process (a custom
        tokenizer that does not pickle, such as a lambda)."""
        kernel = cls(rouge_types, options)
        try:
            pickle.dumps(kernel)
        except Exception:  # any pickling failure: the batch stays in this process
            return None
        return kernel

    def __reduce__(self) -> tuple:
        return (RougeKernel, (self.rouge_types, self.options))

    def __call__(self, outputs: Sequence[str], references: Sequence[list[str]]) -> "np.ndarray":
        if self._scorer is None:
            self._scorer = RougeScorer(self.rouge_types, **self.options)
        return self._scorer.values_many(list(outputs), list(references))
