"""Pure-Python text scoring engines (tokenisers, ROUGE, BLEU): no torch, no opik."""
