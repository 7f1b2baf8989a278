"""The command line: in-process over a scripted scorer, and end to end on the tiny exported model."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import shutil
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import pytest

from verifier import cli
from verifier.decision import audit
from verifier.claim_verifier import ClaimVerifier
from verifier.engine.manifest import MANIFEST_NAME, FileRecord, Manifest, ParityReport
from verifier.messages import export_command
from verifier.options import RuntimeOptions, available_cpus
from verifier.scoring import ScriptedScorer
from verifier.types import (
    DEFAULT_MODEL,
    ClaimVerification,
    ClaimVerificationConfig,
    ClaimVerificationStatus,
)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
CLAIMS = EXAMPLES / "claims.jsonl"

FAKE_MODEL = "test/scripted-nli"
FAKE_REVISION = "0123456789abcdef0123456789abcdef01234567"
NEUTRAL = (0.05, 0.05)

#: Scripted probabilities (entailment, contradiction) for some example premises.
SCRIPT: dict[Any, tuple[float, float]] = {
    "The deployment date is May 4.": (0.98, 0.01),
    ("The Atlas launch date is Tuesday, May 5.", "The Atlas launch is on Wednesday."): (0.02, 0.97),
    ("The Atlas launch date is Tuesday, May 5.", "The Atlas launch is on Tuesday."): (0.96, 0.01),
    "Ravi owns the ingestion pipeline.": (0.997, 0.001),
    "I want to deploy after the tests pass.": (0.02, 0.97),
    "Correction: the API gateway listens on port 8443, not 8080.": (0.01, 0.95),
    "[E1] The roadshow starts in Austin.\n[E2] The next stop after Austin is Tulsa.": (0.91, 0.02),
}


# ---------------------------------------------------------------- fixtures


def write_manifest(directory: Path, *, random_weights: bool = True, revision: Optional[str] = FAKE_REVISION) -> Manifest:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "model.onnx").write_bytes(b"not a real model")
    manifest = Manifest(
        model=FAKE_MODEL,
        requested_revision=revision,
        resolved_revision=revision,
        source="smoke" if revision else "local",
        random_weights=random_weights,
        files={
            "model.onnx": FileRecord(sha256=hashlib.sha256(b"not a real model").hexdigest(), size=16),
        },
        labels=("contradiction", "entailment", "neutral"),
        max_length=128,
        opset=17,
        inputs=("input_ids", "attention_mask"),
        pad_token_id=0,
        versions={"onnxruntime": "1.0-test", "torch": "2.13.0"},
        parity=ParityReport(
            passed=True,
            pairs=12,
            atol=1e-4,
            max_abs_logit_diff=3.5e-6,
            max_abs_prob_diff=1.0e-6,
            argmax_agreement=1.0,
            token_ids_identical=True,
        ),
        created_at="2026-11-29T12:00:00Z",
    )
    (directory / MANIFEST_NAME).write_text(manifest.model_dump_json(indent=2), encoding="utf-8")
    return manifest


@pytest.fixture()
def fake_model_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "fake-model"
    write_manifest(directory)
    return directory


#: What ``cli.main(make_verifier=...)`` takes: ``(config, runtime) -> ClaimVerifier``.
VerifierFactory = Callable[[ClaimVerificationConfig, RuntimeOptions], ClaimVerifier]


class Built:
    """A verifier factory over a ScriptedScorer (``make``, passed to ``cli.main``), and what it built."""

    def __init__(self) -> None:
        self.verifiers: list[ClaimVerifier] = []
        self.scorers: list[ScriptedScorer] = []

    def make(self, config: ClaimVerificationConfig, runtime: RuntimeOptions) -> ClaimVerifier:
        scorer = ScriptedScorer(SCRIPT, default=NEUTRAL, resolved_revision="feedface")
        verifier = ClaimVerifier(config, scorer=scorer, runtime=runtime)
        self.scorers.append(scorer)
        self.verifiers.append(verifier)
        return verifier


@pytest.fixture()
def scripted(monkeypatch: pytest.MonkeyPatch) -> Built:
    """A factory for ``run_main(..., make_verifier=scripted.make)``: the CLI's verifier over a ScriptedScorer (no model needed)."""
    monkeypatch.delenv("CLAIM_VERIFIER_MODEL_DIR", raising=False)
    return Built()


def rows_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def results_of(text: str) -> list[ClaimVerification]:
    return [ClaimVerification.model_validate_json(line) for line in text.splitlines()]


def run_main(
    capsys: pytest.CaptureFixture[str], *argv: str, make_verifier: Optional[VerifierFactory] = None
) -> tuple[int, str, str]:
    code = cli.main(list(argv), make_verifier=make_verifier)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows), encoding="utf-8")
    return path


def good_row(n: int, claim: str = "The deployment date is May 4.") -> dict[str, Any]:
    return {
        "id": f"row-{n}",
        "claim": claim,
        "evidence": [
            {"reference": "M1", "memory_id": str(uuid.UUID(int=2 * n + 1)), "text": "The deployment date is May 4."},
            {"reference": "M2", "memory_id": str(uuid.UUID(int=2 * n + 2)), "text": "The wiki has the checklist."},
        ],
    }


# ---------------------------------------------------------------- JSON Lines mode (scripted)


def test_examples_jsonl_to_jsonl(capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path) -> None:
    code, out, err = run_main(capsys, "verify", str(CLAIMS), "--model-dir", str(fake_model_dir), make_verifier=scripted.make)
    assert code == 0, err
    inputs = rows_of(CLAIMS)
    results = results_of(out)
    assert len(results) == len(inputs) == 41
    # Row i of the output is row i of the input.
    assert [r.claim for r in results] == [row["claim"].strip() for row in inputs]
    by_id = {row["id"]: result for row, result in zip(inputs, results)}
    assert {r.model for r in results} == {FAKE_MODEL}
    assert {r.requested_revision for r in results} == {FAKE_REVISION}

    dated = by_id["schedule-deployment-date"]
    assert dated.status is ClaimVerificationStatus.SUPPORTED
    assert dated.supporting_group == (uuid.UUID(next(r for r in inputs if r["id"] == "schedule-deployment-date")["evidence"][1]["memory_id"]),)
    assert dated.resolved_revision == "feedface"
    assert by_id["schedule-launch-weekday"].status is ClaimVerificationStatus.REFUTED
    assert by_id["schedule-launch-weekday"].refuting_basis == "model_contradiction"
    owner = by_id["role-ingestion-owner"]
    assert owner.status is ClaimVerificationStatus.CONTESTED
    assert owner.refuting_basis == "explicit_negation_overlap"
    deploy = by_id["plan-vs-done-deploy"]
    assert deploy.status is ClaimVerificationStatus.INSUFFICIENT
    assert deploy.limitations == ("uncorroborated_model_contradiction",)
    assert by_id["correction-gateway-port"].status is ClaimVerificationStatus.REFUTED
    roadshow = by_id["schedule-roadshow-order"]
    assert roadshow.status is ClaimVerificationStatus.SUPPORTED and len(roadshow.supporting_group) == 2
    for key in ("count-deployment-concerns", "count-db-access", "count-retros", "count-incidents"):
        assert by_id[key].status is ClaimVerificationStatus.INCOMPLETE
        assert by_id[key].model_called is False
        assert by_id[key].limitations == ("complete_set_requires_structured_aggregation",)
    assert by_id["no-evidence"].status is ClaimVerificationStatus.INSUFFICIENT
    assert by_id["no-evidence"].model_called is False

    # Summary table on stderr: counts per status, throughput, model calls.
    counts = {status: sum(r.status is status for r in results) for status in ClaimVerificationStatus}
    for status, count in counts.items():
        assert re.search(rf"^{status.value}\s+{count}$", err, re.M), err
    assert re.search(rf"^total\s+{len(results)}$", err, re.M)
    stats = scripted.verifiers[0].stats
    assert re.search(rf"^model calls\s+{stats['model_calls']}$", err, re.M)
    assert re.search(rf"^pairs scored\s+{stats['pairs_scored']}$", err, re.M)
    assert re.search(r"^claims/s\s+[\d.]+$", err, re.M)
    assert re.search(r"^elapsed\s+[\d.]+ s$", err, re.M)
    # Cross-claim batching: singles of every claim in one scorer call, then later rounds.
    assert stats["model_calls"] == len(scripted.scorers[0].calls) <= 3


def test_quiet_and_no_tty_have_no_progress(capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path) -> None:
    code, out, err = run_main(capsys, "verify", str(CLAIMS), "--model-dir", str(fake_model_dir), "--quiet", make_verifier=scripted.make)
    assert code == 0
    assert err == ""
    assert len(out.splitlines()) == 41


