"""What the docs say about the code is what the code does.

Regressions: bench/README.md called span attention an opt-in with default
``stock`` while ``python -m export --help`` (and the code) default to span;
tests/data's README named ``export.testmodels…`` where the module is
``verifier_export.testmodels``; the ``bench.profile`` example needed a build
it did not mention, and its error did not say how to make it; the README's
extra-install line (``pip install -e ".[server]"``) printed setuptools'
banner about same-named folders (the set-up script keeps it out).
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_span_attention_is_the_export_default_and_the_docs_say_so() -> None:
    from verifier_export.__main__ import build_parser
    from verifier_export.pipeline import export_model, export_smoke

    assert inspect.signature(export_model).parameters["attention"].default == "span"
    assert inspect.signature(export_smoke).parameters["attention"].default == "span"
    help_text = " ".join(build_parser().format_help().split())
    assert "or stock (transformers') (default: span)" in help_text
    bench = " ".join((ROOT / "bench" / "README.md").read_text(encoding="utf-8").split())
    assert "default `stock`" not in bench and "It is an opt-in of the export" not in bench
    assert "It is now the export's default: `python -m export`" in bench


def test_the_tokenizer_readme_names_the_real_module() -> None:
    import verifier_export.testmodels as testmodels

    assert callable(testmodels.real_tokenizer_dir)
    for path in (ROOT / "tests" / "data" / "deberta-v3-tokenizer" / "README.md", ROOT / "bench" / "README.md"):
        text = path.read_text(encoding="utf-8")
        named = re.findall(r"`((?:verifier_)?export\.testmodels\.\w+)", text)
        assert named and all(name.startswith("verifier_export.testmodels.") for name in named), (path, named)


def test_the_profile_example_says_what_builds_its_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bench.profile import main

    readme = (ROOT / "bench" / "README.md").read_text(encoding="utf-8")
    example = readme[: readme.index(".venv/bin/python -m bench.profile models/bench-deberta-v3-base-random/onnx-span/")]
    assert example.rstrip().splitlines()[-1] == (
        "# onnx-span/ is made by `.venv/bin/python -m bench build --span` (onnx/, the stock graph, by `bench build`)"
    )
    missing = tmp_path / "models" / "bench-deberta-v3-base-random" / "onnx-span" / "model.onnx"
    assert main([str(missing)]) == 2
    assert capsys.readouterr().err == (
        f"python -m bench.profile: {missing} is not a file; the benchmark model's span-sliced export is made by "
        "`.venv/bin/python -m bench build --span`\n"
    )


def test_documented_install_lines_use_the_set_up_script() -> None:
    for path in (ROOT / "README.md", ROOT / "bench" / "README.md", *(ROOT / "docs").glob("*.md")):
        text = path.read_text(encoding="utf-8")
        assert "pip install -e" not in text, path
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "`bash scripts/setup.sh export,test,server`, then" in readme
    from bench.preflight import BENCH_INSTALL

    assert BENCH_INSTALL.startswith("bash scripts/setup.sh export,test,bench ")


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


def _doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_every_import_the_docs_show_works() -> None:
    """A user pasting a documented import gets the module or name it names (regression: docs/audit.md
    showed ``from verifier import audit`` after the module moved to ``verifier.decision.audit``)."""
    import ast
    import importlib

    checked = 0
    for path in _doc_files():
        for block in _python_blocks(path.read_text(encoding="utf-8")):
            for line in block.splitlines():
                line = line.removeprefix(">>> ").strip()
                if not re.match(r"(from|import) (verifier|verifier_export)\b", line):
                    continue
                node = ast.parse(line).body[0]
                if isinstance(node, ast.ImportFrom):
                    module = importlib.import_module(node.module or "")
                    for alias in node.names:
                        if not hasattr(module, alias.name):
                            importlib.import_module(f"{node.module}.{alias.name}")  # a submodule
                else:
                    for alias in node.names:
                        importlib.import_module(alias.name)
                checked += 1
    assert checked >= 8, checked


def test_the_audit_worked_example_prints_what_it_shows() -> None:
    """docs/audit.md's ``>>>`` example runs as a doctest: the digests it shows are the code's."""
    import doctest

    failures, attempted = doctest.testfile(str(ROOT / "docs" / "audit.md"), module_relative=False)
    assert attempted >= 6 and failures == 0, (attempted, failures)
