"""Teacher and student must share a tokenizer and vocabulary, or token-level KL compares
unrelated distributions; this check says exactly what differs.
"""
from __future__ import annotations

from opik_metrics.neural.models.causal_lm import CausalLM


class VocabularyMismatchError(ValueError):
    """Teacher and student do not share a tokenizer/vocabulary."""


def require_shared_vocabulary(teacher: CausalLM, student: CausalLM) -> None:
    """Raise VocabularyMismatchError unless both give logits over the same token ids."""
    who = f"teacher {teacher.name!r} and student {student.name!r}"
    if teacher.vocab_size != student.vocab_size:
        raise VocabularyMismatchError(
            f"{who} do not share a vocabulary: the teacher gives {teacher.vocab_size} logits per "
            f"token, the student {student.vocab_size}"
        )
    tv, sv = teacher.tokenizer.get_vocab(), student.tokenizer.get_vocab()
    if tv != sv:
        differ = sorted(set(tv.items()) ^ set(sv.items()), key=lambda kv: kv[1])
        example = differ[0] if differ else None
        raise VocabularyMismatchError(
            f"{who} do not share a tokenizer: vocabularies of {len(tv)} and {len(sv)} tokens differ "
            f"in {len(differ)} (token, id) pairs, e.g. {example!r}"
        )
    if teacher.bos_token_id != student.bos_token_id:
        raise VocabularyMismatchError(
            f"{who} use different start tokens (ids {teacher.bos_token_id} and {student.bos_token_id})"
        )