def test_output_file_is_atomic_and_equals_stdout(
    capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path, tmp_path: Path
) -> None:
    code, stdout_text, _ = run_main(capsys, "verify", str(CLAIMS), "--model-dir", str(fake_model_dir), "-q", make_verifier=scripted.make)
    assert code == 0
    target = tmp_path / "out" / "results.jsonl"
    target.parent.mkdir()
    code, out, _ = run_main(capsys, "verify", str(CLAIMS), "--model-dir", str(fake_model_dir), "-q", "-o", str(target), make_verifier=scripted.make)
    assert code == 0 and out == ""
    assert target.read_text(encoding="utf-8") == stdout_text
    assert sorted(p.name for p in target.parent.iterdir()) == ["results.jsonl"]  # no temp file left
    assert stat_mode(target) == 0o666 & ~current_umask()


def stat_mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_digests_deterministic_across_runs(capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path) -> None:
    _, first, _ = run_main(capsys, "verify", str(CLAIMS), "--model-dir", str(fake_model_dir), "-q", make_verifier=scripted.make)
    _, second, _ = run_main(capsys, "verify", str(CLAIMS), "--model-dir", str(fake_model_dir), "-q", "--schedule", "eager", make_verifier=scripted.make)
    assert first == second
    assert len({r.evaluation_id for r in results_of(first)}) == 41


def test_decision_options_reach_the_digested_config(
    capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path
) -> None:
    code, out, _ = run_main(
        capsys,
        "verify", str(CLAIMS), "--model-dir", str(fake_model_dir), "-q",
        "--entailment-threshold", "0.9", "--contradiction-threshold", "0.85", "--max-group-size", "3",
        "--group-candidate-limit", "4", "--max-evidence", "10", "--batch-size", "7",
        "--entailment-policy", "model_only", "--refutation-policy", "model_only",
        "--threads", "2", "--max-batch-tokens", "1024", "--schedule", "eager",
        make_verifier=scripted.make,
    )  # fmt: skip
    assert code == 0
    expected = ClaimVerificationConfig(
        model=FAKE_MODEL,
        revision=FAKE_REVISION,
        entailment_threshold=0.9,
        contradiction_threshold=0.85,
        max_group_size=3,
        group_candidate_limit=4,
        max_evidence=10,
        batch_size=7,
        entailment_policy="model_only",
        refutation_policy="model_only",
    )
    assert scripted.verifiers[0].config == expected
    assert scripted.verifiers[0].runtime == RuntimeOptions(
        model_dir=fake_model_dir, intra_op_num_threads=2, max_batch_tokens=1024, schedule="eager"
    )
    assert {r.configuration_sha256 for r in results_of(out)} == {audit.configuration_sha256(expected)}
    # model_only refutation: the uncorroborated contradiction now refutes.
    deploy = results_of(out)[[row["id"] for row in rows_of(CLAIMS)].index("plan-vs-done-deploy")]
    assert deploy.status is ClaimVerificationStatus.REFUTED and deploy.limitations == ()


def test_runtime_options_never_change_digests(capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path) -> None:
    _, plain, _ = run_main(capsys, "verify", str(CLAIMS), "--model-dir", str(fake_model_dir), "-q", make_verifier=scripted.make)
    _, tuned, _ = run_main(
        capsys, "verify", str(CLAIMS), "--model-dir", str(fake_model_dir), "-q", "--threads", "1", "--max-batch-tokens", "512",
        make_verifier=scripted.make,
    )
    assert plain == tuned
    default_config = ClaimVerificationConfig(model=FAKE_MODEL, revision=FAKE_REVISION)
    assert {r.configuration_sha256 for r in results_of(plain)} == {audit.configuration_sha256(default_config)}


def test_model_and_revision_options_override_manifest(
    capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path
) -> None:
    code, out, _ = run_main(
        capsys, "verify", str(CLAIMS), "--model-dir", str(fake_model_dir), "-q", "--model", "org/other", "--revision", "r2",
        make_verifier=scripted.make,
    )
    assert code == 0
    assert {(r.model, r.requested_revision) for r in results_of(out)} == {("org/other", "r2")}


def test_local_export_without_revision_records_model_file_digest(
    capsys: pytest.CaptureFixture[str], scripted: Built, tmp_path: Path
) -> None:
    """A local export records no revision: results name the model file's sha256 instead of the pinned default."""
    write_manifest(tmp_path / "local", revision=None)
    code, out, _ = run_main(capsys, "verify", str(CLAIMS), "--model-dir", str(tmp_path / "local"), "-q", make_verifier=scripted.make)
    assert code == 0
    digest = hashlib.sha256(b"not a real model").hexdigest()
    assert {r.requested_revision for r in results_of(out)} == {f"sha256:{digest}"}


def test_stdin_input(capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(good_row(1)) + "\n\n" + json.dumps(good_row(2)) + "\n"))
    code, out, _ = run_main(capsys, "verify", "-", "--model-dir", str(fake_model_dir), "-q", make_verifier=scripted.make)
    assert code == 0
    assert [r.status for r in results_of(out)] == [ClaimVerificationStatus.SUPPORTED] * 2


# ---------------------------------------------------------------- bundles


def test_bundle_files_whole_json_equals_jsonl(capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path) -> None:
    code, from_json, err = run_main(capsys, "verify", str(EXAMPLES / "bundle.json"), "--model-dir", str(fake_model_dir), "-q", make_verifier=scripted.make)
    assert code == 0, err
    code, from_jsonl, err = run_main(capsys, "verify", str(EXAMPLES / "bundles.jsonl"), "--model-dir", str(fake_model_dir), "-q", make_verifier=scripted.make)
    assert code == 0, err
    assert from_json == from_jsonl
    launch, checklist, owner = results_of(from_json)
    assert launch.status is ClaimVerificationStatus.SUPPORTED
    # Only cited candidates with rendered text are scored, with their rendered text.
    assert [s.references for s in launch.group_scores][:3] == [("M1",), ("M2",), ("M3",)]
    assert all(len(s.references) <= 2 and "M4" not in s.references for s in launch.group_scores)
    assert [s.references for s in checklist.group_scores] == [("M3",)]
    sent = [premise for scorer in scripted.scorers for premise in scorer.premises]
    assert "Launch checklist: complete except the status page update." in sent
    assert not any("42 items" in premise for premise in sent)
    # mem-9 (superseded, packed but not rendered) is not evidence.
    assert [s.references for s in owner.group_scores][:2] == [("mem-7",), ("mem-8",)]
    assert all("mem-9" not in s.references for s in owner.group_scores)


def test_bundle_rendered_without_citations_is_a_line_error(
    capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path, tmp_path: Path
) -> None:
    row = {
        "claim": "The launch is Tuesday.",
        "bundle": {
            "rendered_context": "The launch is Tuesday.",
            "candidates": [{"reference": "M1", "memory_id": str(uuid.UUID(int=1)), "rendered_text": "The launch is Tuesday."}],
        },
    }
    path = write_jsonl(tmp_path / "in.jsonl", [good_row(1), row])
    code, out, err = run_main(capsys, "verify", str(path), "--model-dir", str(fake_model_dir), make_verifier=scripted.make)
    assert code == 2 and out == ""
    assert f"{path} line 2: field bundle: bundle was rendered without citations" in err


def test_bundle_unknown_evidence_ref_is_a_line_error(
    capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path, tmp_path: Path
) -> None:
    row = json.loads((EXAMPLES / "bundles.jsonl").read_text(encoding="utf-8").splitlines()[0])
    row["evidence_refs"] = ["M1", "M7"]
    path = write_jsonl(tmp_path / "in.jsonl", [row])
    code, out, err = run_main(capsys, "verify", str(path), "--model-dir", str(fake_model_dir), make_verifier=scripted.make)
    assert code == 2 and out == ""
    assert f"{path} line 1: field evidence_refs: evidence_refs names no candidate of the bundle: 'M7'" in err


