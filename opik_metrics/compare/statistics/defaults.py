"""The bootstrap's defaults, apart from its numpy code so that the command line reads them cheaply."""

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 12345  # sacrebleu's default SACREBLEU_SEED
DEFAULT_CONFIDENCE = 0.95

# Upper bounds of the work one command may ask for, refused (a usage error) before any work: a bootstrap
# interval's percentiles settle long before 100,000 resamples, a p-value's last digit before 1,000,000
# permutations, and a number typed with three zeros too many must not run for days or fill memory.
MAX_RESAMPLES = 100_000
MAX_PERMUTATIONS = 1_000_000
# The bootstrap's index draw holds resamples x items indices at once (int32: 4 bytes each): 1 GB at most.
MAX_RESAMPLED_INDICES = 250_000_000


def bounded_count(name: str, value: object, bound: int) -> str | None:
    """Why ``value`` is no count of ``name`` between 1 and ``bound`` (None when it is one)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return f"{name}: expected a positive integer, got {value!r}"
    if value > bound:
        return f"{name}: {value:,} is more than the most allowed, {bound:,}"
    return None


def seed_and_confidence_problem(seed: object, confidence: object) -> str | None:
    """Why ``seed`` is no integer >= 0 or ``confidence`` no number strictly between 0 and 1 (None when both are)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        return f"seed: expected an integer >= 0, got {seed!r}"
    if not isinstance(confidence, (int, float)) or not 0.0 < float(confidence) < 1.0:
        return f"confidence: expected a number between 0 and 1, got {confidence!r}"
    return None
