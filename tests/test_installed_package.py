"""The installed package works like the checkout (issue 34), run as a user does: from a directory
outside the checkout, with the package installed from a wheel built by ``python -m build``.

The slow test installs the wheel (``--no-deps``, into a target folder put first on ``PYTHONPATH``,
the dependencies coming from this environment); ``scripts/wheel_smoke.sh`` (a step of ``.ci/run``)
does the same in a clean venv with the dependencies installed from the wheel's metadata.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _python(cwd: Path, *args: str, path: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CLAIM_VERIFIER_MODEL_DIR")}
    env["HF_HUB_OFFLINE"] = "1"
    if path is not None:
        env["PYTHONPATH"] = str(path)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


# ---------------------------------------------------------------- the import name shared with PyPI's `verifier`


def _foreign_verifier(site: Path) -> Path:
    """The unrelated PyPI project ``verifier`` as pip lays it out: a ``verifier/`` package and its record."""
    (site / "verifier").mkdir(parents=True)
    (site / "verifier" / "__init__.py").write_text("VERSION = '1.0.0'\n", encoding="utf-8")
    record = site / "verifier-1.0.0.dist-info"
    record.mkdir()
    (record / "METADATA").write_text("Metadata-Version: 2.1\nName: verifier\nVersion: 1.0.0\n", encoding="utf-8")
    return site / "verifier" / "__init__.py"


def test_a_shadowing_verifier_package_is_named_plainly(tmp_path: Path) -> None:
    """Regression (issue 34): with PyPI's unrelated ``verifier`` first on sys.path, the exporter failed
    with an obscure import error; it now says which file ``import verifier`` found and what to do."""
    found = _foreign_verifier(tmp_path / "site")
    for module in ("export", "verifier_export"):
        proc = _python(tmp_path, "-m", module, "--help", path=tmp_path / "site")
        assert proc.returncode == 1, proc.stdout
        assert (f"ImportError: `import verifier` found {found}, which is not onnx-claim-verifier's package: the unrelated "
                "PyPI project 'verifier'") in proc.stderr, proc.stderr
        assert "python -m pip uninstall verifier onnx-claim-verifier" in proc.stderr


def test_the_other_distribution_installed_beside_ours_is_warned_of_at_import(tmp_path: Path) -> None:
    """Regression (issue 34): installed into the same site-packages, the two distributions overwrite each
    other's ``verifier/`` files silently; ``import verifier`` now warns, naming the other's record."""
    site = tmp_path / "site"
    shutil.copytree(ROOT / "verifier", site / "verifier", ignore=shutil.ignore_patterns("__pycache__"))
    clean = _python(tmp_path, "-W", "error", "-c", "import verifier; print(verifier.__file__)", path=site)
    assert clean.returncode == 0 and clean.stdout.strip() == str(site / "verifier" / "__init__.py"), clean.stderr
    record = site / "verifier-1.0.0.dist-info"
    record.mkdir()
    (record / "METADATA").write_text("Metadata-Version: 2.1\nName: verifier\nVersion: 1.0.0\n", encoding="utf-8")
    shared = _python(tmp_path, "-c", "import verifier", path=site)
    assert shared.returncode == 0, shared.stderr
    assert (f"RuntimeWarning: the unrelated PyPI project 'verifier' is installed in the same place as "
            f"onnx-claim-verifier ({record})") in shared.stderr, shared.stderr
    assert "python -m pip uninstall verifier onnx-claim-verifier" in shared.stderr


def test_import_verifier_stays_light_and_carries_its_marker() -> None:
    """The clash check runs at import: it must not load pydantic (``import verifier`` takes milliseconds)."""
    proc = _python(ROOT, "-c", "import sys, verifier; from verifier.messages import DISTRIBUTION as d; "
                   "print(verifier.__distribution__ == d == 'onnx-claim-verifier')", path=None)
    assert proc.stdout.strip() == "True", proc.stderr
    light = _python(ROOT, "-c", "import sys, verifier; print(sorted(m for m in ('pydantic', 'numpy') if m in sys.modules))")
    assert light.stdout.strip() == "[]", light.stderr


def test_the_readme_warns_of_the_pypi_verifier_project() -> None:
    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert "`verifier` on PyPI (1.0.0) is an unrelated project that also installs a `verifier` package" in text


# ---------------------------------------------------------------- the built wheel, installed, outside the checkout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``python -m build --wheel --no-isolation`` of the checkout (this environment's setuptools; ``build``
    is in the test extra)."""
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(ROOT)],
                           cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (found,) = out.glob("onnx_claim_verifier-*.whl")
    return found


@pytest.mark.slow
def test_the_wheel_ships_the_export_shim_and_both_packages(wheel: Path) -> None:
    """Regression (issue 34): ``python -m export`` failed after ``pip install <checkout>`` (``No module named
    export``): the wheel had only ``verifier`` and ``verifier_export``."""
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("export/__init__.py", "export/__main__.py", "export/variants/__init__.py", "export/variants/__main__.py",
                 "verifier/__init__.py", "verifier/py.typed", "verifier_export/__init__.py", "verifier_export/py.typed"):
        assert name in names, name
    assert {name.split("/")[0] for name in names if not name.startswith("onnx_claim_verifier-")} == {
        "export", "verifier", "verifier_export"}


