"""English stopwords for ROUGE's ``remove_stopwords`` option (like ROUGE-1.5.5's ``-s``)."""
from __future__ import annotations

#: Common English function words (articles, pronouns, auxiliaries, prepositions, conjunctions,
#: determiners, frequent adverbs). Lowercase, letters only, as the tokenizers emit them.
ENGLISH_STOPWORDS: frozenset[str] = frozenset(
    """
    a about above after again against all almost along already also although always am among
    an and another any anyone anything are around as at
    be became because become been before being below between both but by
    can cannot could
    did do does doing done down during
    each either else enough etc even ever every
    few for from further
    had has have having he her here hers herself him himself his how however
    i if in into is it its itself
    just
    least less let like
    many may me might more most much must my myself
    neither never no nor not now
    of off often on once one only onto or other others otherwise ought our ours ourselves out
    over own
    per perhaps please
    quite
    rather
    same several shall she should since so some such
    than that the their theirs them themselves then there therefore these they this those
    though through thus to together too toward towards
    under until up upon us
    very via
    was we well were what whatever when whenever where whereas wherever whether which while
    who whoever whom whose why will with within without would
    yet you your yours yourself yourselves
    """.split()
)