# ---------------------------------------------------------------- invalid input


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        ('{"claim": "x", "evidence": [', "line 3: invalid JSON: Expecting value (column 29)"),
        ('["not", "an", "object"]', "line 3: expected a JSON object, got list"),
        ('{"evidence": []}', "line 3: field claim: required field is missing"),
        ('{"claim": "   ", "evidence": []}', "line 3: field claim: claim is empty"),
        (
            '{"claim": "x", "evidence": [{"reference": "M1", "memory_id": "nope", "text": "t"}]}',
            "line 3: field evidence.0.memory_id: not a valid UUID",
        ),
        (
            '{"claim": "x", "evidence": [{"reference": "M1", "memory_id": "%s", "text": " "}]}' % uuid.UUID(int=9),
            "line 3: field evidence.0.text: String should have at least 1 character",
        ),
        (
            '{"claim": "x", "evidence": [], "requires_complete_set": "sometimes"}',
            "line 3: field requires_complete_set: must be true or false",
        ),
        ('{"claim": "x", "evidence": [], "extra": 1}', "line 3: field extra: unknown field"),
        (
            json.dumps(
                {
                    "claim": "x",
                    "evidence": [
                        {"reference": "M1", "memory_id": str(uuid.UUID(int=1)), "text": "a"},
                        {"reference": "M1", "memory_id": str(uuid.UUID(int=2)), "text": "b"},
                    ],
                }
            ),
            "line 3: field evidence.1.reference: reference 'M1' repeats evidence.0",
        ),
        (
            json.dumps(
                {
                    "claim": "x",
                    "evidence": [
                        {"reference": "M1", "memory_id": str(uuid.UUID(int=1)), "text": "a"},
                        {"reference": "M2", "memory_id": str(uuid.UUID(int=1)), "text": "b"},
                    ],
                }
            ),
            f"line 3: field evidence.1.memory_id: memory_id {uuid.UUID(int=1)} repeats evidence.0",
        ),
    ],
)
def test_malformed_line_names_line_and_field_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path, tmp_path: Path, bad: str, expected: str
) -> None:
    path = write_jsonl(tmp_path / "in.jsonl", [good_row(1), good_row(2), bad, good_row(4)])
    target = tmp_path / "results.jsonl"
    target.write_text("previous results\n", encoding="utf-8")
    code, out, err = run_main(capsys, "verify", str(path), "--model-dir", str(fake_model_dir), "-o", str(target), make_verifier=scripted.make)
    assert code == 2
    assert out == ""
    assert f"error: {path} {expected}" in err
    assert err.strip().splitlines()[-1] == f"error: 1 invalid row in {path}; nothing written (--skip-invalid verifies the valid rows and reports these)"
    assert "Traceback" not in err
    assert target.read_text(encoding="utf-8") == "previous results\n"  # untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fake-model", "in.jsonl", "results.jsonl"]
    assert scripted.verifiers == []  # nothing was verified


def test_too_many_passages_names_the_maximum(
    capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path, tmp_path: Path
) -> None:
    path = write_jsonl(tmp_path / "in.jsonl", [good_row(1)])
    code, _, err = run_main(capsys, "verify", str(path), "--model-dir", str(fake_model_dir), "--max-evidence", "1", make_verifier=scripted.make)
    assert code == 2
    assert f"{path} line 1: field evidence: 2 passages exceed max_evidence=1" in err


def test_lone_surrogate_in_claim_names_line_and_field(
    capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path, tmp_path: Path
) -> None:
    """A claim with a lone surrogate (JSON ``"\\ud800"``) is refused when the row is read (validate_request)."""
    bad = {**good_row(2), "claim": "\ud800 x"}
    path = write_jsonl(tmp_path / "in.jsonl", [good_row(1), bad])
    assert '"\\ud800 x"' in path.read_text(encoding="utf-8")
    target = tmp_path / "results.jsonl"
    code, out, err = run_main(
        capsys, "verify", str(path), "--model-dir", str(fake_model_dir), "-o", str(target), make_verifier=scripted.make
    )
    assert (code, out) == (2, "")
    lines = err.splitlines()
    assert len(lines) == 2, err
    assert lines[0].startswith(f"error: {path} line 2: field claim: ")
    assert lines[1] == f"error: 1 invalid row in {path}; nothing written (--skip-invalid verifies the valid rows and reports these)"
    assert listing(tmp_path) == ["fake-model", "in.jsonl"]  # nothing written, no temporary file left
    assert scripted.verifiers == []  # refused before any model work


def test_skip_invalid_reports_skips_and_maps_rows(
    capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path, tmp_path: Path
) -> None:
    path = write_jsonl(
        tmp_path / "in.jsonl",
        [good_row(1), '{"claim": 5}', "", good_row(4, "The deployment is not on May 4."), "{oops"],
    )
    row_map = tmp_path / "rows.jsonl"
    code, out, err = run_main(
        capsys, "verify", str(path), "--model-dir", str(fake_model_dir), "--skip-invalid", "--row-map", str(row_map),
        make_verifier=scripted.make,
    )
    assert code == 0
    assert f"skipped: {path} line 2: field claim: must be a string" in err
    assert f"skipped: {path} line 5: invalid JSON: Expecting property name enclosed in double quotes (column 2)" in err
    assert re.search(r"^skipped \(invalid\)\s+2$", err, re.M)
    results = results_of(out)
    assert [r.claim for r in results] == ["The deployment date is May 4.", "The deployment is not on May 4."]
    assert rows_of(row_map) == [{"row": 0, "line": 1, "id": "row-1"}, {"row": 1, "line": 4, "id": "row-4"}]


def test_too_many_invalid_rows_are_counted_not_listed(
    capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path, tmp_path: Path
) -> None:
    path = write_jsonl(tmp_path / "in.jsonl", ["{}"] * 25)
    code, _, err = run_main(capsys, "verify", str(path), "--model-dir", str(fake_model_dir), make_verifier=scripted.make)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 22
    assert lines[-2] == "error: ... and 5 more invalid rows"
    assert lines[-1] == f"error: 25 invalid rows in {path}; nothing written (--skip-invalid verifies the valid rows and reports these)"


def test_missing_input_file(capsys: pytest.CaptureFixture[str], scripted: Built, tmp_path: Path) -> None:
    code, out, err = run_main(capsys, "verify", str(tmp_path / "nope.jsonl"), make_verifier=scripted.make)
    assert (code, out) == (2, "")
    assert err == f"error: input file {tmp_path / 'nope.jsonl'} does not exist\n"


def test_missing_model_dir_says_how_to_create_it(capsys: pytest.CaptureFixture[str], scripted: Built, tmp_path: Path) -> None:
    missing = tmp_path / "no-model"
    code, out, err = run_main(capsys, "verify", str(CLAIMS), "--model-dir", str(missing), make_verifier=scripted.make)
    assert (code, out) == (1, "")
    assert err.count("\n") == 1
    export = export_command()  # this interpreter as typed here: .venv/bin/python unless the venv is activated
    assert err == (
        f"error: model directory {missing} does not exist; create it once with `{export} --output {missing}` "
        f"(the pinned {DEFAULT_MODEL}; needs the export extra and the Hugging Face hub or a local copy), "
        f"or `{export} --smoke --output {missing}` (random-weights test model: meaningless decisions)\n"
    )
    assert scripted.verifiers == []


def test_model_dir_without_manifest(capsys: pytest.CaptureFixture[str], scripted: Built, tmp_path: Path) -> None:
    code, _, err = run_main(capsys, "verify", str(CLAIMS), "--model-dir", str(tmp_path), make_verifier=scripted.make)
    assert code == 1
    assert err.startswith(f"error: model directory {tmp_path} has no manifest.json; create it once with `{export_command()} --output {tmp_path}`")


