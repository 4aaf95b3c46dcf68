"""Read-only metadata dicts that many ScoreResults share: a batch of ROUGE results needs only a
few distinct ones (type x number of references), and one dict per result would be most of the
objects and memory the metric adds to its engine. Changing one would change them all, so it raises."""
from __future__ import annotations

from typing import Any, NoReturn


class SharedMetadata(dict):
    """A ``dict`` (JSON, ``==`` and ``isinstance`` as usual) that refuses changes: copy it first,
    ``dict(result.metadata)``, to add or change a field."""

    __slots__ = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if self:                          # ``meta.__init__(...)`` again would change it in place
            self._refuse()
        super().__init__(*args, **kwargs)

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("this metadata is shared by many ScoreResults and is read-only: "
                        "change a copy instead, e.g. result.metadata = dict(result.metadata, key=value)")

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self) -> tuple:
        return SharedMetadata, (dict(self),)

    def __copy__(self) -> "SharedMetadata":
        return self

    def __deepcopy__(self, memo: dict) -> "SharedMetadata":
        import copy
        return SharedMetadata(copy.deepcopy(dict(self), memo))
