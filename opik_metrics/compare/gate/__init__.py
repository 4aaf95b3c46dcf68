"""The CI regression gate: its decision rules, the gate over a comparison, its outputs (Markdown, JUnit)."""
