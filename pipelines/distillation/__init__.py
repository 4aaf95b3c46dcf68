"""Knowledge distillation: train a small student on a teacher's softened outputs, then one experiment
per model (perplexity, teacher-student KL, ROUGE) on held-out text."""
