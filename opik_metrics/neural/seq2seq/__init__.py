"""Encoder-decoder likelihood engines: the log-likelihood of a target given a source (BARTScore) and UniEval's first-step p(Yes)."""
