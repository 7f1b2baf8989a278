"""The distribution is ``onnx-claim-verifier``: ``claim-verifier`` on PyPI is someone else's project.

Regression: ``pip install 'claim-verifier[server]'``, as the docs and error
messages said, installed an unrelated PyPI project. The import package stays
``verifier``, the exporter ``python -m export``; the environment variable
``CLAIM_VERIFIER_MODEL_DIR`` and the metric names are interfaces and keep
their names.
"""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import verifier
from verifier.messages import DISTRIBUTION, install_hint

ROOT = Path(__file__).resolve().parents[1]

#: ``pip install claim-verifier`` / ``'claim-verifier[extra]'`` (the old, foreign name).
OLD_INSTALL = re.compile(r"""pip install\s+(-e\s+)?['"]?claim-verifier\b""")
#: Files that still tell users the old name and are owned by other work in progress; each
#: should use :func:`verifier.messages.install_hint` (remove it here when it does).
PENDING: set[str] = set()


def test_pyproject_names_the_distribution_and_its_scripts() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.findall(r'^name = "([^"]+)"$', text, re.MULTILINE) == [DISTRIBUTION] == ["onnx-claim-verifier"]
    scripts = text.split("[project.scripts]\n", 1)[1].split("\n\n", 1)[0]
    assert scripts.splitlines() == [
        'onnx-claim-verifier = "verifier.__main__:console_main"',
        'onnx-claim-verifier-export = "verifier_export.__main__:main"',
    ]


def test_the_version_is_the_installed_distributions() -> None:
    assert verifier.__version__ == metadata.version("onnx-claim-verifier")


def test_install_hints_install_from_a_checkout_or_a_built_wheel() -> None:
    """Regression (issue 34): hints said ``pip install 'onnx-claim-verifier[ray]'``; nothing is published,
    so pip answered ``No matching distribution found``."""
    assert install_hint("ray") == (
        "in a checkout: bash scripts/setup.sh export,test,ray; elsewhere: pip install '/path/to/checkout[ray]' "
        "or a wheel built there with python -m build (not on PyPI)"
    )


#: ``pip install 'onnx-claim-verifier...`` by name: not published, so it finds no distribution.
BY_NAME = re.compile(r"""pip install\s+['"]?onnx-claim-verifier\b""")


def test_no_doc_or_message_installs_the_unpublished_name() -> None:
    """Regression (issue 34): docs/serving.md, docs/bulk.md, docs/assay.md and the exporter's error said
    ``pip install 'onnx-claim-verifier[...]'``, which pip cannot find."""
    files = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "bench").glob("*.md"),
             *(ROOT / "examples").glob("*.md"), *(ROOT / "verifier").rglob("*.py"),
             *(ROOT / "verifier_export").rglob("*.py"), *(ROOT / "bench").glob("*.py"), ROOT / "scripts" / "setup.sh"]
    offending = sorted(path.relative_to(ROOT).as_posix() for path in files if BY_NAME.search(path.read_text(encoding="utf-8")))
    assert offending == []


def test_no_doc_or_message_installs_the_foreign_project() -> None:
    files = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "bench").glob("*.md"),
             *(ROOT / "examples").glob("*.md"), *(ROOT / "verifier").rglob("*.py"),
             *(ROOT / "verifier_export").rglob("*.py"), *(ROOT / "bench").glob("*.py"), ROOT / "scripts" / "setup.sh"]
    offending = {path.relative_to(ROOT).as_posix() for path in files if OLD_INSTALL.search(path.read_text(encoding="utf-8"))}
    assert offending <= PENDING, sorted(offending - PENDING)


def test_the_installed_scripts_carry_the_new_names() -> None:
    bindir = Path(sys.executable).parent
    for script, usage in (("onnx-claim-verifier", "usage: onnx-claim-verifier "),
                          ("onnx-claim-verifier-export", "usage: onnx-claim-verifier-export ")):
        path = bindir / script
        assert path.exists(), f"{path}: reinstall the checkout (bash scripts/setup.sh)"
        completed = subprocess.run([str(path), "--help"], capture_output=True, text=True, timeout=120)
        assert completed.returncode == 0 and completed.stdout.startswith(usage), completed.stderr
