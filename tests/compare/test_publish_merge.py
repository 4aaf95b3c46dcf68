"""Which experiment scores a publish may replace, worked out by hand: a score is ours while it holds
the value an earlier publish recorded, compared as the server stores values (9 decimals), so a
server's rounding never turns our score into someone else's, and a new plan leaves no stale name."""
from __future__ import annotations

from opik_metrics.compare.publishing.opik_publish import _merge, _Target
from opik_metrics.compare.publishing.publication import METADATA_KEY

P = 0.04995004995004995          # a p of 50/1001 in percent / 100: 17 decimals


def _plan(scores, fingerprint="f1"):
    return {"experiment_scores": scores,
            "metadata": {"fingerprint": fingerprint, "dashboard": {"name": "d"}, "published_scores": scores}}


def _target(scores, published, fingerprint="f1"):
    return _Target(name="good", id="id-good", scores=list(scores.items()),
                   metadata={"model": "good", METADATA_KEY: {"fingerprint": fingerprint, "dashboard": {"name": "d", "id": "b"},
                                                               "published_scores": published}})


def test_the_same_plan_on_values_the_server_rounded_changes_nothing():
    held = {"bleu.p_pct vs poor": 4.995004995, "bleu.verdict vs poor": 1.0, "human_rating": 0.7}
    plan = _plan({"bleu.p_pct vs poor": 4.995004995, "bleu.verdict vs poor": 1.0})
    # an earlier publish (schema 1) recorded the value at full precision; the server keeps 9 decimals, HALF_EVEN
    target = _target(held, {"bleu.p_pct vs poor": P * 100, "bleu.verdict vs poor": 1.0})
    scores, metadata, kept = _merge(target, plan, {"id": "b"})
    assert kept == {}                                                     # none of ours is called someone else's
    assert dict(scores) == dict(target.scores)                            # left as the server holds it: no write
    assert metadata[METADATA_KEY]["published_scores"] == plan["experiment_scores"]
    assert metadata["model"] == "good"


def test_values_that_differ_only_after_the_ninth_decimal_are_the_same():
    value = 0.1234567891
    target = _target({"x.diff vs b": 0.123456789}, {"x.diff vs b": value})
    scores, _, kept = _merge(target, _plan({"x.diff vs b": 0.123456789}), {"id": "b"})
    assert kept == {} and scores == [("x.diff vs b", 0.123456789)]


def test_a_new_plan_removes_our_names_it_no_longer_has_and_keeps_changed_ones():
    published = {"bleu.ci_low": 0.1, "bleu.ci_high": 0.3, "bleu.p_pct vs poor": 1.2, "latency.ci_low": 4.0}
    held = {**published, "latency.ci_low": 4.5, "human_rating": 0.7}       # latency.ci_low changed by someone
    plan = _plan({"bleu.diff_x100 vs poor": 12.5, "bleu.verdict vs poor": 1.0}, fingerprint="f2")
    scores, metadata, kept = _merge(_target(held, published), plan, {"id": "b"})
    assert dict(scores) == {"latency.ci_low": 4.5, "human_rating": 0.7, "bleu.diff_x100 vs poor": 12.5,
                            "bleu.verdict vs poor": 1.0}
    assert kept == {} and metadata[METADATA_KEY]["fingerprint"] == "f2"


def test_a_name_someone_else_holds_with_another_value_is_kept_and_said():
    target = _target({"bleu.verdict vs poor": 0.123}, {})
    scores, metadata, kept = _merge(target, _plan({"bleu.verdict vs poor": 1.0}), {"id": "b"})
    assert scores == [("bleu.verdict vs poor", 0.123)] and kept == {"bleu.verdict vs poor": [0.123, 1.0]}
    assert metadata[METADATA_KEY]["published_scores"] == {}
    assert metadata[METADATA_KEY]["kept_existing_scores"] == kept
