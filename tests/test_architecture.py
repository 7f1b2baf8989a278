"""The import rules of docs/architecture.md, checked on the source (every import, module- or function-level).

* The decision side (types, validation, guards, procedure, decision, audit,
  bundle, scoring) never imports onnxruntime or tokenizers, and reaches the
  engine only through a function-level import of :mod:`verifier.engine`
  (the default scorer, built lazily).
* The engine side (engine, loaded, batching, session, model_directory, golden,
  manifest, tokenization, options) never imports the rules (guards,
  procedure, decision, validation, audit, bundle).
* Nothing under ``verifier/`` imports ``verifier_export`` (or the ``export`` shim), ``bench``, torch,
  transformers or optimum.
* ``verifier_export/`` uses only the engine side of ``verifier`` (plus types and
  validation's error wording), never the decision side.
* Rooms stay small: no module of ``verifier/`` or ``verifier_export/`` over 500 lines.
* ``pip install`` ships no top-level ``export`` package (a name other packages could clash with).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

DECISION_SIDE = {
    "types", "validation", "guards", "procedure", "decision", "audit", "bundle", "scoring", "strict", "strict_text", "check",
}
ENGINE_SIDE = {
    "engine", "loaded", "batching", "session", "model_directory", "golden", "manifest", "tokenization", "options",
    "identity", "messages", "coalesce", "engine_args",
}
RULES = {"guards", "procedure", "decision", "validation", "audit", "bundle", "strict", "strict_text"}
HEAVY = {"torch", "transformers", "optimum", "export", "verifier_export", "bench"}


def _runtime_imports(path: Path, package: str) -> list[tuple[str, bool]]:
    """``(absolute module name, imported inside a function)`` for every import in ``path`` that can
    run (imports under ``if TYPE_CHECKING:`` never do and are skipped).

    ``from .x import y`` gives ``package.x``; ``from . import y`` gives ``package.y``.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[str, bool]] = []

    def absolute(node: ast.ImportFrom) -> list[str]:
        if not node.level:
            return [node.module] if node.module else []
        base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
        if node.module:
            return [f"{base}.{node.module}"]
        return [f"{base}.{alias.name}" for alias in node.names]

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and isinstance(child.test, ast.Name) and child.test.id == "TYPE_CHECKING":
                for other in child.orelse:
                    visit(other, in_function)
                continue
            if isinstance(child, ast.Import):
                found.extend((alias.name, in_function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                found.extend((name, in_function) for name in absolute(child))
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    visit(tree, False)
    return found


def _verifier_modules() -> list[Path]:
    return sorted((ROOT / "verifier").rglob("*.py"))


def _room(name: str) -> str:
    """``verifier.engine`` -> ``engine``; ``verifier.cli.verify`` -> ``cli``."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "verifier" else parts[0]


@pytest.mark.parametrize("path", _verifier_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_verifier_never_imports_export_bench_or_torch(path: Path) -> None:
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    for name, _ in _runtime_imports(path, package):
        assert name.split(".")[0] not in HEAVY, f"{path.name} imports {name}"


@pytest.mark.parametrize("room", sorted(DECISION_SIDE))
def test_decision_side_never_imports_onnxruntime_and_reaches_the_engine_lazily(room: str) -> None:
    path = ROOT / "verifier" / f"{room}.py"
    for name, in_function in _runtime_imports(path, "verifier"):
        assert name.split(".")[0] not in {"onnxruntime", "tokenizers"}, f"{room} imports {name}"
        if _room(name) == "engine":
            assert in_function, f"{room} imports the engine at module level"


@pytest.mark.parametrize("room", sorted(ENGINE_SIDE))
def test_engine_side_never_imports_the_rules(room: str) -> None:
    path = ROOT / "verifier" / f"{room}.py"
    for name, _ in _runtime_imports(path, "verifier"):
        if name.startswith("verifier."):
            assert _room(name) not in RULES, f"{room} imports {name}"


def test_export_uses_only_the_engine_side() -> None:
    allowed = ENGINE_SIDE | {"types", "validation", "argtypes"}
    for path in sorted((ROOT / "verifier_export").rglob("*.py")):
        package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
        for name, _ in _runtime_imports(path, package):
            if name.startswith("verifier.") or name == "verifier":
                assert _room(name) in allowed, f"{path.name} imports {name}"


@pytest.mark.parametrize(
    "path",
    sorted([*(ROOT / "verifier").rglob("*.py"), *(ROOT / "verifier_export").rglob("*.py")]),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_rooms_stay_small(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").count("\n")
    assert lines <= 500, f"{path.relative_to(ROOT)} has {lines} lines"


def test_the_installed_packages_are_verifier_and_verifier_export_only() -> None:
    """Regression: pip installed a top-level module named ``export``. ``python -m export`` still works in a
    checkout through the repository's thin ``export/`` shim, which is not installed."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'include = ["verifier", "verifier.*", "verifier_export", "verifier_export.*"]' in text
    shim = sorted(p.name for p in (ROOT / "export").rglob("*.py"))
    assert shim == ["__init__.py", "__init__.py", "__main__.py", "__main__.py"]
