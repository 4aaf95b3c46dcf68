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
# What each score tells a user about a captioning system (printed before the comparison).
MEANINGS = {
    "ROUGE": "word overlap with the reference (ROUGE-L: in order); 0..1, higher is better",
    "BLEU": "n-gram precision against the reference with a brevity penalty (corpus BLEU: the whole set)",
    "CIDEr-D": "agreement with the references where rare, informative words weigh most (captioning's main score)",
    "BERTScore": "meaning overlap from contextual embeddings (packaged MiniLM): paraphrases count",
    "perplexity": "how surprising the caption is to a language model (packaged SmolLM2): fluency, lower is "
                  "better; it says nothing of whether the caption is right",
}


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


def staged_failures(path: Path) -> list[int]:
    """The line numbers (from 1) that a system file marks as failures on purpose."""
    return [k + 1 for k, line in enumerate(read_lines(path)) if line.startswith(FAILURE_MARK)]


def stored_line(name: str, items: int, failed: int, path: Path, store: Path) -> str:
    """What the demo prints for a stored experiment; a failure the file stages says it is staged."""
    line = f"{name}: {items} items, {failed} failed, stored in {store}"
    staged = staged_failures(path)
    if failed and staged:
        where = ", ".join(str(k) for k in staged)
        line += (f"\n  (the failure is staged on purpose: line {where} of examples/demo/{path.name} is marked "
                 f"{FAILURE_MARK!r}, to show how a failed item is kept, counted and left out of the paired tests)")
    return line


def demo_metrics(references: list[str]) -> list[Any]:
    """The captioning metrics, on packaged models (no network); CIDEr-D's document frequencies
    come from every reference of the dataset. (Distillation KL has its own pipeline:
    ``python -m opik_metrics.pipelines.distillation``.)"""
    from opik_metrics.metrics.bertscore import BERTScore
    from opik_metrics.metrics.bleu import BLEU
    from opik_metrics.metrics.cider import CIDEr
    from opik_metrics.metrics.perplexity import Perplexity
    from opik_metrics.metrics.rouge import ROUGE

    return [ROUGE(track=False), BLEU(track=False), CIDEr(df_references=references, track=False),
            BERTScore(model="packaged:minilm", track=False), Perplexity(model="packaged:smollm2", track=False)]


def run_demo(out: Path, progress: bool = True) -> Path:
    """Both experiments, the comparison and its report under ``out``; returns the report page."""
    from opik_metrics.compare.report.summary import format_comparison
    from opik_metrics.compare.analysis import CompareSettings, compare_experiments
    from opik_metrics.compare.report.folder import write_report
    from opik_metrics.compare.reading.sources import load_experiments
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
            print(stored_line(name, summary.items, summary.failed_items, EXAMPLES / file, store.path))
        experiments = load_experiments(list(SYSTEMS), store=store)
    comparison = compare_experiments(experiments, CompareSettings(), source=f"local store {out / 'experiments.sqlite'}")
    files = write_report(comparison, out / "report")
    print("\nwhat each score tells you:")
    for name, meaning in MEANINGS.items():
        print(f"  {name:<11} {meaning}")
    print()
    print(format_comparison(comparison))
    print_publication(comparison)
    return files.html


def print_publication(comparison: Any) -> None:
    """What ``compare --publish`` would write into Opik (its dry run), in short: the experiment
    scores of the system experiment (its difference and verdict per score: the columns it adds to
    Opik's experiments page) and the dashboard; ``--dry-run`` prints all of it."""
    from opik_metrics.compare.publishing.publication import build_publication

    publication = build_publication(comparison)
    baseline, *systems = publication["experiments"]
    print("\nwhat `opik-metrics compare ... --publish` would write into Opik once both experiments are pushed "
          "(from its --dry-run):")
    for name in systems:
        scores = publication["experiments"][name]["experiment_scores"]
        print(f"  {len(scores)} experiment scores on {name} (columns of Opik's experiments page):")
        width = max((len(score) for score in scores), default=0)
        for score, value in scores.items():
            print(f"    {score:<{width}}  {value:.4g}")
    for line in publication_legend(publication, baseline).splitlines():
        print(f"  {line}")
    dashboard = publication["dashboard"]
    print(f"  none on {baseline}; the full comparison in each experiment's metadata ({publication['metadata_key']!r}, "
          f"Opik's Configuration tab);\n  the dashboard {dashboard['name']!r}: the table, a leaderboard ranked by "
          f"{dashboard['ranking_metric']}, a bar chart of the differences\n"
          "  (--publish-all-scores also publishes intervals and p-values as experiment scores)")


def publication_legend(publication: dict, baseline: str) -> str:
    """What the published names mean. A difference is scaled by a power of ten named in the name
    (``diff_x100``) so that Opik's two decimals show it: by 100 for a score declared within [-1, 1]
    (points), and by 10 more while it would round to zero; a score that declares no such bound
    (BERTScore's, which rescaling can take below -1) and whose difference already shows at two
    decimals keeps a plain ``diff`` (``publication.diff_factor``): by design, not a slip."""
    from opik_metrics.compare.publishing.publication import pair_names

    published = {name for entry in publication["experiments"].values() for name in entry["experiment_scores"]}
    plain = sorted({name.split(".diff vs ")[0] for name in published
                    if name.endswith(f".diff vs {baseline}") and name == pair_names(name.split(".diff vs ")[0],
                                                                                    baseline, 1)["diff"]})
    unscaled = (f"; plain diff: the difference as it is, for a score that declares no [-1, 1] bound and whose "
                f"difference shows at two decimals ({', '.join(plain)})" if plain else "")
    return (f"diff_xN: the difference from {baseline} (system minus baseline) times N, so that Opik's two "
            f"decimals show it (x100: points of a 0..1 score){unscaled};\np_pct: the paired test's p-value in "
            "percent; verdict: +1 better, 0 no significant difference, -1 worse, in the score's own direction")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python examples/demo/run.py", description=__doc__)
    parser.add_argument("--output", default="demo-output", help="folder for the store and the report "
                        "(default ./demo-output)")
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    print("opik-metrics demo: two captioning systems (examples/demo/system_a.txt, system_b.txt) against "
          "shared references,\nscored with ROUGE, BLEU, CIDEr-D, BERTScore (packaged MiniLM) and perplexity "
          "(packaged SmolLM2)\n")
    out = Path(args.output)
    page = run_demo(out, progress=not args.no_progress)
    print(f"\nreport: {page.resolve()}  (open it in a browser; {page.parent / 'comparison.json'} has every figure)")
    print(f"the same from the command line: opik-metrics compare {' '.join(SYSTEMS)} "
          f"--store {out / 'experiments.sqlite'} --output {out / 'report'}")
    print(f"demo finished in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
