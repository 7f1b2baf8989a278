"""The README's set-up runs the README's test command; CI proves it, then the extras.

Regression: the README's test command failed on a clean clone (``bash
scripts/setup.sh`` installs the ``export`` and ``test`` extras only): a bench
test needed psutil, and its failure hid the child's ``ModuleNotFoundError``.
Tests that need an optional extra now skip, naming the extra and the command
that installs it (``tests/conftest.py``); a failed bench child's error says
what the child said; ``.ci/run`` runs the README's set-up and test command
exactly, then the documented extras step and the tests it enables.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- item 3: extras skip, naming the extra


def test_a_test_needing_an_extra_skips_naming_the_extra(tmp_path: Path) -> None:
    (tmp_path / "test_needs.py").write_text(
        "import sys\n"
        "import pytest\n"
        "sys.modules['psutil'] = None  # as if the bench extra were not installed\n"
        "sys.modules['starlette'] = None\n"
        "def test_rss():\n"
        "    pytest.importorskip('psutil')\n"
        "def test_custom_reason():\n"
        "    pytest.skip(\"the ray extra is not installed: pip install -e '.[ray]'\")\n"
        "def test_peers():\n"
        "    pytest.skip('the sentence-transformers ONNX peers need sentence-transformers')\n"
        "def test_other():\n"
        "    pytest.importorskip('definitely_not_a_module_here')\n"
    )
    (tmp_path / "test_server_like.py").write_text(
        "import sys\nimport pytest\nsys.modules['starlette'] = None\npytest.importorskip('starlette')\n"
        "def test_never():\n    pass\n"
    )
    record = tmp_path / "extra-skips.txt"
    env = {**os.environ, "CLAIM_VERIFIER_EXTRA_SKIPS": str(record)}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests"), str(ROOT)])
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "conftest", "-rs", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env,
    )
    skipped = sorted(line for line in proc.stdout.splitlines() if line.startswith("SKIPPED"))
    install = "bash scripts/setup.sh export,test,{} (or export,test,server,ray,plot,bench,openvino,sign for all of them)"
    assert skipped == sorted([
        f"SKIPPED [1] test_needs.py:6: needs the bench extra (psutil is not installed): {install.format('bench')}",
        f"SKIPPED [1] test_needs.py:8: needs the ray extra: {install.format('ray')}",
        f"SKIPPED [1] test_needs.py:10: needs the bench extra: {install.format('bench')}",
        "SKIPPED [1] test_needs.py:12: could not import 'definitely_not_a_module_here': "
        "No module named 'definitely_not_a_module_here'",
        f"SKIPPED [1] test_server_like.py:4: needs the server extra (starlette is not installed): {install.format('server')}",
    ]), proc.stdout
    # node ids outside this repository (like these) are never recorded for CI's rerun
    assert not record.exists()


def test_a_failed_bench_child_says_what_it_said() -> None:
    from bench.proc import run_python

    with pytest.raises(RuntimeError) as caught:
        run_python(["-c", "import definitely_not_a_module_here"])
    assert str(caught.value) == (
        "python -c import definitely_not_a_module_here failed with exit status 1: "
        "ModuleNotFoundError: No module named 'definitely_not_a_module_here'"
    )


def test_ci_runs_the_readmes_setup_and_test_command_exactly_then_the_extras() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    setup_line = "bash scripts/setup.sh && .venv/bin/python -m export && .venv/bin/python -m verifier verify examples/claims.jsonl"
    assert f"```bash\n{setup_line}\n```" in readme
    assert "```bash\n.venv/bin/python -m pytest\n```" in readme
    commands = [line.strip() for line in ci.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    readme_setup = commands.index("bash scripts/setup.sh  # not wrapped in step: it prints its own steps")
    readme_tests = next(i for i, line in enumerate(commands) if line.endswith(".venv/bin/python -m pytest"))
    extras = next(i for i, line in enumerate(commands) if "bash scripts/setup.sh export,test,server,ray,plot,bench,openvino,sign" in line)
    assert readme_setup < readme_tests < extras
    assert "bash scripts/setup.sh export,test,server,ray,plot,bench,openvino,sign" in readme  # the documented extras step
    assert "# --- PRME oracle" in ci  # the marked place for the oracle's environment


def test_every_optional_module_a_test_skips_on_names_its_extra() -> None:
    """A test skipping for a module the README's set-up lacks must map it to its extra in conftest's
    ``EXTRA_OF``, or its skip names no extra and CI's extras step never reruns it (regression: a
    score-store test skipped on ``pyarrow``, which comes with the ray extra, and was never rerun)."""
    import re

    from conftest import EXTRA_OF

    #: installed by the README's set-up (the export and test extras; torch pinned first)
    readme_setup = {"torch", "transformers", "onnx", "optimum.onnxruntime", "httpx"}
    skipped_on = {
        module
        for path in (ROOT / "tests").glob("*.py")
        for module in re.findall(r"importorskip\(\s*['\"]([\w.]+)['\"]", path.read_text(encoding="utf-8"))
    } - {"definitely_not_a_module_here"}  # this file's own example of an unknown module
    unmapped = sorted(m for m in skipped_on if m not in readme_setup and m.split(".")[0] not in EXTRA_OF)
    assert not unmapped, f"add these to EXTRA_OF in tests/conftest.py with the extra that installs them: {unmapped}"
    assert "pyarrow" in skipped_on
