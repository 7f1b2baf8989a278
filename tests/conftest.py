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

Tests that need an optional extra (``server``, ``ray``, ``plot``, ``bench``, ``openvino``, ``sign``)
skip without it, and the skip reason names the extra and how to install it
(:data:`EXTRA_OF`, whatever the test's own ``importorskip`` said): the
README's set-up installs ``export,test`` only, and its test command passes with
those skips; ``bash scripts/setup.sh export,test,server,ray,plot,bench,openvino,sign``
installs the rest. CI runs both: the README's commands exactly, recording the
node ids of those skips (``$CLAIM_VERIFIER_EXTRA_SKIPS``), then, with every
extra installed, exactly those tests (``.ci/run``).

Every test runs with ``$CLAIM_VERIFIER_DATA_DIR`` naming a fresh, not yet
created directory of its own (subprocesses inherit it), so no test reads or
writes the per-user data directory of whoever runs the suite, and a pointer one
test records is not seen by another.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any, Generator, Iterator

import pytest

#: Labels of the reordered fixture model (index order).
REORDERED_LABELS = ("entailment", "neutral", "contradiction")

#: Parent of every test's own per-user data directory (removed when the session ends).
_DATA_ROOT = Path(tempfile.mkdtemp(prefix="claim-verifier-test-data-"))
_DATA_DIRS = itertools.count()
# Session-scoped fixtures and anything run before the first test use one of their own.
os.environ["CLAIM_VERIFIER_DATA_DIR"] = str(_DATA_ROOT / "session")
# Progress lines come after a few seconds of silence (verifier.cli.progress, verifier_export.progress): on a
# loaded machine a test's command could pass that and print one into the messages it compares. Tests of the
# progress lines set $CLAIM_VERIFIER_PROGRESS_AFTER themselves.
os.environ.setdefault("CLAIM_VERIFIER_PROGRESS_AFTER", "600")


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_DATA_ROOT, ignore_errors=True)


#: Third-party modules of the optional extras that tests import, and the extra that installs each (pyproject.toml).
EXTRA_OF = {
    "starlette": "server", "uvicorn": "server", "prometheus_client": "server",
    "ray": "ray", "pyarrow": "ray",  # pyarrow comes with ray[data]
    "matplotlib": "plot",
    "psutil": "bench", "sentence_transformers": "bench",
    "openvino": "openvino", "nncf": "openvino",
    "cryptography": "sign",
}
#: When set, every test (or module) skipped for a missing extra appends its node id to this file (.ci/run).
EXTRA_SKIPS_ENV = "CLAIM_VERIFIER_EXTRA_SKIPS"
_NOT_IMPORTABLE = re.compile(r"could not import '([\w.]+)'|No module named '([\w.]+)'")
_NAMED_EXTRA = re.compile(r"\bthe (server|ray|plot|bench|openvino|sign) extra\b")
#: Distributions a test's own reason may name ("... need sentence-transformers"), and their extra.
_NEEDED_DIST = re.compile(r"\bneeds? (sentence-transformers|psutil|matplotlib|starlette|uvicorn|prometheus-client|ray|cryptography)\b")
_EXTRA_OF_DIST = {"sentence-transformers": "bench", "psutil": "bench", "matplotlib": "plot", "starlette": "server",
                  "uvicorn": "server", "prometheus-client": "server", "ray": "ray", "cryptography": "sign"}


def extra_reason(extra: str, module: str | None = None) -> str:
    """The skip reason of a test that needs ``extra`` (``module`` is the missing import, when known)."""
    missing = f" ({module} is not installed)" if module else ""
    return (f"needs the {extra} extra{missing}: bash scripts/setup.sh export,test,{extra} "
            "(or export,test,server,ray,plot,bench,openvino,sign for all of them)")


def _name_the_extra(report: pytest.CollectReport | pytest.TestReport) -> None:
    """Reword a skip for a missing optional module so that it names the extra and how to install it."""
    if not report.skipped or not isinstance(report.longrepr, tuple) or len(report.longrepr) != 3:
        return
    path, line, reason = report.longrepr
    text = str(reason)
    if text.startswith("Skipped: needs the "):
        return
    found = _NOT_IMPORTABLE.search(text)
    module = (found.group(1) or found.group(2)).split(".")[0] if found else None
    named = _NAMED_EXTRA.search(text)
    needed = _NEEDED_DIST.search(text)
    extra = (EXTRA_OF.get(module or "") or (named.group(1) if named else None)
             or (_EXTRA_OF_DIST[needed.group(1)] if needed else None))
    if extra is not None:
        report.longrepr = (path, line, f"Skipped: {extra_reason(extra, module if module in EXTRA_OF else None)}")
        _record_extra_skip(report.nodeid)


def _record_extra_skip(nodeid: str) -> None:
    """Append ``nodeid`` to ``$CLAIM_VERIFIER_EXTRA_SKIPS`` when set: CI's second run reruns exactly these."""
    record = os.environ.get(EXTRA_SKIPS_ENV)
    # only this repository's tests (a pytest run inside a test inherits the variable)
    if record and nodeid and (Path(__file__).resolve().parents[1] / nodeid.split("::")[0]).exists():
        with open(record, "a", encoding="utf-8") as stream:
            stream.write(nodeid + "\n")


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    report = yield
    _name_the_extra(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    _name_the_extra(report)
    return report


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


@pytest.fixture(scope="session")
def tiny_int8_dir(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of ``tiny_model_dir`` with the ``int8`` variant built (read-only). The tiny random model
    loses a lot to int8, so the gate is loose: only the graph and its layout matter to its users."""
    pytest.importorskip("onnx")
    from verifier_export.variants import VariantGate, build_variants

    directory = Path(shutil.copytree(tiny_model_dir, tmp_path_factory.mktemp("int8") / "model"))
    build_variants(directory, ["int8"], gates={"int8": VariantGate(max_abs_logit_diff=10.0, max_prob_diff=1.0, min_argmax_agreement=0.0)})
    return directory


#: The bf16 gate of the tiny fixtures: the seeded tiny model's logits are scaled far from zero, so bf16
#: moves them by up to ~0.4 (probabilities ~0.05) and it misses the default gate, like int8.
TINY_BF16_GATE = {"max_abs_logit_diff": 2.0, "max_prob_diff": 0.25}


def bf16_or_skip() -> None:
    """Skip unless OpenVINO (the openvino extra) is installed and runs bf16 natively on this CPU."""
    pytest.importorskip("openvino")
    from verifier.engine.ov_session import cpu_capabilities

    capabilities = cpu_capabilities()
    if not capabilities.bf16:
        pytest.skip(f"this CPU ({capabilities.model_name}) has neither AMX-BF16 nor AVX512-BF16: the bf16 variant cannot run here")


@pytest.fixture(scope="session")
def tiny_bf16_dir(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of ``tiny_model_dir`` with the OpenVINO ``bf16`` variant built under :data:`TINY_BF16_GATE` (read-only)."""
    bf16_or_skip()
    from verifier_export.variants import VariantGate, build_variants

    directory = Path(shutil.copytree(tiny_model_dir, tmp_path_factory.mktemp("bf16") / "model"))
    build_variants(directory, ["bf16"], gates={"bf16": VariantGate(**TINY_BF16_GATE)})
    return directory


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
