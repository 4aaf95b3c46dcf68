"""SharedMetadata: a dict in every way a reader sees, and refuses every change."""
import copy
import dataclasses
import json
import pickle

import pytest

from opik_metrics.metric_kit.base import ScoreResult
from opik_metrics.metric_kit.shared_metadata import SharedMetadata


def test_reads_like_the_dict_it_holds():
    meta = SharedMetadata(signature="s", n_references=2)
    assert meta == {"signature": "s", "n_references": 2} and isinstance(meta, dict)
    assert json.loads(json.dumps(meta)) == {"signature": "s", "n_references": 2}
    assert dict(meta, extra=1) == {"signature": "s", "n_references": 2, "extra": 1}
    assert (meta | {"extra": 1}) == {"signature": "s", "n_references": 2, "extra": 1}


@pytest.mark.parametrize("change", [
    lambda m: m.__setitem__("k", 1), lambda m: m.__delitem__("signature"), lambda m: m.update(k=1),
    lambda m: m.setdefault("k", 1), lambda m: m.pop("signature"), lambda m: m.popitem(), lambda m: m.clear(),
    lambda m: m.__ior__({"k": 1}), lambda m: m.__init__(k=1)])
def test_every_change_is_refused_and_nothing_changes(change):
    meta = SharedMetadata(signature="s")
    with pytest.raises(TypeError, match="shared by many ScoreResults"):
        change(meta)
    assert meta == {"signature": "s"}


def test_copies_and_pickles_keep_content_and_kind():
    meta = SharedMetadata(signature="s", nested=[1, 2])
    for twin in (pickle.loads(pickle.dumps(meta)), copy.deepcopy(meta)):
        assert twin == meta and type(twin) is SharedMetadata and twin is not meta
    assert copy.deepcopy(meta)["nested"] is not meta["nested"]
    assert copy.copy(meta) is meta                     # nothing can change it: a copy would be the same
    result = ScoreResult("x", 1.0, None, None, meta)
    assert dataclasses.asdict(result)["metadata"] == {"signature": "s", "nested": [1, 2]}
