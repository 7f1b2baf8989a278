"""Shared fixtures: seeded tiny models, built and exported once per session.

Hugging Face source directories (built by :mod:`verifier_export.testmodels`):

* ``tiny_source_dir`` -- DeBERTa-v2, id2label contradiction/entailment/neutral.
* ``tiny_bert_source_dir`` -- BERT (takes ``token_type_ids``).
* ``tiny_reordered_source_dir`` -- DeBERTa-v2, id2label entailment/neutral/contradiction.

Exported model directories (``python -m export``'s library call, parity gate passed):

* ``tiny_model_dir``, ``tiny_bert_model_dir``, ``tiny_reordered_model_dir``
  (session-scoped: treat them as read-only).
* ``tiny_model_copy`` -- a private copy of ``tiny_model_dir`` in ``tmp_path``
  for tests that tamper with files.

The export fixtures need torch (the ``export`` extra) and skip without it;
CI installs it, so a skip there is a bug.

Every test runs with ``$CLAIM_VERIFIER_DATA_DIR`` naming a fresh, not yet
created directory of its own (subprocesses inherit it), so no test reads or
writes the per-user data directory of whoever runs the suite, and a pointer one
test records is not seen by another.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any, Iterator

import pytest

#: Labels of the reordered fixture model (index order).
REORDERED_LABELS = ("entailment", "neutral", "contradiction")

#: Parent of every test's own per-user data directory (removed when the session ends).
_DATA_ROOT = Path(tempfile.mkdtemp(prefix="claim-verifier-test-data-"))
_DATA_DIRS = itertools.count()
# Session-scoped fixtures and anything run before the first test use one of their own.
os.environ["CLAIM_VERIFIER_DATA_DIR"] = str(_DATA_ROOT / "session")


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_DATA_ROOT, ignore_errors=True)


@pytest.fixture(autouse=True)
def _own_user_data_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``$CLAIM_VERIFIER_DATA_DIR`` for this test alone (never the real per-user data directory)."""
    path = _DATA_ROOT / f"test-{next(_DATA_DIRS)}"
    monkeypatch.setenv("CLAIM_VERIFIER_DATA_DIR", str(path))
    yield path


def _build(root: Path, **kwargs: Any) -> Path:
    pytest.importorskip("torch")
    from verifier_export.testmodels import build_tiny_model

    with warnings.catch_warnings():
        # Fixture setup, not a test subject: third-party deprecation chatter stays quiet.
        warnings.simplefilter("ignore")
        return build_tiny_model(root / "hf", seed=0, **kwargs)


def _export(source: Path, root: Path) -> Path:
    pytest.importorskip("torch")
    from verifier_export.pipeline import export_model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = export_model(str(source), output=root / "onnx")
    assert report.status == "exported" and report.manifest.parity.passed
    return report.output_dir


@pytest.fixture(scope="session")
def tiny_source_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Hugging Face directory of the seeded tiny DeBERTa-v2 classifier (seed 0)."""
    return _build(tmp_path_factory.mktemp("tiny-deberta"))


@pytest.fixture(scope="session")
def tiny_bert_source_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Hugging Face directory of the seeded tiny BERT classifier (seed 0)."""
    return _build(tmp_path_factory.mktemp("tiny-bert"), architecture="bert")


@pytest.fixture(scope="session")
def tiny_reordered_source_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Hugging Face directory of the tiny DeBERTa-v2 with id2label entailment/neutral/contradiction."""
    return _build(tmp_path_factory.mktemp("tiny-reordered"), label_order=REORDERED_LABELS)


@pytest.fixture(scope="session")
def tiny_model_dir(tiny_source_dir: Path) -> Path:
    """Exported tiny DeBERTa-v2 model directory (read-only; use ``tiny_model_copy`` to modify)."""
    return _export(tiny_source_dir, tiny_source_dir.parent)


@pytest.fixture(scope="session")
def tiny_bert_model_dir(tiny_bert_source_dir: Path) -> Path:
    """Exported tiny BERT model directory; its graph takes ``token_type_ids``."""
    return _export(tiny_bert_source_dir, tiny_bert_source_dir.parent)


@pytest.fixture(scope="session")
def tiny_reordered_model_dir(tiny_reordered_source_dir: Path) -> Path:
    """Exported tiny DeBERTa-v2 whose logit columns are entailment, neutral, contradiction."""
    return _export(tiny_reordered_source_dir, tiny_reordered_source_dir.parent)


@pytest.fixture
def tiny_model_copy(tiny_model_dir: Path, tmp_path: Path) -> Path:
    """A private copy of ``tiny_model_dir`` at ``tmp_path / "model"`` for tamper tests."""
    return Path(shutil.copytree(tiny_model_dir, tmp_path / "model"))


@pytest.fixture()
def manifest_only_model_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory with only a manifest (model ``test/scripted-nli`` at ``r1``), named by
    ``$CLAIM_VERIFIER_MODEL_DIR``: enough for the CLI to resolve the model while a scripted
    scorer does the scoring (nothing loads it)."""
    from verifier.engine.manifest import MANIFEST_NAME, FileRecord, Manifest, ParityReport

    directory = tmp_path_factory.mktemp("fake-model")
    manifest = Manifest(
        model="test/scripted-nli", requested_revision="r1", source="smoke", random_weights=True,
        files={"model.onnx": FileRecord(sha256="0" * 64, size=1)}, labels=("contradiction", "entailment", "neutral"),
        max_length=128, opset=17, inputs=("input_ids", "attention_mask"), pad_token_id=0, versions={},
        parity=ParityReport(passed=True, pairs=1, max_abs_logit_diff=0.0, max_abs_prob_diff=0.0,
                            argmax_agreement=1.0, token_ids_identical=True),
        created_at="2026-12-01T00:00:00Z",
    )
    (directory / MANIFEST_NAME).write_text(manifest.model_dump_json(), encoding="utf-8")
    monkeypatch.setenv("CLAIM_VERIFIER_MODEL_DIR", str(directory))
    return directory