def test_default_model_dir_comes_from_environment(
    capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAIM_VERIFIER_MODEL_DIR", str(fake_model_dir))
    code, out, _ = run_main(capsys, "verify", str(CLAIMS), "-q", make_verifier=scripted.make)
    assert code == 0
    assert {r.model for r in results_of(out)} == {FAKE_MODEL}


def test_claims_needing_no_model_run_without_one(
    capsys: pytest.CaptureFixture[str], scripted: Built, tmp_path: Path
) -> None:
    rows = [row for row in rows_of(CLAIMS) if row.get("requires_complete_set") or not row["evidence"]]
    path = write_jsonl(tmp_path / "in.jsonl", rows)
    code, out, err = run_main(capsys, "verify", str(path), "--model-dir", str(tmp_path / "absent"), make_verifier=scripted.make)
    assert code == 0, err
    results = results_of(out)
    assert [r.status.value for r in results] == ["insufficient", "incomplete", "incomplete", "incomplete", "incomplete"]
    assert not any(r.model_called for r in results)
    assert {r.model for r in results} == {DEFAULT_MODEL}
    assert scripted.scorers[0].calls == []


def test_unreadable_manifest(capsys: pytest.CaptureFixture[str], scripted: Built, tmp_path: Path) -> None:
    (tmp_path / MANIFEST_NAME).write_text('{"model": "x"}', encoding="utf-8")
    code, _, err = run_main(capsys, "verify", str(CLAIMS), "--model-dir", str(tmp_path), make_verifier=scripted.make)
    assert code == 1
    assert err.startswith(f"error: unreadable {tmp_path / MANIFEST_NAME}: field ")
    assert err.count("\n") == 1


# ---------------------------------------------------------------- argument errors


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["verify", "x.jsonl", "--entailment-threshold", "0.3"], "argument --entailment-threshold: must be within [0.5, 1.0], got 0.3"),
        (["verify", "x.jsonl", "--contradiction-threshold", "nan"], "argument --contradiction-threshold: must be within [0.5, 1.0], got nan"),
        (["verify", "x.jsonl", "--entailment-policy", "lenient"], "argument --entailment-policy: invalid choice: 'lenient'"),
        (["verify", "x.jsonl", "--refutation-policy", "lenient"], "argument --refutation-policy: invalid choice: 'lenient'"),
        (["verify", "x.jsonl", "--schedule", "fast"], "argument --schedule: invalid choice: 'fast'"),
        (["verify", "x.jsonl", "--max-group-size", "4"], "argument --max-group-size: invalid choice: 4"),
        (["verify", "x.jsonl", "--threads", "0"], f"argument --threads: must be within [1, {available_cpus()}], got 0"),
        (["verify", "x.jsonl", "--threads", "1024"], f"argument --threads: must be within [1, {available_cpus()}], got 1024"),
        (["verify", "x.jsonl", "--batch-size", "300"], "argument --batch-size: must be within [1, 256], got 300"),
        (["verify", "x.jsonl", "--bogus"], "python -m verifier verify: error: unrecognized arguments: --bogus"),
        (["frobnicate"], "argument COMMAND: invalid choice: 'frobnicate'"),
        ([], "the following arguments are required: COMMAND"),
    ],
)
def test_parser_rejects_bad_values(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as exc_info:
        cli.main(argv)
    assert exc_info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["verify"], "error: give an INPUT file (JSON Lines) or --claim with --evidence"),
        (["verify", "x.jsonl", "--claim", "c"], "error: give either INPUT or --claim, not both"),
        (["verify", "--evidence", "e"], "error: --evidence needs --claim"),
        (["verify", "--claim", "c", "-o", "out.jsonl"], "error: -o, --row-map, --skip-invalid and --fail-on-skip apply to INPUT files, not --claim"),
        (["verify", "x.jsonl", "--json"], "error: --complete-set and --json apply to --claim; set requires_complete_set per row"),
        (["verify", "--claim", "  ", "--evidence", "e"], "error: --claim is empty"),
        (["verify", "--claim", "c", "--evidence", "e", "--evidence", " "], "error: --evidence #2 is empty"),
        (["verify", "--claim", "c", "--evidence", "same", "--evidence", " same "], "error: --evidence #2 repeats --evidence #1"),
    ],
)
def test_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str], scripted: Built, argv: list[str], message: str) -> None:
    code, out, err = run_main(capsys, *argv, make_verifier=scripted.make)
    assert (code, out) == (2, "")
    assert err == message + "\n"


# ---------------------------------------------------------------- one-off mode


def test_one_off_human_readable(capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path) -> None:
    code, out, err = run_main(
        capsys,
        "verify", "--model-dir", str(fake_model_dir),
        "--claim", "Ravi owns the ingestion pipeline.",
        "--evidence", "Ravi owns the ingestion pipeline.",
        "--evidence", "Ravi no longer owns ingestion; Tessa owns it.",
        make_verifier=scripted.make,
    )  # fmt: skip
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "claim:   Ravi owns the ingestion pipeline."
    assert lines[1] == "status:  contested"
    assert lines[2] == "supported by:  E1  (model_entailment)"
    assert lines[3] == "refuted by:    E2  (explicit_negation_overlap)"
    assert "  E1   Ravi owns the ingestion pipeline." in lines
    assert "  group  entailment  contradiction  neutral" in lines
    assert "  E1          0.997          0.001    0.002  <- supports" in lines, out
    assert "  E2          0.050          0.050    0.900  <- refutes" in lines
    assert "limitations:  none" in lines
    assert f"model:   {FAKE_MODEL} @ {FAKE_REVISION} (resolved feedface)" in lines
    assert lines[-1].startswith("result_sha256: ") and len(lines[-1]) == len("result_sha256: ") + 64


def test_one_off_json_uses_deterministic_memory_ids(
    capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path
) -> None:
    argv = [
        "verify", "--model-dir", str(fake_model_dir), "--json",
        "--claim", "The user deployed the release.", "--evidence", "I want to deploy after the tests pass.",
    ]  # fmt: skip
    code, out, _ = run_main(capsys, *argv, make_verifier=scripted.make)
    assert code == 0
    (result,) = results_of(out)
    assert result.status is ClaimVerificationStatus.INSUFFICIENT
    assert result.limitations == ("uncorroborated_model_contradiction",)
    expected_id = uuid.uuid5(uuid.uuid5(uuid.NAMESPACE_URL, "urn:claim-verifier:cli-evidence"), "I want to deploy after the tests pass.")
    assert result.group_scores[0].memory_ids == (expected_id,)
    assert result.group_scores[0].references == ("E1",)
    assert cli.cli_memory_id("  I want to deploy after the tests pass.\n") == expected_id
    assert run_main(capsys, *argv, make_verifier=scripted.make)[1] == out  # same digests on a second run


