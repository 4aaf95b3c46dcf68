"""Language-model engines: perplexity, teacher-student KL, the distillation loss, and their corpus formulas."""
