"""Tracked pipelines that feed ``opik.evaluate`` experiments (BLIP captioning, distillation)."""