@pytest.mark.slow
@pytest.mark.export
def test_the_installed_wheel_exports_verifies_and_checks_outside_the_checkout(wheel: Path, tmp_path: Path) -> None:
    """Regression (issue 34): the README's commands, from the installed package (not the checkout), in a
    directory outside the checkout; the exporter's lines go to stderr, so verify's stdout is JSON Lines."""
    pytest.importorskip("torch")
    site = tmp_path / "site"
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile", "--quiet",
                                "--target", str(site), str(wheel)], capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr
    user = tmp_path / "user"
    user.mkdir()
    shutil.copy(ROOT / "examples" / "claims.jsonl", user / "claims.jsonl")
    where = _python(user, "-c", "import verifier, export; print(verifier.__file__); print(export.__file__)", path=site)
    assert where.stdout.split() == [str(site / "verifier" / "__init__.py"), str(site / "export" / "__init__.py")]

    smoke = _python(user, "-m", "export", "--smoke", "--output", "models/smoke", path=site)
    assert smoke.returncode == 0 and smoke.stdout == "", smoke.stderr
    assert smoke.stderr.splitlines()[-1].endswith(" -m verifier verify --model-dir models/smoke --claim "
                                                  "'The launch is on Tuesday.' --evidence 'The launch moved to Wednesday.'")
    verify = _python(user, "-m", "verifier", "verify", "claims.jsonl", "--model-dir", "models/smoke", "-o", "out.jsonl",
                     path=site)
    assert verify.returncode == 0, verify.stderr
    rows = [json.loads(line) for line in (user / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    claims = [json.loads(line) for line in (user / "claims.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    assert [row["claim"] for row in rows] == [claim["claim"] for claim in claims]
    check = _python(user, "-m", "verifier", "check", "out.jsonl", path=site)
    assert check.returncode == 0, check.stderr


# ---------------------------------------------------------------- messages for the way it was installed


def _console_scripts(bin_dir: Path) -> None:
    """The distribution's two console scripts as pip writes them (pyproject.toml ``[project.scripts]``)."""
    bin_dir.mkdir(parents=True)
    for name, module, function in (("onnx-claim-verifier", "verifier.__main__", "console_main"),
                                   ("onnx-claim-verifier-export", "verifier_export.__main__", "main")):
        script = bin_dir / name
        script.write_text(f"#!{sys.executable}\nimport sys\nfrom {module} import {function}\nsys.exit({function}())\n",
                          encoding="utf-8")
        script.chmod(0o755)


def test_the_console_scripts_name_each_other_not_python_m(tmp_path: Path) -> None:
    """Regression (issue 50): after ``onnx-claim-verifier-export`` its next line said ``.../python3 -m
    verifier_export`` while ``onnx-claim-verifier verify``'s error said ``.../python3 -m export``. Under the
    console scripts, both now name the scripts (bare: ``PATH`` finds them)."""
    _console_scripts(tmp_path / "bin")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("CLAIM_VERIFIER_MODEL_DIR",)}
    env.update({"PATH": f"{tmp_path / 'bin'}{os.pathsep}{env.get('PATH', '')}", "PYTHONPATH": str(ROOT),
                "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")})
    export = subprocess.run(["onnx-claim-verifier-export"], cwd=elsewhere, env=env, capture_output=True, text=True,
                            timeout=300)
    assert export.returncode == 1, export.stderr
    next_line = export.stderr.splitlines()[-1]
    assert next_line.startswith("next: with a copy of the model folder: onnx-claim-verifier-export --model "), next_line
    assert next_line.endswith("; plumbing only (random weights): onnx-claim-verifier-export --smoke"), next_line
    assert " -m " not in export.stderr
    verify = subprocess.run(["onnx-claim-verifier", "verify", "--claim", "The launch is Tuesday.", "--evidence",
                             "The launch is Tuesday."], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300)
    assert verify.returncode == 1, verify.stderr
    assert "create it once with `onnx-claim-verifier-export` (the pinned" in verify.stderr, verify.stderr
    assert "`onnx-claim-verifier-export --smoke --output DIR`" in verify.stderr and " -m " not in verify.stderr


def test_a_suggested_interpreter_is_relative_only_for_a_venv_right_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression (issue 50): run from another directory, a message suggested
    ``newcomer/wheelvenv/bin/python3 -m export``, a path relative to where it was run. Only a virtualenv in
    the working directory itself (``.venv/bin/python``, the README's form) is named relatively now."""
    from verifier.messages import python_command

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))  # no `python` on PATH: the path is what to type
    monkeypatch.setattr(sys, "executable", str(tmp_path / ".venv" / "bin" / "python"))
    assert python_command() == os.path.join(".venv", "bin", "python")
    deeper = tmp_path / "newcomer" / "wheelvenv" / "bin" / "python3"
    monkeypatch.setattr(sys, "executable", str(deeper))
    assert python_command() == str(deeper)


@pytest.mark.parametrize("argv", [["info"], ["--version"]])
def test_an_interpreter_without_the_dependencies_gets_one_line_not_a_traceback(argv: list[str], tmp_path: Path) -> None:
    """Regression (issue 50): ``python -m verifier info`` run by an interpreter lacking the dependencies ended
    in a 26-line traceback, where the exporter says in one line what is missing. ``-S`` gives this
    interpreter without its site-packages: the project's code, none of its dependencies."""
    env = {k: v for k, v in os.environ.items() if k != "CLAIM_VERIFIER_MODEL_DIR"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, "-S", "-m", "verifier", *argv], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: No module named '") and "does not have the dependencies of onnx-claim-verifier" in lines[0]
    assert sys.executable in lines[0]
