"""BERTScore engine: bert_score 0.3.13's numbers on transformers (idf, baselines, several references, explain)."""
