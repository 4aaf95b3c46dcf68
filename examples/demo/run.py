"""``make demo``: the whole pack offline. Two captioning systems are scored against shared
references as two experiments in a local store, with every metric on packaged models; then the
comparison report (intervals, significance, plots) is written and summarised.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Callable

EXAMPLES = Path(__file__).resolve().parent   # the demo's texts sit beside this script
SYSTEMS = {"demo-system-a": "system_a.txt", "demo-system-b": "system_b.txt"}
DATASET = "opik-metrics-demo"
FAILURE_MARK = "!error:"     # a system line starting with this records that the system failed there
STUDENT_LAYERS = 20          # the KL student: SmolLM2's first 20 of 30 layers, undistilled


class SystemFailure(RuntimeError):
    """The system produced no output for this item (marked in its file)."""


def read_lines(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines:
        raise ValueError(f"{path}: no lines")
    return lines


def demo_items() -> list[dict]:
    """One dataset item per reference line (no "id" field: Opik reserves it for its own item ids)."""
    return [{"line": k + 1, "reference": ref} for k, ref in enumerate(read_lines(EXAMPLES / "references.txt"))]


def system_task(path: Path, n_items: int) -> Callable[[dict], dict]:
    """A task that answers each item with the system's line for it (a failure where marked)."""
    outputs = read_lines(path)
    if len(outputs) != n_items:
        raise ValueError(f"{path}: {len(outputs)} lines for {n_items} references")

    def task(item: dict) -> dict:
        line = outputs[item["line"] - 1]
        if line.startswith(FAILURE_MARK):
            raise SystemFailure(line[len(FAILURE_MARK):].strip())
        return {"output": line}

    return task


def demo_metrics(references: list[str]) -> list[Any]:
    """Every text metric of the pack, on packaged models (no network); CIDEr-D's document
    frequencies come from every reference of the dataset."""
    from opik_metrics.metrics.bertscore import BERTScore
    from opik_metrics.metrics.bleu import BLEU
    from opik_metrics.metrics.cider import CIDEr
    from opik_metrics.metrics.distillation import DistillationKL
    from opik_metrics.metrics.perplexity import Perplexity
    from opik_metrics.metrics.rouge import ROUGE
    from opik_metrics.neural.models.causal_lm import load_causal_lm

    smollm2 = load_causal_lm("packaged:smollm2")
    return [ROUGE(track=False), BLEU(track=False), CIDEr(df_references=references, track=False),
            BERTScore(model="packaged:minilm", track=False),
            Perplexity(model=smollm2, track=False),
            DistillationKL(teacher=smollm2, student=truncated(smollm2, STUDENT_LAYERS), temperature=2.0, track=False)]


def truncated(teacher: Any, layers: int) -> Any:
    """The teacher's first ``layers`` layers as a student CausalLM (what distillation starts from)."""
    from opik_metrics.pipelines.distillation.student import truncated_student

    from opik_metrics.neural.models.causal_lm import CausalLM

    return CausalLM.from_objects(truncated_student(teacher, layers).eval(), teacher.tokenizer,
                                 name=f"{teacher.name} (first {layers} layers)")


def run_demo(out: Path, progress: bool = True) -> Path:
    """Both experiments, the comparison and its report under ``out``; returns the report page."""
    from opik_metrics.compare.summary import format_comparison
    from opik_metrics.compare.analysis import CompareSettings, compare_experiments
    from opik_metrics.compare.report import write_report
    from opik_metrics.compare.sources import load_experiments
    from opik_metrics.experiments.runner import run_experiment
    from opik_metrics.experiments.store import ExperimentStore

    items = demo_items()
    metrics = demo_metrics([item["reference"] for item in items])
    out.mkdir(parents=True, exist_ok=True)
    with ExperimentStore(out / "experiments.sqlite") as store:
        for name, file in SYSTEMS.items():
            summary = run_experiment(name, items, system_task(EXAMPLES / file, len(items)), metrics,
                                     dataset_name=DATASET, store=store, overwrite=True, progress=progress,
                                     config={"model": f"examples/demo/{file}", "system": file})
            print(f"{name}: {summary.items} items, {summary.failed_items} failed, stored in {store.path}")
        experiments = load_experiments(list(SYSTEMS), store=store)
    comparison = compare_experiments(experiments, CompareSettings(), source=f"local store {out / 'experiments.sqlite'}")
    files = write_report(comparison, out / "report")
    print()
    print(format_comparison(comparison))
    print_publication(comparison)
    return files.html


def print_publication(comparison: dict, shown: int = 10) -> None:
    """What ``compare --publish`` would write into Opik (its dry run), in short: the first scores
    of the system experiment; ``--dry-run`` prints all of it."""
    from opik_metrics.compare.publication import build_publication

    publication = build_publication(comparison)
    baseline, *systems = publication["experiments"]
    print("\nwhat `opik-metrics compare ... --publish` would write into Opik once both experiments are pushed "
          "(from its --dry-run):")
    for name in systems:
        scores = publication["experiments"][name]["experiment_scores"]
        print(f"  experiment scores of {name}:")
        for score, value in list(scores.items())[:shown]:
            print(f"    {score:<40} {value:.4g}")
        print(f"    ... {len(scores) - shown} more")
    print(f"  and {len(publication['experiments'][baseline]['experiment_scores'])} on {baseline} (intervals), the full "
          f"comparison in each experiment's metadata ({publication['metadata_key']!r}), the dashboard "
          f"{publication['dashboard']['name']!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python examples/demo/run.py", description=__doc__)
    parser.add_argument("--output", default="demo-output", help="folder for the store and the report "
                        "(default ./demo-output)")
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    print("opik-metrics demo: two captioning systems (examples/demo/system_a.txt, system_b.txt) against "
          "shared references,\nscored with ROUGE, BLEU, CIDEr-D, BERTScore (packaged MiniLM), perplexity and "
          "distillation KL (packaged SmolLM2)\n")
    out = Path(args.output)
    page = run_demo(out, progress=not args.no_progress)
    print(f"\nreport: {page.resolve()}  (open it in a browser; {page.parent / 'comparison.json'} has every figure)")
    print(f"the same from the command line: opik-metrics compare {' '.join(SYSTEMS)} "
          f"--store {out / 'experiments.sqlite'} --output {out / 'report'}")
    print(f"demo finished in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
