"""UniEval (Zhong et al. 2022) as its released code computes it (maszhongming/UniEval ``utils.add_question``,
``metric/scorer.py``, ``metric/evaluator.py``): a Boolean question per dimension put to a T5 evaluator,
the score p(Yes) / (p(Yes) + p(No)) from the softmax at the first decoder step; consistency, fluency
(and the fact task's consistency) averaged over the output's sentences, dialogue engagingness summed
over them."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from opik_metrics.core.signature import Signature
from opik_metrics.neural.models.seq2seq_lm import Seq2SeqLM
from opik_metrics.neural.seq2seq.likelihood import encode, first_step_probabilities
from opik_metrics.text.tokenizers.sentences import english_sentence_splitter

UNTRAINED_PUNKT_WARNING = (
    "UniEval: nltk's English Punkt model is not installed (python -m nltk.downloader punkt_tab); "
    "sentences are split by untrained Punkt, which also splits after abbreviations such as 'Dr.', "
    "so consistency and fluency can differ from UniEval's")

#: task -> dimension -> (the question's parts after the output: "source", "reference" or "context"; per sentence: mean/sum/None)
DIMENSIONS: dict[str, dict[str, tuple[str, tuple[str, ...], str | None]]] = {
    "summarization": {
        "coherence": ("question: Is this a coherent summary to the document? </s> summary: ",
                      ("document: source",), None),
        "consistency": ("question: Is this claim consistent with the document? </s> claim: ",
                        ("document: source",), "mean"),
        "fluency": ("question: Is this a fluent paragraph? </s> paragraph: ", (), "mean"),
        "relevance": ("question: Is this summary relevant to the reference? </s> summary: ",
                      ("reference: reference",), None),
    },
    "dialogue": {
        "naturalness": ("question: Is this a natural response in the dialogue? </s> response: ", (), None),
        "coherence": ("question: Is this a coherent response given the dialogue history? </s> response: ",
                      ("dialogue history: source",), None),
        "engagingness": ("question: Is this an engaging and informative response according to the dialogue "
                         "history and fact? </s> response: ", ("dialogue history: source", "fact: context"), "sum"),
        "groundedness": ("question: Is this response consistent with knowledge in the fact? </s> response: ",
                         ("fact: context",), None),
        "understandability": ("question: Is this an understandable response in the dialogue? </s> response: ",
                              (), None),
    },
    "data2text": {
        "naturalness": ("question: Is this a fluent utterance? </s> utterance: ", (), None),
        "informativeness": ("question: Is this sentence informative according to the reference? </s> sentence: ",
                            ("reference: reference",), None),
    },
    "fact": {
        "consistency": ("question: Is this claim consistent with the document? </s> claim: ",
                        ("document: source",), "mean"),
    },
}
#: The evaluator each task's released code loads.
CHECKPOINTS = {"summarization": "MingZhong/unieval-sum", "dialogue": "MingZhong/unieval-dialog",
               "data2text": "MingZhong/unieval-sum", "fact": "MingZhong/unieval-fact"}


def question(task: str, dimension: str, output: str, parts: dict[str, str]) -> str:
    """The Boolean-QA input of one output (``add_question``'s text for this task and dimension)."""
    head, needs, _ = DIMENSIONS[task][dimension]
    text = head + output
    for part in needs:
        label, _, field = part.partition(": ")
        text += f" </s> {label}: " + parts[field]
    return text


def inputs_needed(task: str, dimensions: Sequence[str]) -> set[str]:
    """Which of source, reference, context the dimensions read."""
    return {part.partition(": ")[2] for d in dimensions for part in DIMENSIONS[task][d][1]}


@dataclass(frozen=True)
class ItemUniEval:
    """Each dimension's score of one item, and how many sentences each was averaged over (1: not split)."""

    scores: dict[str, float]
    sentences: dict[str, int]
    truncated: tuple[str, ...] = ()     # the dimensions whose question was cut at the model's limit


class UniEvalEngine:
    """Scores items in the asked dimensions with one T5 evaluator; knows nothing of Opik."""

    def __init__(self, lm: Seq2SeqLM, task: str, dimensions: Sequence[str], batch_size: int | None = None) -> None:
        self.lm, self.task, self.dimensions, self.batch_size = lm, task, tuple(dimensions), batch_size
        self.split, self.splitter = english_sentence_splitter(UNTRAINED_PUNKT_WARNING)
        tok = lm.tokenizer
        self.yes, self.no = tok("Yes")["input_ids"][0], tok("No")["input_ids"][0]   # as scorer.py picks them

    @property
    def signature(self) -> Signature:
        return self.lm.signature.extended(task=self.task, dims="+".join(self.dimensions), sentences=self.splitter,
                                          max_len=self.lm.max_length)

    def score(self, outputs: Sequence[str], parts: Sequence[dict[str, str]], progress: bool | None = None) -> list[ItemUniEval]:
        """One ItemUniEval per output; ``parts[i]`` holds output i's source / reference / context."""
        texts: list[str] = []
        owners: list[tuple[int, str]] = []
        for k, (output, item_parts) in enumerate(zip(outputs, parts)):
            for dim in self.dimensions:
                per_sentence = DIMENSIONS[self.task][dim][2]
                pieces = self.split(output) if per_sentence else [output]
                for piece in pieces or [output]:      # an empty output is asked about as it is
                    texts.append(question(self.task, dim, piece, item_parts))
                    owners.append((k, dim))
        encoded = encode(self.lm, texts)
        cut: list[set[str]] = [set() for _ in outputs]
        for (k, dim), was_cut in zip(owners, encoded.truncated):
            if was_cut:
                cut[k].add(dim)
        probs = first_step_probabilities(self.lm, encoded.ids, (self.yes, self.no),
                                         batch_size=self.batch_size, desc="UniEval", progress=progress)
        sums: list[dict[str, float]] = [{} for _ in outputs]
        counts: list[dict[str, int]] = [{} for _ in outputs]
        for (k, dim), (yes, no) in zip(owners, probs):
            sums[k][dim] = sums[k].get(dim, 0.0) + yes / (yes + no)
            counts[k][dim] = counts[k].get(dim, 0) + 1
        out = []
        for k in range(len(outputs)):
            scores = {d: sums[k][d] / counts[k][d] if DIMENSIONS[self.task][d][2] != "sum" else sums[k][d]
                      for d in self.dimensions}
            out.append(ItemUniEval(scores, counts[k], tuple(d for d in self.dimensions if d in cut[k])))
        return out