def test_one_off_localized_recheck_and_limitations(
    capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(SCRIPT, "I want to enable passkeys after the security review.", (0.98, 0.01))
    code, out, _ = run_main(
        capsys, "verify", "--model-dir", str(fake_model_dir),
        "--claim", "The user enabled passkeys.", "--evidence", "I want to enable passkeys after the security review.",
        make_verifier=scripted.make,
    )  # fmt: skip
    assert code == 0
    assert "status:  insufficient" in out
    assert "  E1: segments E1 none; no model call (nothing kept)" in out
    assert "limitations:  uncorroborated_model_entailment" in out


def test_one_off_complete_set_and_no_evidence(capsys: pytest.CaptureFixture[str], scripted: Built, tmp_path: Path) -> None:
    code, out, _ = run_main(
        capsys, "verify", "--model-dir", str(tmp_path / "absent"), "--complete-set",
        "--claim", "There are exactly four deployment concerns.", "--evidence", "Concern: rollback is untested.",
        make_verifier=scripted.make,
    )  # fmt: skip
    assert code == 0
    assert "status:  incomplete" in out
    assert "limitations:  complete_set_requires_structured_aggregation" in out
    assert f"model:   {DEFAULT_MODEL} @ " in out and "resolved" not in out
    code, out, _ = run_main(capsys, "verify", "--model-dir", str(tmp_path / "absent"), "--claim", "Marco approved it.", make_verifier=scripted.make)
    assert code == 0 and "status:  insufficient" in out


def test_one_off_missing_model(capsys: pytest.CaptureFixture[str], scripted: Built, tmp_path: Path) -> None:
    code, out, err = run_main(capsys, "verify", "--model-dir", str(tmp_path / "absent"), "--claim", "c d", "--evidence", "e f", make_verifier=scripted.make)
    assert (code, out) == (1, "")
    assert f"create it once with `{export_command()} --output " in err


# ---------------------------------------------------------------- info


def test_info_readable(capsys: pytest.CaptureFixture[str], fake_model_dir: Path) -> None:
    code, out, err = run_main(capsys, "info", "--model-dir", str(fake_model_dir))
    assert code == 0, err
    lines = out[: out.index("engines (")].splitlines()  # the engines, then the CPU section, follow the manifest
    assert lines[0] == "WARNING: random weights (smoke/test model): its decisions are meaningless"
    assert f"model               {FAKE_MODEL}" in lines
    assert f"requested revision  {FAKE_REVISION}" in lines
    assert "labels              0=contradiction, 1=entailment, 2=neutral" in lines
    assert "opset               17" in lines
    assert "inputs              input_ids, attention_mask" in lines
    assert "  PASSED over 12 golden pairs (atol 0.0001)" in lines
    assert "  max |logit diff| 3.5e-06, max |prob diff| 1e-06" in lines
    assert "  argmax agreement 100.0%, token ids identical: yes" in lines
    digest = hashlib.sha256(b"not a real model").hexdigest()
    assert f"  model.onnx        16 B  sha256 {digest}" in lines
    assert lines[-1] == "versions:  onnxruntime 1.0-test, torch 2.13.0"
    # issue 47: the engine each entry gives; a directory the engine cannot open names none, and says why
    engines = out[out.index("engines ("): out.index("this CPU:")].splitlines()
    assert engines[0] == "engines (padding batched, optimisation level all; a record names the one that scored it):"
    assert engines[1].startswith("  float32 export: cannot be named here: ") and "does not record tokenizer.json" in engines[1]


def test_info_verify_files_and_json(capsys: pytest.CaptureFixture[str], fake_model_dir: Path) -> None:
    code, _, err = run_main(capsys, "info", "--model-dir", str(fake_model_dir), "--verify-files")
    assert code == 0 and err == "files: all 1 match the manifest\n"
    code, out, _ = run_main(capsys, "info", "--model-dir", str(fake_model_dir), "--json")
    assert code == 0
    assert Manifest.model_validate_json(out) == Manifest.model_validate_json((fake_model_dir / MANIFEST_NAME).read_text())
    (fake_model_dir / "model.onnx").write_bytes(b"tampered model!!")
    code, _, err = run_main(capsys, "info", "--model-dir", str(fake_model_dir), "--verify-files")
    assert code == 1
    assert f"error: {fake_model_dir}/model.onnx: sha256 " in err


def test_info_no_warning_for_real_weights(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    write_manifest(tmp_path / "m", random_weights=False)
    code, out, _ = run_main(capsys, "info", "--model-dir", str(tmp_path / "m"))
    assert code == 0
    assert "WARNING" not in out and "random weights      no" in out


def test_info_missing_model(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run_main(capsys, "info", "--model-dir", str(tmp_path / "absent"))
    assert code == 1
    # what this CPU can run is said even without a model (its name as /proc/cpuinfo gives it)
    assert out.startswith("this CPU:\n")
    names = [line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
             if line.startswith("model name")] if Path("/proc/cpuinfo").exists() else []
    assert (names[0] if names else "unknown model") in out
    assert "fastest gated variant" not in out
    assert err.startswith(
        f"error: model directory {tmp_path / 'absent'} does not exist; create it once with `{export_command()} --output {tmp_path / 'absent'}`"
    )


def test_default_model_dir_hint(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CLAIM_VERIFIER_MODEL_DIR", raising=False)
    code, _, err = run_main(capsys, "info")
    assert code == 1
    export = export_command()  # outside a checkout: the installed shim (issue 34), through this interpreter
    assert export.endswith(" -m export")
    assert err.startswith(
        f"error: model directory models/nli-deberta-v3-base-6c749ce3425c (relative to {tmp_path}) does not exist; "
        f"create it once with `{export}` ("
    )
    assert f"or `{export} --smoke --output DIR` and pass --model-dir DIR (random-weights" in err


def test_without_the_pinned_model_the_error_names_the_smoke_export_that_is_there(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_model_dir: Path
) -> None:
    """Regression (issue 34): after ``python -m export --smoke`` alone, the README's
    ``verify examples/claims.jsonl`` (no ``--model-dir``) exited 1 without mentioning the smoke
    export in ``models/tiny-deberta-v2-smoke-seed0``; the error now says to add ``--model-dir`` for it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CLAIM_VERIFIER_MODEL_DIR", raising=False)
    shutil.copytree(tiny_model_dir, tmp_path / "models" / "tiny-deberta-v2-smoke-seed0")
    claims = write_jsonl(tmp_path / "claims.jsonl", [{"claim": "The launch is Tuesday.", "evidence": [
        {"reference": "m1", "memory_id": str(uuid.UUID(int=1)), "text": "The launch is Tuesday."}]}])
    code, out, err = run_main(capsys, "verify", str(claims))
    assert (code, out) == (1, "")
    assert err.startswith(
        "error: model directory models/nli-deberta-v3-base-6c749ce3425c (relative to "
        f"{tmp_path}) does not exist: the pinned model is not exported here, but the random-weights smoke export "
        f"models/tiny-deberta-v2-smoke-seed0 (relative to {tmp_path}) is; add --model-dir "
        "models/tiny-deberta-v2-smoke-seed0 to use it"
    ), err
    code, out, err = run_main(capsys, "verify", str(claims), "--model-dir", "models/tiny-deberta-v2-smoke-seed0", "-q")
    assert code == 0 and len(out.splitlines()) == 1, err


@pytest.mark.parametrize("command", ["verify", "info", "serve"])
def test_a_missing_model_dir_that_was_given_is_never_told_to_add_model_dir(
    command: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_model_dir: Path
) -> None:
    """Regression (issue 50): ``serve --model-dir models/nli-deberta-v3-base-6c749ce3425c`` (as docs/serving.md
    writes it; the directory absent, the smoke export present) answered "add --model-dir
    models/tiny-deberta-v2-smoke-seed0", although --model-dir was given. Now it says to export the pinned
    model or give the smoke export's directory instead."""
    if command == "serve":
        pytest.importorskip("uvicorn")  # the server extra
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CLAIM_VERIFIER_MODEL_DIR", raising=False)
    shutil.copytree(tiny_model_dir, tmp_path / "models" / "tiny-deberta-v2-smoke-seed0")
    argv = [command]
    if command == "verify":
        argv += ["--claim", "The launch is Tuesday.", "--evidence", "The launch is Tuesday."]
    code, out, err = run_main(capsys, *argv, "--model-dir", "models/nli-deberta-v3-base-6c749ce3425c")
    assert code == 1
    assert "add --model-dir" not in err, err
    error = next(line for line in err.splitlines() if line.startswith("error: "))
    assert error == (
        f"error: --model-dir models/nli-deberta-v3-base-6c749ce3425c (relative to {tmp_path}) does not exist: the "
        f"pinned model is not exported here; export it once with `{export_command()}`, or give --model-dir "
        "models/tiny-deberta-v2-smoke-seed0 instead, the random-weights smoke export here (plumbing only: "
        "meaningless decisions)"
    ), err


# ---------------------------------------------------------------- end to end, in a subprocess, on the tiny model


def run_cli(*argv: str, cwd: Optional[Path] = None, stdin: Optional[str] = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CLAIM_VERIFIER_MODEL_DIR"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "verifier", *argv],
        cwd=cwd or ROOT,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def tiny_run(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """The examples through the real CLI on the tiny exported model, twice."""
    out_dir = tmp_path_factory.mktemp("cli-e2e")
    first, second = out_dir / "first.jsonl", out_dir / "second.jsonl"
    for target, schedule in ((first, "staged"), (second, "eager")):
        proc = run_cli("verify", str(CLAIMS), "--model-dir", str(tiny_model_dir), "-o", str(target), "--schedule", schedule)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == ""
    yield first, second


def test_e2e_jsonl_validates_and_is_deterministic(tiny_run: tuple[Path, Path], tiny_model_dir: Path) -> None:
    first, second = tiny_run
    from verifier.engine.manifest import read_manifest

    manifest = read_manifest(tiny_model_dir)
    inputs = rows_of(CLAIMS)
    results = [ClaimVerification.model_validate_json(line) for line in first.read_text(encoding="utf-8").splitlines()]
    assert len(results) == len(inputs)
    assert [r.claim for r in results] == [row["claim"] for row in inputs]
    for row, result in zip(inputs, results):
        assert result.model == manifest.model
        needs_model = bool(row["evidence"]) and not row.get("requires_complete_set", False)
        assert result.model_called is needs_model
        # The requested revision is the manifest's, or sha256:<model file> for an unrevisioned local export;
        # the resolved revision only what the manifest resolved (issue 26: never one nobody resolved).
        requested = manifest.requested_revision or manifest.resolved_revision
        if requested is None:
            requested = "sha256:" + manifest.files[manifest.model_file].sha256
        assert result.requested_revision == requested
        assert result.resolved_revision == (manifest.resolved_revision if needs_model else None)
        assert len(result.group_scores) >= (len(row["evidence"]) if needs_model else 0)
        assert result.evidence_sha256 == audit.evidence_sha256(
            [__import__("verifier").ClaimEvidence.model_validate(e) for e in row["evidence"]]
        )
    # Byte-identical across two runs (and across schedules).
    assert first.read_bytes() == second.read_bytes()


def test_e2e_summary_and_stdout(tiny_model_dir: Path) -> None:
    proc = run_cli("verify", str(EXAMPLES / "bundles.jsonl"), "--model-dir", str(tiny_model_dir))
    assert proc.returncode == 0, proc.stderr
    results = results_of(proc.stdout)
    assert len(results) == 3
    assert re.search(r"^total\s+3$", proc.stderr, re.M)
    assert re.search(r"^model calls\s+[1-9]\d*$", proc.stderr, re.M)
    assert "\r" not in proc.stderr  # no progress bar when stderr is not a terminal


def test_e2e_one_off(tiny_model_dir: Path) -> None:
    proc = run_cli(
        "verify", "--model-dir", str(tiny_model_dir),
        "--claim", "The launch is Tuesday.", "--evidence", "The launch is Tuesday.", "--evidence", "The launch moved to Wednesday.",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "claim:   The launch is Tuesday."
    assert re.fullmatch(r"status:  (supported|refuted|contested|insufficient)", lines[1])
    assert re.search(r"^  E1\s+0\.\d{3}\s+0\.\d{3}\s+0\.\d{3}", proc.stdout, re.M)
    assert re.search(r"^  E2\s+0\.\d{3}\s+0\.\d{3}\s+0\.\d{3}", proc.stdout, re.M)
    assert any(line.startswith("limitations:  ") for line in lines)


def test_e2e_error_paths(tiny_model_dir: Path, tmp_path: Path) -> None:
    bad = write_jsonl(tmp_path / "bad.jsonl", [good_row(1), '{"claim": "x", "evidence": [{"reference": "M1"}]}'])
    out = tmp_path / "out.jsonl"
    proc = run_cli("verify", str(bad), "--model-dir", str(tiny_model_dir), "-o", str(out))
    assert proc.returncode == 2
    # the other error is named too (new-user trial: "and 1 more error" left the user to guess which)
    assert f"{bad} line 2: field evidence.0.memory_id: required field is missing (and 1 more error in this row: evidence.0.text)" in proc.stderr
    assert not out.exists() and proc.stdout == ""

    proc = run_cli("verify", str(CLAIMS), "--model-dir", str(tmp_path / "absent"))
    assert proc.returncode == 1 and proc.stdout == ""
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1
    assert "python -m export" in proc.stderr

    proc = run_cli("verify", str(CLAIMS), "--model-dir", str(tiny_model_dir), "--entailment-policy", "lenient")
    assert proc.returncode == 2 and "invalid choice: 'lenient'" in proc.stderr


def test_e2e_info(tiny_model_dir: Path) -> None:
    proc = run_cli("info", "--model-dir", str(tiny_model_dir), "--verify-files")
    assert proc.returncode == 0, proc.stderr
    from verifier.engine.manifest import read_manifest

    manifest = read_manifest(tiny_model_dir)
    assert proc.stdout.startswith("WARNING: random weights") is manifest.random_weights
    assert f"model               {manifest.model}\n" in proc.stdout
    assert f"labels              {', '.join(f'{i}={label}' for i, label in enumerate(manifest.labels))}\n" in proc.stdout
    assert f"opset               {manifest.opset}\n" in proc.stdout
    assert "parity (onnxruntime vs PyTorch):\n  PASSED over " in proc.stdout
    for name, record in manifest.files.items():
        assert f"sha256 {record.sha256}" in proc.stdout, name
    assert proc.stderr.startswith("files: all ")


def test_e2e_cli_is_torch_free(tiny_model_dir: Path) -> None:
    code = (
        "import sys\n"
        "from verifier.cli import main\n"  # in-process: `python -m verifier` ends without returning (exit_process)
        f"assert main(['verify', {str(CLAIMS)!r}, '--model-dir', {str(tiny_model_dir)!r}, '-q']) == 0\n"
        "bad = sorted(m for m in ('torch', 'transformers', 'optimum') if m in sys.modules)\n"
        "assert not bad, bad\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.splitlines()) == 41


def test_a_verify_run_imports_no_other_subcommand_and_no_strict_policy(tiny_model_dir: Path) -> None:
    """A real ``verify`` run loads only the verify and info command modules and, under the reference
    policies, none of the strict policy's (their import is ~0.1 s of a one-off: docs/performance.md)."""
    code = (
        "import json, sys\n"
        "from verifier.cli import main\n"  # in-process: `python -m verifier` ends without returning (exit_process)
        f"assert main(['verify', {str(CLAIMS)!r}, '--model-dir', {str(tiny_model_dir)!r}, '-q']) == 0\n"
        "from verifier.cli import SUBCOMMANDS\n"
        "commands = sorted(n for n in SUBCOMMANDS if 'verifier.cli.' + n in sys.modules)\n"
        "strict = sorted(m for m in sys.modules if m.startswith('verifier.decision.strict'))\n"
        "print(json.dumps([commands, strict]), file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.splitlines()) == 41
    assert json.loads(proc.stderr.strip().splitlines()[-1]) == [["info", "verify"], []]


@pytest.mark.parametrize("name", cli.SUBCOMMANDS)
def test_a_subcommand_parses_and_helps_as_with_every_module_built(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The parser built for one subcommand lists every subcommand with the same help and gives the
    chosen one its full parser: ``--help`` prints what the parser with every module built prints."""
    outputs = []
    for parser in (cli.build_parser(), cli.build_parser([name, "--help"])):
        with pytest.raises(SystemExit) as exit_info:
            parser.parse_args([name, "--help"])
        assert exit_info.value.code == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
    assert outputs[0].startswith("usage: ") and f" {name} " in outputs[0].splitlines()[0]
    tops = [parser.format_help() for parser in (cli.build_parser(), cli.build_parser([name]))]
    assert tops[0] == tops[1]
    for listed in cli.SUBCOMMANDS:
        assert re.search(rf"^    {listed} ", tops[0], re.M), listed


def test_subcommand_refuses_an_unknown_name() -> None:
    with pytest.raises(ValueError, match=r"subcommand must be one of \['verify', 'info'"):
        cli.subcommand("verifier")


def test_progress_bar_only_on_a_terminal(
    capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code, out, err = run_main(capsys, "verify", str(CLAIMS), "--model-dir", str(fake_model_dir), make_verifier=scripted.make)
    assert code == 0 and len(out.splitlines()) == 41
    assert "0/41 [" in err and "claim/s" in err  # a tqdm bar over the 41 claims (cleared at the end)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code, _, err = run_main(capsys, "verify", str(CLAIMS), "--model-dir", str(fake_model_dir), "--quiet", make_verifier=scripted.make)
    assert code == 0 and err == ""


def test_e2e_cli_many_equals_one_by_one_on_tiny_model(tiny_run: tuple[Path, Path], tiny_model_dir: Path) -> None:
    """The CLI's batched verify_many output equals verify_sync claim by claim on the same ONNX model."""
    from verifier.engine.manifest import read_manifest
    from verifier.types import ClaimRequest

    from verifier.engine.scorer import OnnxScorer

    manifest = read_manifest(tiny_model_dir)
    cli_results = results_of(tiny_run[0].read_text(encoding="utf-8"))
    config = ClaimVerificationConfig(model=manifest.model, revision=cli_results[0].requested_revision)
    verifier = ClaimVerifier(config, scorer=OnnxScorer(tiny_model_dir))
    alone = []
    for line in CLAIMS.read_text(encoding="utf-8").splitlines():
        request = ClaimRequest.model_validate_json(line)
        alone.append(verifier.verify_sync(request.claim, request.evidence, requires_complete_set=request.requires_complete_set))
    assert [r.model_dump_json() for r in alone] == tiny_run[0].read_text(encoding="utf-8").splitlines()
    # One scorer call per claim that needs the model, at least: no cross-claim batching here.
    assert verifier.stats["model_calls"] >= sum(r.model_called for r in alone)


def test_whole_json_file_errors_name_items_and_lines(
    capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path, tmp_path: Path
) -> None:
    items = tmp_path / "rows.json"
    items.write_text(json.dumps([good_row(1), 5, {"claim": "x", "evidence": [], "id": 7}], indent=2), encoding="utf-8")
    code, out, err = run_main(capsys, "verify", str(items), "--model-dir", str(fake_model_dir), make_verifier=scripted.make)
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f"error: {items} item 2: expected a JSON object, got int",
        f"error: {items} item 3: field id: must be a string",
        f"error: 2 invalid rows in {items}; nothing written (--skip-invalid verifies the valid rows and reports these)",
    ]
    broken = tmp_path / "broken.json"
    broken.write_text('[\n  {"claim": "x"},\n  {"claim": "y" "evidence": []}\n]\n', encoding="utf-8")
    code, _, err = run_main(capsys, "verify", str(broken), "--model-dir", str(fake_model_dir), make_verifier=scripted.make)
    assert code == 2
    assert err.splitlines()[0] == f"error: {broken} line 3: invalid JSON: Expecting ',' delimiter (column 17)"
    single = tmp_path / "one.json"
    single.write_text(json.dumps(good_row(3), indent=2), encoding="utf-8")
    code, out, _ = run_main(capsys, "verify", str(single), "--model-dir", str(fake_model_dir), "-q", make_verifier=scripted.make)
    assert code == 0 and [r.status for r in results_of(out)] == [ClaimVerificationStatus.SUPPORTED]


# ---------------------------------------------------------------- output destinations and error text (new-user trial)


def trial_input(tmp_path: Path) -> Path:
    """Two valid rows in ``tmp_path/in.jsonl``."""
    return write_jsonl(tmp_path / "in.jsonl", [good_row(1), good_row(2)])


def listing(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir())


@pytest.mark.parametrize(
    ("make_row_map", "reason"),
    [
        (lambda tmp: tmp / "missing" / "r.jsonl", "directory {tmp}/missing does not exist"),
        (lambda tmp: tmp / "in.jsonl" / "r.jsonl", "{tmp}/in.jsonl is not a directory"),
        pytest.param(
            lambda tmp: Path("/proc/r.jsonl"),
            "cannot create a file in /proc (No such file or directory)",
            marks=pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc"),
        ),
    ],
    ids=["missing-parent", "parent-is-a-file", "proc"],
)
def test_unwritable_row_map_leaves_no_temp_file(
    capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path, tmp_path: Path, make_row_map: Any, reason: str
) -> None:
    """Bug: an unwritable --row-map left a 0-byte .ok.jsonl.XXXX.tmp behind for -o ok.jsonl."""
    path = trial_input(tmp_path)
    row_map = make_row_map(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    target = work / "ok.jsonl"
    code, out, err = run_main(
        capsys, "verify", str(path), "--model-dir", str(fake_model_dir), "-o", str(target), "--row-map", str(row_map),
        make_verifier=scripted.make,
    )
    assert (code, out) == (1, "")
    assert err == f"error: cannot write --row-map {row_map}: {reason.format(tmp=tmp_path)}\n"
    assert listing(work) == []
    assert listing(tmp_path) == ["fake-model", "in.jsonl", "work"]
    assert scripted.verifiers == []  # refused before any model work


def test_row_map_directory_writes_neither_output(
    capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path, tmp_path: Path
) -> None:
    """Bug: --row-map naming a directory wrote -o ok3.jsonl, then failed on an internal .sub.xxx.tmp path."""
    path = trial_input(tmp_path)
    (tmp_path / "sub").mkdir()
    target = tmp_path / "ok3.jsonl"
    code, out, err = run_main(
        capsys, "verify", str(path), "--model-dir", str(fake_model_dir), "-o", str(target), "--row-map", str(tmp_path / "sub"),
        make_verifier=scripted.make,
    )
    assert (code, out) == (1, "")
    assert err == f"error: --row-map {tmp_path / 'sub'} is a directory; give a file path\n"
    assert listing(tmp_path) == ["fake-model", "in.jsonl", "sub"]
    assert listing(tmp_path / "sub") == []
    assert scripted.verifiers == []


def test_output_directory_is_refused_before_model_work(
    capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path, tmp_path: Path
) -> None:
    """Bug: -o /tmp failed only after the model ran, naming an internal temp path (/.tmp.hmwf6lss.tmp)."""
    path = trial_input(tmp_path)
    code, out, err = run_main(capsys, "verify", str(path), "--model-dir", str(fake_model_dir), "-o", str(tmp_path), make_verifier=scripted.make)
    assert (code, out) == (1, "")
    assert err == f"error: -o {tmp_path} is a directory; give a file path\n"
    assert scripted.verifiers == []
    assert listing(tmp_path) == ["fake-model", "in.jsonl"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("-o", "{in}"), "error: -o {in} is the INPUT file; it would be replaced, write to another file"),
        (("-o", "{link}"), "error: -o {link} is the INPUT file; it would be replaced, write to another file"),
        (("--row-map", "{in}"), "error: --row-map {in} is the INPUT file; it would be replaced, write to another file"),
        (
            ("-o", "{tmp}/same.jsonl", "--row-map", "{tmp}/./same.jsonl"),
            "error: -o and --row-map name the same file {tmp}/same.jsonl; give two different files",
        ),
    ],
    ids=["output-is-input", "output-is-a-link-to-input", "row-map-is-input", "output-is-row-map"],
)
def test_outputs_must_not_overwrite_input_or_each_other(
    capsys: pytest.CaptureFixture[str],
    scripted: Built,
    fake_model_dir: Path,
    tmp_path: Path,
    options: tuple[str, ...],
    message: str,
) -> None:
    """Bug: `verify in.jsonl -o in.jsonl` replaced the input; `-o same --row-map same` kept only the row map."""
    path = trial_input(tmp_path)
    before = path.read_bytes()
    (tmp_path / "link.jsonl").symlink_to(path)
    names = {"in": str(path), "link": str(tmp_path / "link.jsonl"), "tmp": str(tmp_path)}
    argv = [option.format(**names) for option in options]
    code, out, err = run_main(capsys, "verify", str(path), "--model-dir", str(fake_model_dir), *argv, make_verifier=scripted.make)
    assert (code, out) == (2, "")
    assert err == message.format(**names) + "\n"
    assert path.read_bytes() == before
    assert listing(tmp_path) == ["fake-model", "in.jsonl", "link.jsonl"]
    assert scripted.verifiers == []


@pytest.mark.parametrize("existing", [True, False], ids=["targets-exist", "targets-new"])
def test_failed_move_restores_both_outputs(
    capsys: pytest.CaptureFixture[str],
    scripted: Built,
    fake_model_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    existing: bool,
) -> None:
    """Bug: outputs were not all-or-nothing: -o was moved into place even when --row-map then failed."""
    import errno

    path = trial_input(tmp_path)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target, row_map = out_dir / "ok.jsonl", out_dir / "rows.jsonl"
    if existing:
        target.write_text("old results\n", encoding="utf-8")
        row_map.write_text("old rows\n", encoding="utf-8")
    real_replace = os.replace

    def replace(src: Any, dst: Any) -> None:
        if Path(dst) == row_map:
            raise OSError(errno.EDQUOT, "Disk quota exceeded", str(src))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    code, out, err = run_main(
        capsys, "verify", str(path), "--model-dir", str(fake_model_dir), "-q", "-o", str(target), "--row-map", str(row_map),
        make_verifier=scripted.make,
    )
    assert (code, out) == (1, "")
    assert err == f"error: cannot write --row-map {row_map}: Disk quota exceeded\n"
    if existing:
        assert listing(out_dir) == ["ok.jsonl", "rows.jsonl"]
        assert target.read_text(encoding="utf-8") == "old results\n"
        assert row_map.read_text(encoding="utf-8") == "old rows\n"
    else:
        assert listing(out_dir) == []


def test_both_outputs_replace_existing_files(
    capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path, tmp_path: Path
) -> None:
    """The all-or-nothing commit still replaces existing files and leaves no temp or backup file."""
    path = trial_input(tmp_path)
    target, row_map = tmp_path / "ok.jsonl", tmp_path / "rows.jsonl"
    target.write_text("old results\n", encoding="utf-8")
    row_map.write_text("old rows\n", encoding="utf-8")
    code, out, err = run_main(
        capsys, "verify", str(path), "--model-dir", str(fake_model_dir), "-q", "-o", str(target), "--row-map", str(row_map),
        make_verifier=scripted.make,
    )
    assert (code, out, err) == (0, "", "")
    assert [r.status for r in results_of(target.read_text(encoding="utf-8"))] == [ClaimVerificationStatus.SUPPORTED] * 2
    assert rows_of(row_map) == [{"row": 0, "line": 1, "id": "row-1"}, {"row": 1, "line": 2, "id": "row-2"}]
    assert listing(tmp_path) == ["fake-model", "in.jsonl", "ok.jsonl", "rows.jsonl"]


def test_corrupt_manifest_error_names_no_field(capsys: pytest.CaptureFixture[str], scripted: Built, tmp_path: Path) -> None:
    """Bug: a corrupt manifest.json printed "field None: Invalid JSON: ..."."""
    (tmp_path / MANIFEST_NAME).write_text("{\n", encoding="utf-8")
    code, out, err = run_main(capsys, "verify", str(CLAIMS), "--model-dir", str(tmp_path), make_verifier=scripted.make)
    assert (code, out) == (1, "")
    assert err == f"error: unreadable {tmp_path / MANIFEST_NAME}: invalid JSON: EOF while parsing an object at line 2 column 0\n"


def test_pydantic_wording_becomes_user_words(
    capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path, tmp_path: Path
) -> None:
    """Bug: `evidence` given as a string said "Input should be a valid tuple"; a bad UUID used pydantic's wording."""
    path = write_jsonl(
        tmp_path / "in.jsonl",
        [
            {"claim": "x", "evidence": "The launch is Tuesday."},
            {"claim": "x", "evidence": [{"reference": "M1", "memory_id": "nope", "text": "t"}]},
        ],
    )
    code, out, err = run_main(capsys, "verify", str(path), "--model-dir", str(fake_model_dir), make_verifier=scripted.make)
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f"error: {path} line 1: field evidence: must be a list",
        f"error: {path} line 2: field evidence.0.memory_id: not a valid UUID",
        f"error: 2 invalid rows in {path}; nothing written (--skip-invalid verifies the valid rows and reports these)",
    ]


def _validation_error() -> Any:
    from pydantic import ValidationError

    from verifier.types import ClaimRequest

    try:
        ClaimRequest.model_validate({"claim": "x", "evidence": "abc"})
    except ValidationError as exc:
        return exc
    raise AssertionError("expected a ValidationError")  # pragma: no cover


def test_errors_carry_no_pydantic_link(capsys: pytest.CaptureFixture[str], fake_model_dir: Path) -> None:
    """Bug: CLI error lines could end with pydantic's "For further information visit https://errors.pydantic.dev/..."."""
    exc = _validation_error()
    assert "errors.pydantic.dev" in str(exc)
    from verifier.types import ClaimVerificationError

    def broken_engine(config: ClaimVerificationConfig, runtime: RuntimeOptions) -> ClaimVerifier:
        raise ClaimVerificationError(f"{fake_model_dir / MANIFEST_NAME} is not a valid manifest: {exc}")

    code, out, err = run_main(
        capsys, "verify", str(CLAIMS), "--model-dir", str(fake_model_dir), "-q", make_verifier=broken_engine
    )
    assert (code, out) == (1, "")
    assert err == (
        f"error: {fake_model_dir / MANIFEST_NAME} is not a valid manifest: 1 validation error for ClaimRequest "
        "evidence Input should be a valid tuple [type=tuple_type, input_value='abc', input_type=str]\n"
    )

    def unexpected(config: ClaimVerificationConfig, runtime: RuntimeOptions) -> ClaimVerifier:
        raise exc

    code, out, err = run_main(capsys, "verify", str(CLAIMS), "--model-dir", str(fake_model_dir), "-q", make_verifier=unexpected)
    assert (code, out) == (2, "")
    assert err == "error: ClaimRequest: field evidence: must be a list\n"


def test_unknown_option_is_reported_by_the_subcommand() -> None:
    """Bug: `verify x.jsonl --frobnicate` was reported by the top-level parser, not `python -m verifier verify`."""
    proc = run_cli("verify", "x.jsonl", "--frobnicate")
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("usage: python -m verifier verify [-h] [-o OUTPUT]")
    assert lines[-1] == "python -m verifier verify: error: unrecognized arguments: --frobnicate"
    proc = run_cli("--frobnicate", "info")
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[-1] == "python -m verifier: error: unrecognized arguments: --frobnicate"


def test_a_repeated_key_in_an_input_row_is_invalid_json(
    capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path, tmp_path: Path
) -> None:
    """Regression (trust on every surface, item 4): ``{"claim": A, ..., "claim": B}`` was verified as B, while
    another parser reads A. Every reader refuses it, naming the key and the line."""
    line = json.dumps(good_row(2))
    doubled = line[:-1] + ', "claim": "The deployment date is May 5."}'
    source = write_jsonl(tmp_path / "in.jsonl", [good_row(1), doubled])
    code, out, err = run_main(capsys, "verify", str(source), "--model-dir", str(fake_model_dir), make_verifier=scripted.make)
    assert (code, out) == (2, "")
    column = len(line) + 2
    assert err.splitlines()[0] == f"error: {source} line 2: invalid JSON: duplicate key 'claim' in a JSON object (column {column})"
    nested = tmp_path / "rows.json"
    nested.write_text('[\n  {"claim": "x",\n   "evidence": [{"reference": "M1", "reference": "M2"}]}\n]\n', encoding="utf-8")
    code, _, err = run_main(capsys, "verify", str(nested), "--model-dir", str(fake_model_dir), make_verifier=scripted.make)
    assert code == 2
    assert err.splitlines()[0] == f"error: {nested} line 3: invalid JSON: duplicate key 'reference' in a JSON object (column 37)"


@pytest.mark.parametrize(
    "argv, flag, value",
    [
        (["verify", "x.jsonl"], "--max-evidence", " 3"),
        (["verify", "x.jsonl"], "--batch-size", "1_0"),
        (["verify", "x.jsonl"], "--threads", "\u0661"),
        (["verify", "x.jsonl"], "--max-line-bytes", "2048\n"),
        (["verify", "x.jsonl"], "--entailment-threshold", "\u0660.\u0669"),
        (["verify", "x.jsonl"], "--contradiction-threshold", "0.9_0"),
        (["verify", "x.jsonl"], "--max-group-size", "\u0662"),
        (["check", "x.jsonl"], "--max-group-size", "\u0662"),
        (["assay", "x.jsonl"], "--max-group-size", "\u0662"),
        (["assay", "x.jsonl"], "--seed", " 7"),
    ],
)
def test_numeric_options_are_plain_ascii(capsys: pytest.CaptureFixture[str], argv: list[str], flag: str, value: str) -> None:
    """Regression (trust on every surface, item 20): int() and float() also take surrounding whitespace, digit
    underscores and non-ASCII digits; every numeric option of the CLIs (verifier.argtypes) takes plain ASCII."""
    with pytest.raises(SystemExit) as exc_info:
        cli.main([*argv, f"{flag}={value}"])
    assert exc_info.value.code == 2
    kind = "number" if "threshold" in flag else "integer"
    assert f"argument {flag}: not an {kind}: {value!r}".replace("an number", "a number") in capsys.readouterr().err


def test_an_integer_of_more_than_4300_digits_is_an_invalid_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Regression (adversarial run): int()'s digit limit escaped as a bare ValueError: no line, no field, and
    ``--skip-invalid`` aborted the whole file instead of skipping the row."""
    from verifier.strictjson import loads

    with pytest.raises(json.JSONDecodeError, match="integer literal of more than 4300 digits") as caught:
        loads('{"claim": ' + "9" * 5000 + "}")
    assert (caught.value.lineno, caught.value.colno) == (1, 11)
    source = tmp_path / "in.jsonl"
    source.write_text('{"claim": ' + "9" * 5000 + ', "evidence": []}\n', encoding="utf-8")
    code, _, err = run_main(capsys, "verify", str(source), "--skip-invalid")
    assert code == 0 and f"{source} line 1: invalid JSON: integer literal of more than 4300 digits (column 11)" in err


def test_terminal_controls_in_the_input_are_shown_not_obeyed(
    capsys: pytest.CaptureFixture[str], scripted: Built, fake_model_dir: Path, tmp_path: Path
) -> None:
    """Regression (adversarial run): the one-off report and error messages echoed ESC sequences and bidi
    overrides raw, so a claim or a JSON key could retitle, recolour or reorder the user's terminal."""
    code, out, _ = run_main(capsys, "verify", "--model-dir", str(fake_model_dir), "--claim", "The launch \x1b]0;PWNED\x07 is Tuesday.",
                            "--evidence", "Moved \x1b[31mred \u202eexe.txt", make_verifier=scripted.make)
    assert code == 0 and "\x1b" not in out and "\u202e" not in out and "\x07" not in out
    assert "claim:   The launch \\x1b]0;PWNED\\x07 is Tuesday." in out and "Moved \\x1b[31mred \\u202eexe.txt" in out
    code, out, _ = run_main(capsys, "verify", "--model-dir", str(fake_model_dir), "--claim", "The launch \x1b[2J is Tuesday.",
                            "--evidence", "x y", "--json", make_verifier=scripted.make)
    assert code == 0 and json.loads(out)["claim"] == "The launch \x1b[2J is Tuesday."  # JSON keeps the exact text
    source = tmp_path / "in.jsonl"
    source.write_text('{"claim": "x y", "evidence": [], "\\u001b[31mevil": 1}\n', encoding="utf-8")
    code, _, err = run_main(capsys, "verify", str(source), "--model-dir", str(fake_model_dir), make_verifier=scripted.make)
    assert code == 2 and "\x1b" not in err and "field \\x1b[31mevil: unknown field" in err


def test_the_input_row_verify_help_shows_is_one_that_verify_reads(
    capsys: pytest.CaptureFixture[str], tiny_model_dir: Path, tmp_path: Path
) -> None:
    """Regression (stop 43's new-user trial): `verify --help` said only "JSON Lines file", so a first row was
    guessed (plain strings as evidence, then no memory_id). It now ends with a row, kept on one line."""
    with pytest.raises(SystemExit):
        cli.main(["verify", "--help"])
    row = capsys.readouterr().out.rstrip("\n").splitlines()[-1]
    source = tmp_path / "row.jsonl"
    source.write_text(row + "\n", encoding="utf-8")
    assert cli.main(["verify", str(source), "-o", str(tmp_path / "out.jsonl"), "--model-dir", str(tiny_model_dir), "-q"]) == 0
    (result,) = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert result["claim"] == json.loads(row)["claim"] and len(result["group_scores"]) == len(json.loads(row)["evidence"])
    # what the help says of a row without evidence (new-user trial: it was read as required)
    source.write_text('{"claim": "The launch is on Tuesday."}\n', encoding="utf-8")
    assert cli.main(["verify", str(source), "-o", str(tmp_path / "out.jsonl"), "--model-dir", str(tiny_model_dir), "-q"]) == 0
    bare = json.loads((tmp_path / "out.jsonl").read_text(encoding="utf-8"))
    assert (bare["status"], bare["model_called"], bare["group_scores"]) == ("insufficient", False, [])
