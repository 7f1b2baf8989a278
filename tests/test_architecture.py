"""The import rules of docs/architecture.md, checked on the source (every import, module- or function-level).

Layers of ``verifier/``:

* the **contract** (``types``, ``options``, ``validation``, ``messages``,
  ``scoring``, ``argtypes``, ``strictjson``, ``fields``) imports only itself;
* the **engine** (``verifier/engine/``) imports the contract and itself, never
  the decision layer, the facade or a surface;
* the **decision** layer (``verifier/decision/``) imports the contract and
  itself, never the engine, onnxruntime or tokenizers;
* the **facade** (``verifier/__init__.py``, ``claim_verifier``) may import
  both, the scorer (``verifier.engine.scorer``) only inside a function;
* **surfaces** (``cli``, ``serve`` with ``jsonbody``, ``assay``, ``distributed``, ``rows``, ``envelopes``,
  ``__main__``) may import anything in ``verifier``.

Also: nothing under ``verifier/`` imports ``verifier_export`` (or the
``export`` shim), ``bench``, torch, transformers or optimum; ``verifier_export/``
uses only the contract and the engine; ``bench/`` measures through the library,
never through the CLI package; no import circle among the modules of
``verifier/`` (lazy imports and the implicit import of a parent package
included); no module over 500 lines and no class over 300 lines.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[1]

CONTRACT = {"types", "fields", "options", "validation", "messages", "scoring", "argtypes", "strictjson", "small_files", "clash",
            "engine_identity"}
FACADE = {"", "claim_verifier", "grounding"}  # "" is verifier/__init__.py
SURFACES = {"cli", "serve", "jsonbody", "assay", "distributed", "cluster_identity", "rows", "envelopes", "__main__"}
HEAVY = {"torch", "transformers", "optimum", "export", "verifier_export", "bench"}
MAX_MODULE_LINES = 500
MAX_CLASS_LINES = 300


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _package_of(path: Path) -> str:
    name = _module_name(path)
    return name if path.name == "__init__.py" else name.rsplit(".", 1)[0]


def _imports(path: Path) -> list[tuple[str, bool]]:
    """``(absolute module name, imported inside a function)`` for every import in ``path`` that can run.

    Imports under ``if TYPE_CHECKING:`` never run and are skipped. ``from .x import y`` gives
    ``package.x.y`` when that is a module of the tree, else ``package.x``.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = _package_of(path)
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and isinstance(child.test, ast.Name) and child.test.id == "TYPE_CHECKING":
                for other in child.orelse:
                    visit(other, in_function)
                continue
            if isinstance(child, ast.Import):
                found.extend((alias.name, in_function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package
                    for _ in range(child.level - 1):
                        base = base.rsplit(".", 1)[0]
                    module = f"{base}.{child.module}" if child.module else base
                else:
                    module = child.module or ""
                for alias in child.names:
                    candidate = f"{module}.{alias.name}"
                    found.append((candidate if candidate in _ALL_MODULES else module, in_function))
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    visit(tree, False)
    return found


def _sources(*roots: str) -> list[Path]:
    return sorted(path for root in roots for path in (ROOT / root).rglob("*.py"))


_ALL_MODULES = {_module_name(path) for path in _sources("verifier", "verifier_export")}


def _layer(module: str) -> str:
    """``verifier.engine.batching`` -> ``engine``; ``verifier.types`` -> ``contract``; ..."""
    parts = module.split(".")
    if parts[0] != "verifier":
        return "outside"
    first = parts[1] if len(parts) > 1 else ""
    if first in ("engine", "decision"):
        return first
    if first in CONTRACT:
        return "contract"
    if first in FACADE:
        return "facade"
    if first in SURFACES:
        return "surface"
    raise AssertionError(f"{module} belongs to no layer: add it to one in tests/test_architecture.py and docs/architecture.md")


def _ids(path: Path) -> str:
    return str(path.relative_to(ROOT))


VERIFIER = _sources("verifier")


@pytest.mark.parametrize("path", VERIFIER, ids=_ids)
def test_every_module_belongs_to_a_layer(path: Path) -> None:
    assert _layer(_module_name(path)) != "outside"


@pytest.mark.parametrize("path", VERIFIER, ids=_ids)
def test_verifier_never_imports_export_bench_or_torch(path: Path) -> None:
    for name, _ in _imports(path):
        assert name.split(".")[0] not in HEAVY, f"{_ids(path)} imports {name}"


ALLOWED = {
    "contract": {"contract"},
    "engine": {"contract", "engine"},
    "decision": {"contract", "decision"},
    "facade": {"contract", "engine", "decision", "facade"},
    "surface": {"contract", "engine", "decision", "facade", "surface"},
}


@pytest.mark.parametrize("path", VERIFIER, ids=_ids)
def test_layers_import_only_what_they_may(path: Path) -> None:
    layer = _layer(_module_name(path))
    for name, _ in _imports(path):
        if name.split(".")[0] == "verifier":
            assert _layer(name) in ALLOWED[layer], f"{_ids(path)} ({layer}) imports {name} ({_layer(name)})"


@pytest.mark.parametrize("path", _sources("verifier/decision") + [ROOT / "verifier/scoring.py"], ids=_ids)
def test_decision_never_imports_onnxruntime_or_tokenizers(path: Path) -> None:
    for name, _ in _imports(path):
        assert name.split(".")[0] not in {"onnxruntime", "tokenizers"}, f"{_ids(path)} imports {name}"


@pytest.mark.parametrize("path", [ROOT / "verifier/__init__.py", ROOT / "verifier/claim_verifier.py"], ids=_ids)
def test_the_facade_builds_the_onnx_scorer_only_on_first_need(path: Path) -> None:
    for name, in_function in _imports(path):
        assert name.split(".")[0] not in {"onnxruntime", "tokenizers"}, f"{_ids(path)} imports {name}"
        if name in {"verifier.engine.scorer", "verifier.engine.coalesce"}:
            assert in_function, f"{_ids(path)} imports {name} at module level"


def test_export_uses_only_the_contract_and_the_engine() -> None:
    for path in _sources("verifier_export"):
        for name, _ in _imports(path):
            if name.split(".")[0] == "verifier":
                assert _layer(name) in {"contract", "engine"}, f"{_ids(path)} imports {name}"


def test_bench_measures_through_the_library_not_the_cli_package() -> None:
    for path in _sources("bench"):
        for name, _ in _imports(path):
            assert not name.startswith("verifier.cli"), f"{_ids(path)} imports {name}"


def _graph() -> dict[str, set[str]]:
    """Module -> modules whose code its imports run: the target and the target's parent packages'
    ``__init__`` (except the importer's own ancestors, which Python has always started first)."""
    graph: dict[str, set[str]] = {}
    for path in VERIFIER:
        module = _module_name(path)
        ancestors = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)}
        edges = graph.setdefault(module, set())
        for name, _ in _imports(path):
            if name.split(".")[0] != "verifier":
                continue
            target = name
            while target not in _ALL_MODULES and "." in target:
                target = target.rsplit(".", 1)[0]
            parts = target.split(".")
            edges.update(".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) not in ancestors)
            edges.add(target)
        edges.discard(module)
    return graph


def _cycles(graph: dict[str, set[str]]) -> Iterator[list[str]]:
    """One circle through each strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    counter = [0]

    def connect(node: str) -> Iterator[list[str]]:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                yield from connect(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                yield sorted(component)

    for node in sorted(graph):
        if node not in index:
            yield from connect(node)


def test_no_import_circles_lazy_or_not() -> None:
    circles = list(_cycles(_graph()))
    assert not circles, f"import circles: {circles}"


def test_the_circle_finder_finds_a_lazy_circle() -> None:
    """The check above must be able to fail: a two-module circle and a circle through a parent package."""
    assert list(_cycles({"a": {"b"}, "b": {"a"}})) == [["a", "b"]]
    assert list(_cycles({"p": {"p.x"}, "p.x": {"q"}, "q": {"p"}})) == [["p", "p.x", "q"]]
    assert list(_cycles({"a": {"b"}, "b": set()})) == []


SIZED = _sources("verifier", "verifier_export")


@pytest.mark.parametrize("path", SIZED, ids=_ids)
def test_rooms_stay_small(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    lines = text.count("\n")
    assert lines <= MAX_MODULE_LINES, f"{_ids(path)} has {lines} lines"
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ClassDef):
            size = (node.end_lineno or node.lineno) - node.lineno + 1
            assert size <= MAX_CLASS_LINES, f"{_ids(path)}: class {node.name} has {size} lines"


def test_the_installed_packages_are_verifier_verifier_export_and_the_export_shim() -> None:
    """Regression (issue 34): ``python -m export``, the documented command, failed after ``pip install``
    (``No module named export``): the thin ``export/`` shim is installed too, and stays two files a level."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'include = ["verifier", "verifier.*", "verifier_export", "verifier_export.*", "export", "export.*"]' in text
    shim = sorted(p.name for p in (ROOT / "export").rglob("*.py"))
    assert shim == ["__init__.py", "__init__.py", "__main__.py", "__main__.py"]


def test_every_package_of_verifier_is_a_regular_package() -> None:
    """Regression: ``verifier/engine`` without ``__init__.py`` imported as a namespace package, which
    setuptools' package finder would not install."""
    for folder in sorted({path.parent for path in VERIFIER}):
        assert (folder / "__init__.py").is_file(), f"{folder.relative_to(ROOT)} has no __init__.py"
