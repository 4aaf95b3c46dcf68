"""Model-backed scoring engines (BERTScore, perplexity, distillation KL); they never import opik."""
