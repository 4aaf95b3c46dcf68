"""Packages of the wheel: opik_metrics, and the repo's top-level pipelines/ folder mapped to
opik_metrics.pipelines; opik_metrics/py.typed tells type checkers that the package is typed (PEP 561).
pyproject.toml holds everything else."""
from setuptools import find_packages, setup

PIPELINES = ["opik_metrics.pipelines"] + [f"opik_metrics.pipelines.{p}" for p in find_packages("pipelines")]

setup(packages=find_packages(include=["opik_metrics", "opik_metrics.*"]) + PIPELINES,
      package_dir={"opik_metrics.pipelines": "pipelines"},
      package_data={"opik_metrics": ["py.typed"]})
