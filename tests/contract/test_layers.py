"""The import arrows of the design run one way: cli -> pipelines -> meta_evaluation -> traces -> compare -> distributed ->
streams -> experiments -> scoring -> metrics -> metric_kit -> engines (neural -> images -> text) -> execution -> core. Engines never import opik; nothing imports the
CLI; module-level imports make no cycle. Read from the source with ast, every import counted
(those inside functions too)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ["core", "execution", "text", "images", "neural", "metric_kit", "metrics", "scoring", "experiments", "streams", "distributed", "compare",
          "traces", "meta_evaluation", "pipelines",
          "cli"]


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[0] == "pipelines":
        parts = ["opik_metrics", *parts]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    files = [*(ROOT / "opik_metrics").rglob("*.py"), *(ROOT / "pipelines").rglob("*.py")]
    return {_module_name(p): p for p in files}


def _imports(path: Path, type_only: bool = False) -> list[tuple[str, bool]]:
    """(imported module, at module level) for every import of the file, TYPE_CHECKING blocks aside
    unless ``type_only``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test) and not type_only:
                continue
            if isinstance(child, ast.Import):
                found.extend((alias.name, top) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                found.extend((f"{child.module}.{alias.name}", top) for alias in child.names)
            inner = top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            visit(child, inner)

    visit(tree, True)
    return found


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "opik_metrics" or len(parts) < 2 or parts[1] not in LAYERS:
        return None
    return LAYERS.index(parts[1])


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The project module an import names (``from a.b import c`` may name module a.b or a.b.c)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


MODULES = _modules()


def test_the_tree_is_read():
    assert "opik_metrics.metrics.bleu" in MODULES and "opik_metrics.pipelines.captioning.pipeline" in MODULES


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _layer(m) is not None))
def test_imports_point_down_the_layers(module):
    own = _layer(module)
    upward = []
    for name, _ in _imports(MODULES[module]):
        target = _resolve(name, MODULES)
        if target is not None and _layer(target) is not None and _layer(target) > own:
            upward.append(target)
    assert not upward, f"{module} ({LAYERS[own]}) imports up the layers: {sorted(set(upward))}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _layer(m) in (0, 1, 2)))
def test_engines_and_core_never_import_opik(module):
    assert not [n for n, _ in _imports(MODULES[module]) if n == "opik" or n.startswith("opik.")]


def test_nothing_imports_the_cli():
    users = {m for m in MODULES if not m.startswith(("opik_metrics.cli", "opik_metrics.__main__"))
             for name, _ in _imports(MODULES[m]) if (_resolve(name, MODULES) or "").startswith("opik_metrics.cli")}
    assert not users


def test_no_two_modules_import_each_other_anywhere():
    """Not in a function, not for type hints only: two modules that need each other are one idea
    split in two, or a missing interface."""
    uses = {m: {t for name, _ in _imports(p, type_only=True) if (t := _resolve(name, MODULES)) and t != m}
            for m, p in MODULES.items()}
    pairs = sorted({tuple(sorted((a, b))) for a, targets in uses.items() for b in targets
                    if a in uses.get(b, ()) and not b.startswith(a + ".") and not a.startswith(b + ".")})
    assert not pairs, f"modules importing each other: {pairs}"


def test_no_import_cycles_at_module_level():
    graph = {m: {t for name, top in _imports(p) if top and (t := _resolve(name, MODULES)) and t != m}
             for m, p in MODULES.items()}
    # a package's __init__ importing its own submodules is how it curates its names, not a cycle
    for m in graph:
        graph[m] = {t for t in graph[m] if not t.startswith(m + ".")}
    state: dict[str, int] = {}
    cycles = []

    def walk(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                walk(nxt, stack + [nxt])
        state[node] = 2

    for m in sorted(graph):
        if m not in state:
            walk(m, [m])
    assert not cycles, f"import cycles: {cycles[:3]}"
