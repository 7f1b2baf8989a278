"""The README's commands, run from a fresh clone in a temporary directory (the parts that need no network).

A new user has a clone, not this working tree: only committed files, no
``models/``, nothing beside the repository. This test clones the repository
into ``tmp_path`` and runs the README's offline path there with this
environment's interpreter (no new virtualenv: creating one is what
``.ci/run`` does): the default export without network stops with one error
line and one ``next:`` line; ``python -m export --smoke`` writes the smoke
model; ``python -m verifier verify examples/claims.jsonl --model-dir ...``
verifies the examples with it; and ``verify`` without a model says where it
looked. ``HF_HUB_OFFLINE=1`` throughout, and a private
``$CLAIM_VERIFIER_DATA_DIR`` (tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SMOKE_DIR = "models/tiny-deberta-v2-smoke-seed0"


def _readme_block(first_word: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for block in text.split("```bash\n")[1:]:
        body = block.split("```", 1)[0]
        if body.startswith(first_word):
            return body
    raise AssertionError(f"no README block starts with {first_word!r}")


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    target = tmp_path_factory.mktemp("fresh") / "onnx-claim-verifier"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(target)], check=True, timeout=120)
    return target


def _run(clone: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CLAIM_VERIFIER_MODEL_DIR", "PYTHONPATH")}
    env.update({"HF_HUB_OFFLINE": "1", "HF_HOME": str(clone.parent / "hf-home"), "PYTHONPATH": str(clone)})
    return subprocess.run([sys.executable, *args], cwd=clone, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
@pytest.mark.export
def test_the_readmes_offline_path_works_in_a_fresh_clone(clone: Path) -> None:
    pytest.importorskip("torch")
    where = _run(clone, "-c", "import verifier, export; print(verifier.__file__); print(export.__file__)")
    assert where.stdout.split() == [str(clone / "verifier" / "__init__.py"), str(clone / "export" / "__init__.py")]

    # the README's first command, without network: one error line, then one `next:` line
    first = _readme_block("bash scripts/setup.sh && ").strip().split(" && ")
    assert first[1:] == [".venv/bin/python -m export", ".venv/bin/python -m verifier verify examples/claims.jsonl"]
    offline = _run(clone, "-m", "export")
    assert offline.returncode == 1, offline.stderr
    lines = [line for line in offline.stderr.splitlines() if not line.startswith("export [")]
    assert len(lines) == 2 and lines[0].startswith("export: error: ") and lines[1].startswith("next: with a copy of")
    # issue 34: under HF_HUB_OFFLINE=1 nothing was downloaded, and the command just run is not the advice
    assert "HF_HUB_OFFLINE is set" in lines[0] and "downloading" not in lines[0]
    assert "unset HF_HUB_OFFLINE" in lines[1] and "HF_HUB_OFFLINE=1" not in lines[1]
    assert not (clone / "models" / "nli-deberta-v3-base-6c749ce3425c").exists()

    # verify without a model: says where it looked, with absolute paths
    missing = _run(clone, "-m", "verifier", "verify", "examples/claims.jsonl")
    assert missing.returncode == 1 and f"{clone}/models/nli-deberta-v3-base-6c749ce3425c (absent)" in missing.stderr

    # the README's offline block: the smoke export, then verify with it
    block = _readme_block("# a copy of the model folder")
    assert f".venv/bin/python -m export --smoke\n.venv/bin/python -m verifier verify examples/claims.jsonl --model-dir {SMOKE_DIR}\n" in block
    smoke = _run(clone, "-m", "export", "--smoke")
    assert smoke.returncode == 0, smoke.stderr
    assert smoke.stdout == "" and "RANDOM WEIGHTS" in smoke.stderr  # issue 34: messages on stderr
    assert smoke.stderr.splitlines()[-1].endswith(f"-m verifier verify examples/claims.jsonl --model-dir {SMOKE_DIR}")
    verify = _run(clone, "-m", "verifier", "verify", "examples/claims.jsonl", "--model-dir", SMOKE_DIR)
    assert verify.returncode == 0, verify.stderr
    rows = [json.loads(line) for line in verify.stdout.splitlines()]
    claims = (clone / "examples" / "claims.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(rows) == len([line for line in claims if line.strip()])
    assert {row["model"] for row in rows} == {"smoke/tiny-deberta-v2"}
    # a re-run of the smoke export is a verified no-op
    again = _run(clone, "-m", "export", "--smoke")
    assert again.returncode == 0 and "nothing to do" in again.stderr

    # Regression (issue 34): the README's one-liner, its whole stdout redirected, is valid JSON Lines
    # (the export's four summary lines went to stdout before the results)
    env = {k: v for k, v in os.environ.items() if k not in ("CLAIM_VERIFIER_MODEL_DIR", "PYTHONPATH")}
    env.update({"HF_HUB_OFFLINE": "1", "HF_HOME": str(clone.parent / "hf-home"), "PYTHONPATH": str(clone)})
    python = shlex.quote(sys.executable)
    chain = subprocess.run(
        ["bash", "-c", f"{{ {python} -m export --smoke && {python} -m verifier verify examples/claims.jsonl "
                       f"--model-dir {SMOKE_DIR}; }} > out.jsonl"],
        cwd=clone, env=env, capture_output=True, text=True, timeout=600,
    )
    assert chain.returncode == 0, chain.stderr
    lines = (clone / "out.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["model"] for line in lines] == ["smoke/tiny-deberta-v2"] * len(rows)
