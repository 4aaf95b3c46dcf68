"""The bootstrap's defaults, apart from its numpy code so that the command line reads them cheaply."""

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 12345  # sacrebleu's default SACREBLEU_SEED
DEFAULT_CONFIDENCE = 0.95
