"""Whether each side of a compared score says how it was made: a score whose metric records no
signature on one side (removed from a record header, or never written) has unknown options, so its
two numbers are not known to be one measurement, and the gate treats it as made differently.
"""
from __future__ import annotations

from typing import Any, Mapping

from opik_metrics.compare.reading.records import recorded_facts

#: How each side is shown in the difference.
SIGNED, UNSIGNED = "recorded", "none recorded"


def _signing(score: str, config: Any) -> tuple[bool, bool]:
    """(whether the metric that gave ``score`` is one of the pack's, whether it records a signature)."""
    for facts in recorded_facts(config).values():
        if facts.score(score) is not None:
            return facts.kind.startswith("opik_metrics."), facts.signature is not None
    return False, False


def unsigned_difference(score: str, baseline_config: Mapping[str, Any] | Any,
                        system_config: Mapping[str, Any] | Any) -> dict[str, tuple[Any, Any]]:
    """``{"signature": (baseline's, system's)}`` when a side records no signature for ``score``'s
    metric while the other side does, or the metric is one of the pack's (each of which signs its
    scores); empty when both sign (their fields are compared elsewhere) or neither metric states one
    (a user's own metric without a signature)."""
    base_pack, base = _signing(score, baseline_config)
    system_pack, system = _signing(score, system_config)
    if base == system and (base or not (base_pack or system_pack)):
        return {}
    return {"signature": (SIGNED if base else UNSIGNED, SIGNED if system else UNSIGNED)}
