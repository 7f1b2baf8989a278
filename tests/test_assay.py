"""Assays (docs/assay.md): every metric, interval and sweep row of a small cohort derived by hand.

The cohort (default thresholds 0.80 / 0.80, one passage per claim, scripted scores):

====  ==================  =====  =====  ===============  ========
name  label               ent    con    status           category
====  ==================  =====  =====  ===============  ========
c1    supported           0.95   0.01   supported (TP)   A
c2    supported           0.90   0.02   supported (TP)   B
c3    not_supported       0.85   0.05   supported (FP)   A
c4    supported           0.70   0.05   insufficient(FN) B
c5    refuted             0.02   0.95   refuted (TN)     A   weekday mismatch
c6    partially_supported 0.03   0.90   refuted (TN)     B   number mismatch
c7    insufficient        0.05   0.85   refuted (TN)     A   weekday mismatch
c8    not_supported       0.10   0.10   insufficient(TN) B
====  ==================  =====  =====  ===============  ========

TP 2, FP 1, FN 1, TN 4: precision 2/3, recall 2/3, F1 2·2/(2·2+1+1) = 2/3,
balanced accuracy (2/3 + 4/5)/2 = 11/15, false-support rate 1/5, unsafe
supports [c3]. Refutation precision counts claims with a status label only:
c5 (refuted, right) and c7 (refuted, labelled insufficient) → 1/2; c6 has a
three-way label and is left out.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np
import pytest

from verifier import ClaimVerifier, ScriptedScorer
from verifier import cli
from verifier.assay import AssayPlan, LabelledClaim, RecordingScorer, parse_constraint, run_assay
from verifier.assay.bootstrap import intervals
from verifier.assay.labels import split_labelled
from verifier.assay.metrics import outcomes
from verifier.assay.recording import MissingScores, ScoreIdentity, read_scores, write_scores
from verifier.engine.manifest import MANIFEST_NAME, FileRecord, Manifest, ParityReport
from verifier.options import RuntimeOptions
from verifier.scoring import Probabilities, RecordedScorer
from verifier.types import ClaimVerificationConfig
from verifier.validation import validate_request

COHORT: list[tuple[str, str, str, str, tuple[float, float], str]] = [
    ("c1", "supported", "The launch is Tuesday.", "The launch is on Tuesday.", (0.95, 0.01), "A"),
    ("c2", "supported", "The server runs Linux.", "The server runs Linux today.", (0.90, 0.02), "B"),
    ("c3", "not_supported", "The build passed.", "The build log is green.", (0.85, 0.05), "A"),
    ("c4", "supported", "Mia owns the budget.", "Mia manages the budget.", (0.70, 0.05), "B"),
    ("c5", "refuted", "The review is on Monday.", "The review is on Friday.", (0.02, 0.95), "A"),
    ("c6", "partially_supported", "The port is 8080.", "The port is 8443.", (0.03, 0.90), "B"),
    ("c7", "insufficient", "The team ships on Friday.", "Shipping happens on Thursday.", (0.05, 0.85), "A"),
    ("c8", "not_supported", "The cache is warm.", "Cache metrics exist.", (0.10, 0.10), "B"),
]
SCORES: dict[Union[str, tuple[str, str]], Probabilities] = {text: score for _, _, _, text, score, _ in COHORT}
LABELS = [label for _, label, *_ in COHORT]
#: Only the reference policies: their behaviour on this cohort is derived above (new policies are swept by the CLI).
POLICIES = dict(entailment_policies=("speech_act_guarded", "model_only"), refutation_policies=("explicit_corroboration",))


def rows() -> list[dict[str, Any]]:
    return [
        {
            "id": name,
            "claim": claim,
            "evidence": [{"reference": "M1", "memory_id": str(uuid.UUID(int=index + 1)), "text": text}],
            "label": label,
            "category": category,
        }
        for index, (name, label, claim, text, _, category) in enumerate(COHORT)
    ]


def labelled() -> list[LabelledClaim]:
    claims = []
    for line, row in enumerate(rows(), start=1):
        rest, label, category = split_labelled(row)
        claims.append(LabelledClaim(line, validate_request(rest, ClaimVerificationConfig()), label, category))
    return claims


def scripted() -> ScriptedScorer:
    return ScriptedScorer(SCORES, default=(0.02, 0.01), resolved_revision="f" * 40)


def plan(**overrides: Any) -> AssayPlan:
    values: dict[str, Any] = dict(entailment_thresholds=(0.7, 0.9), contradiction_thresholds=(0.8,), seed=7, resamples=200, **POLICIES)
    values.update(overrides)
    return AssayPlan(**values)


def live_assay(the_plan: Optional[AssayPlan] = None) -> tuple[Any, RecordingScorer, ScriptedScorer]:
    source = scripted()
    scorer = RecordingScorer(live=lambda: source)
    return run_assay(labelled(), the_plan or plan(), scorer), scorer, source


# ---------------------------------------------------------------- metrics by hand


def test_overall_metrics_confusion_and_unsafe_supports_match_the_hand_derivation() -> None:
    outcome, _, _ = live_assay()
    overall = outcome.body["overall"]
    statuses = [item["status"] for item in outcome.body["claims"]]
    assert statuses == ["supported", "supported", "supported", "insufficient", "refuted", "refuted", "refuted", "insufficient"]
    assert (overall["tp"], overall["fp"], overall["fn"], overall["tn"]) == (2, 1, 1, 4)
    assert overall["precision"] == pytest.approx(2 / 3)
    assert overall["recall"] == pytest.approx(2 / 3)
    assert overall["f1"] == pytest.approx(2 / 3)
    assert overall["balanced_accuracy"] == pytest.approx(11 / 15)
    assert overall["false_support_rate"] == pytest.approx(1 / 5)
    assert overall["refutation_precision"] == pytest.approx(1 / 2)
    assert overall["unsafe_supports"] == ["c3"]
    zero = {"supported": 0, "refuted": 0, "contested": 0, "insufficient": 0, "incomplete": 0}
    assert overall["confusion_matrix"] == {
        "supported": {**zero, "supported": 2, "insufficient": 1},
        "refuted": {**zero, "refuted": 1},
        "insufficient": {**zero, "refuted": 1},
        "partially_supported": {**zero, "refuted": 1},
        "not_supported": {**zero, "supported": 1, "insufficient": 1},
    }


def test_per_category_metrics_match_the_hand_derivation() -> None:
    categories = live_assay()[0].body["categories"]
    a, b = categories["A"], categories["B"]
    # A = c1 TP, c3 FP, c5 TN, c7 TN
    assert (a["tp"], a["fp"], a["fn"], a["tn"]) == (1, 1, 0, 2)
    assert (a["precision"], a["recall"]) == (0.5, 1.0)
    assert a["f1"] == pytest.approx(2 / 3) and a["balanced_accuracy"] == pytest.approx(5 / 6)
    assert a["false_support_rate"] == pytest.approx(1 / 3) and a["refutation_precision"] == 0.5
    assert a["unsafe_supports"] == ["c3"]
    # B = c2 TP, c4 FN, c6 TN, c8 TN; c6's three-way label leaves refutation precision undefined
    assert (b["tp"], b["fp"], b["fn"], b["tn"]) == (1, 0, 1, 2)
    assert (b["precision"], b["recall"], b["false_support_rate"]) == (1.0, 0.5, 0.0)
    assert b["f1"] == pytest.approx(2 / 3) and b["balanced_accuracy"] == pytest.approx(3 / 4)
    assert b["refutation_precision"] is None and b["unsafe_supports"] == []


def _independent_interval(gold: list[bool], pred: list[bool], seed: int, resamples: int) -> tuple[float, float]:
    """Precision's 95 % interval computed claim by claim, without the package."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(gold), size=(resamples, len(gold)))
    values = []
    for draw in draws:
        tp = sum(1 for i in draw if gold[i] and pred[i])
        fp = sum(1 for i in draw if not gold[i] and pred[i])
        if tp + fp:
            values.append(tp / (tp + fp))
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def test_bootstrap_interval_equals_an_independent_numpy_computation_with_the_same_seed() -> None:
    outcome, _, _ = live_assay()
    gold = [label == "supported" for label in LABELS]
    pred = [item["status"] == "supported" for item in outcome.body["claims"]]
    low, high = _independent_interval(gold, pred, seed=7, resamples=200)
    interval = outcome.body["overall"]["intervals"]["precision"]
    assert (interval["low"], interval["high"]) == (pytest.approx(low), pytest.approx(high))
    assert interval["low"] <= 2 / 3 <= interval["high"]
    again = intervals(outcomes(LABELS, [item["status"] for item in outcome.body["claims"]]), seed=7, resamples=200)
    assert again["precision"] == interval  # fixed seed: the same interval every time


def test_sweep_rows_and_the_best_row_under_a_precision_target() -> None:
    outcome, _, _ = live_assay(plan(targets=(parse_constraint("precision>=0.9"),)))
    sweep = outcome.body["sweep"]
    assert len(sweep["rows"]) == 2 * 1 * 2 * 1  # policies × thresholds
    low = {"tp": 3, "fp": 1, "fn": 0, "tn": 4, "precision": 3 / 4, "recall": 1.0, "f1": 6 / 7,
           "balanced_accuracy": 9 / 10, "false_support_rate": 1 / 5, "refutation_precision": 1 / 2, "unsafe_supports": 1}
    high = {"tp": 2, "fp": 0, "fn": 1, "tn": 5, "precision": 1.0, "recall": 2 / 3, "f1": 4 / 5,
            "balanced_accuracy": 5 / 6, "false_support_rate": 0.0, "refutation_precision": 1 / 2, "unsafe_supports": 0}
    for row in sweep["rows"]:
        expected = low if row["entailment_threshold"] == 0.7 else high
        assert {key: row[key] for key in expected} == pytest.approx(expected)
    best = sweep["best"]
    assert (best["entailment_policy"], best["entailment_threshold"], best["contradiction_threshold"]) == (
        "speech_act_guarded", 0.9, 0.8)
    assert "fresh" in sweep["warning"]
    none = live_assay(plan(targets=(parse_constraint("precision>1"),)))[0]
    assert none.body["sweep"]["best"] is None


def test_gates_pass_and_fail_on_purpose() -> None:
    failing = live_assay(plan(gates=(parse_constraint("precision>=0.9"), parse_constraint("unsafe_supports==0"))))[0]
    assert [gate["passed"] for gate in failing.body["gates"]] == [False, False]
    assert failing.body["gates_passed"] is False
    passing = live_assay(plan(gates=(parse_constraint("precision>=0.6"), parse_constraint("unsafe_supports<=1"))))[0]
    assert passing.body["gates"][1] == {"gate": "unsafe_supports<=1", "actual": 1.0, "passed": True}
    assert passing.body["gates_passed"] is True


# ---------------------------------------------------------------- recording and replay


def test_replay_from_recorded_scores_equals_the_live_run(tmp_path: Path) -> None:
    live, recording, source = live_assay()
    scored = [pair for call in source.calls for pair in call]
    assert len(scored) == len(set(scored)) == recording.live_pairs  # every pair scored once
    path = tmp_path / "scores.jsonl"
    write_scores(path, recording.records, ScoreIdentity("m", "r", recording.resolved_revision))
    records, identity = read_scores(path)
    assert identity.resolved_revision == "f" * 40
    replay_scorer = RecordingScorer(records, offline=True, resolved_revision=identity.resolved_revision)
    replay = run_assay(labelled(), plan(), replay_scorer)
    assert replay.body == live.body
    assert [r.model_dump() for r in replay.results] == [r.model_dump() for r in live.results]
    assert replay_scorer.live_calls == 0
    # the file is the format RecordedScorer reads
    verifier = ClaimVerifier(scorer=RecordedScorer.from_jsonl(path, resolved_revision="f" * 40))
    assert [r.result_sha256 for r in verifier.verify_many_sync([c.request for c in labelled()])] == [
        r.result_sha256 for r in live.results]


def test_offline_replay_refuses_pairs_it_lacks_and_an_edited_scores_file(tmp_path: Path) -> None:
    with pytest.raises(MissingScores):
        run_assay(labelled(), plan(), RecordingScorer({}, offline=True))
    path = tmp_path / "scores.jsonl"
    write_scores(path, {("p", "h"): (0.5, 0.25, 0.25)}, ScoreIdentity("m", "r"))
    path.write_text(path.read_text().replace("0.5", "0.6"))
    with pytest.raises(ValueError, match="edited"):
        read_scores(path)


# ---------------------------------------------------------------- the command line


def write_manifest(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "model.onnx").write_bytes(b"not a real model")
    manifest = Manifest(
        model="test/tiny", requested_revision="a" * 40, resolved_revision="a" * 40, source="smoke",
        random_weights=True,
        files={"model.onnx": FileRecord(sha256=hashlib.sha256(b"not a real model").hexdigest(), size=16)},
        labels=("contradiction", "entailment", "neutral"), max_length=128, opset=17,
        inputs=("input_ids", "attention_mask"), pad_token_id=0, versions={"onnxruntime": "1.0-test"},
        parity=ParityReport(passed=True, pairs=12, atol=1e-4, max_abs_logit_diff=0.0, max_abs_prob_diff=0.0,
                            argmax_agreement=1.0, token_ids_identical=True),
        created_at="2026-11-29T12:00:00Z",
    )
    (directory / MANIFEST_NAME).write_text(manifest.model_dump_json(indent=2), encoding="utf-8")


class Factory:
    """``make_verifier`` for :func:`verifier.cli.main`: the CLI's verifier over one scripted scorer."""

    def __init__(self) -> None:
        self.scorer = scripted()
        self.built = 0

    def __call__(self, config: ClaimVerificationConfig, runtime: RuntimeOptions) -> ClaimVerifier:
        self.built += 1
        return ClaimVerifier(config, scorer=self.scorer, runtime=runtime)


@pytest.fixture()
def cohort(tmp_path: Path) -> Path:
    path = tmp_path / "cohort.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows()), encoding="utf-8")
    return path


@pytest.fixture()
def model_dir(tmp_path: Path) -> Path:
    write_manifest(tmp_path / "model")
    return tmp_path / "model"


GRID = ["--entailment-grid", "0.7,0.9", "--contradiction-grid", "0.8", "--resamples", "100", "--seed", "3", "-q"]


def assay(*argv: str, factory: Optional[Factory] = None) -> int:
    return cli.main(["assay", *argv], make_verifier=factory or Factory())


def test_cli_writes_the_report_and_an_offline_replay_has_the_same_digests(cohort: Path, model_dir: Path, tmp_path: Path) -> None:
    factory = Factory()
    out = tmp_path / "report"
    assert assay(str(cohort), "--model-dir", str(model_dir), "-o", str(out), *GRID, factory=factory) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["overall"]["precision"] == pytest.approx(2 / 3) and report["overall"]["unsafe_supports"] == ["c3"]
    assert report["run"]["model_calls"] > 0 and report["scores"]["model"] == "test/tiny"
    assert report["scores"]["manifest_sha256"] == hashlib.sha256((model_dir / MANIFEST_NAME).read_bytes()).hexdigest()
    policies = {(row["entailment_policy"], row["refutation_policy"]) for row in report["sweep"]["rows"]}
    import typing
    from verifier.types import EntailmentPolicy, RefutationPolicy
    assert policies == {(e, r) for e in typing.get_args(EntailmentPolicy) for r in typing.get_args(RefutationPolicy)}
    assert (out / "report.md").read_text().startswith("# Assay report")
    assert len((out / "results.jsonl").read_text().splitlines()) == len(COHORT)
    replay = tmp_path / "replay"
    offline = Factory()
    code = assay(str(cohort), "--model-dir", str(model_dir), "-o", str(replay), "--scores", str(out / "scores.jsonl"),
                 "--offline", *GRID, factory=offline)
    assert code == 0 and offline.scorer.calls == []
    again = json.loads((replay / "report.json").read_text())
    assert again["report_sha256"] == report["report_sha256"] and again["results_sha256"] == report["results_sha256"]
    assert {k: v for k, v in again.items() if k != "run"} == {k: v for k, v in report.items() if k != "run"}
    assert again["run"]["model_calls"] == 0


def test_cli_offline_refuses_when_a_wider_grid_needs_unrecorded_pairs(cohort: Path, model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Two passages scoring 0.85 each: at 0.8 a single supports; at 0.95 the procedure needs the pair.
    extra = {"id": "c9", "claim": "The lab opens at nine.", "label": "supported", "evidence": [
        {"reference": "M1", "memory_id": str(uuid.UUID(int=91)), "text": "The build log is green."},
        {"reference": "M2", "memory_id": str(uuid.UUID(int=92)), "text": "The launch is on Tuesday."}]}
    with cohort.open("a") as stream:
        stream.write(json.dumps(extra) + "\n")
    out = tmp_path / "report"
    base = ["--model-dir", str(model_dir), "--resamples", "0", "-q"]
    assert assay(str(cohort), "-o", str(out), "--grid", "0.8", *base) == 0
    code = assay(str(cohort), "-o", str(out), "--grid", "0.8,0.97", "--offline", *base)
    assert code == 2
    assert "lacks at least 1 pair needed by 1 claim" in capsys.readouterr().err
    factory = Factory()
    assert assay(str(cohort), "-o", str(out), "--grid", "0.8,0.97", *base, factory=factory) == 0
    assert [len(call) for call in factory.scorer.calls] == [1]  # only the missing pair is scored


def test_cli_registration_freezes_the_plan_refuses_changes_and_binds_its_digest(cohort: Path, model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    registration = tmp_path / "reg.json"
    gates = ["--gate", "precision>=0.6", "--gate", "unsafe_supports<=1"]
    assert assay(str(cohort), "--model-dir", str(model_dir), "--register", str(registration), *GRID, *gates) == 0
    document = json.loads(registration.read_text())
    assert document["input"]["sha256"] == hashlib.sha256(cohort.read_bytes()).hexdigest()
    assert document["plan"]["gates"] == ["precision>=0.6", "unsafe_supports<=1"] and document["plan"]["seed"] == 3
    out = tmp_path / "report"
    assert assay(str(cohort), "--model-dir", str(model_dir), "--registration", str(registration), "-o", str(out), "-q") == 0
    report = json.loads((out / "report.json").read_text())
    assert report["registration_sha256"] == document["registration_sha256"] and report["gates_passed"] is True
    capsys.readouterr()
    # a changed configuration is refused before anything runs
    assert assay(str(cohort), "--model-dir", str(model_dir), "--registration", str(registration), "-o", str(out),
                 "--entailment-threshold", "0.9", "-q") == 2
    assert "entailment_threshold 0.9 != registered 0.8" in capsys.readouterr().err
    # an edited registration is refused
    edited = tmp_path / "edited.json"
    edited.write_text(registration.read_text().replace("precision>=0.6", "precision>=0.1"))
    assert assay(str(cohort), "--model-dir", str(model_dir), "--registration", str(edited), "-o", str(out), "-q") == 2
    # a changed input is refused
    with cohort.open("a") as stream:
        stream.write(json.dumps({**rows()[0], "id": "c10", "label": "not_supported"}) + "\n")
    factory = Factory()
    assert assay(str(cohort), "--model-dir", str(model_dir), "--registration", str(registration), "-o", str(out), "-q",
                 factory=factory) == 2
    assert "the input changed" in capsys.readouterr().err and factory.scorer.calls == []


def test_cli_failing_gate_exits_1(cohort: Path, model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    grid = [arg for arg in GRID if arg != "-q"]  # with the summary
    code = assay(str(cohort), "--model-dir", str(model_dir), "-o", str(tmp_path / "r"), *grid, "--gate", "unsafe_supports==0")
    assert code == 1
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["gates"][0]["passed"] is False
    # the summary rounds to 3 significant digits (regression: "precision 0.2857142857142857 ... (actual 5.0)")
    precision, actual = report["overall"]["precision"], report["gates"][0]["actual"]
    err = capsys.readouterr().err
    shown = "-" if precision is None else f"{precision:.3g}"
    assert f"precision {shown}, " in err and f"gate unsafe_supports==0: FAIL (actual {actual:.3g})" in err


def test_cli_bad_rows_and_bad_usage_exit_2(cohort: Path, model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with cohort.open("a") as stream:
        stream.write(json.dumps({"claim": "x", "label": "maybe"}) + "\n")
        stream.write(json.dumps({"claim": "", "label": "supported"}) + "\n")
    assert assay(str(cohort), "--model-dir", str(model_dir), "-o", str(tmp_path / "r"), *GRID) == 2
    err = capsys.readouterr().err
    assert "line 9: field label:" in err and "line 10: field claim" in err
    with pytest.raises(SystemExit) as exc:
        assay(str(cohort), "--target", "precision>>1")
    assert exc.value.code == 2
    assert assay(str(cohort), "--model-dir", str(model_dir)) == 2  # no -o and no --register


@pytest.mark.parametrize("grid", ["0.5:inf:0.1", "0.5:1.0:1e-10", "-1e308:1e308:1e-300", "0.5:1.0:0.004",
                                  ",".join(str(0.5 + n / 1000) for n in range(102))])
def test_a_grid_of_more_than_the_maximum_points_is_refused_at_once(cohort: Path, grid: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Regression (trust on every surface, item 16): ``--grid 0.5:inf:0.1`` (or a step of 1e-10) built its list
    without bound while the arguments were parsed. At most MAX_GRID_POINTS thresholds; refused with exit 2."""
    import time

    from verifier.assay.sweep import MAX_GRID_POINTS, parse_grid

    assert MAX_GRID_POINTS == 101 and len(parse_grid("0.5:1.0:0.005")) == 101
    started = time.monotonic()
    with pytest.raises(SystemExit) as exc:
        assay(str(cohort), f"--grid={grid}", "-o", "unused")
    assert exc.value.code == 2 and time.monotonic() - started < 5
    err = capsys.readouterr().err
    assert "a grid may hold" in err or "START and STOP must be finite numbers" in err


def test_a_registration_is_pinned_by_its_digest_and_refuses_repeated_keys(
    cohort: Path, model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression (item 17): whoever edits a registration can recompute its digest, and a second "gates" key
    replaced the first. A repeated key is refused; --expect-registration-sha256 pins the registration."""
    registration = tmp_path / "reg.json"
    assert assay(str(cohort), "--model-dir", str(model_dir), "--register", str(registration), *GRID,
                 "--gate", "precision>=0.9") == 0
    document = json.loads(registration.read_text())
    pinned = document["registration_sha256"]
    out = tmp_path / "report"
    run = [str(cohort), "--model-dir", str(model_dir), "--registration", str(registration), "-o", str(out), "-q"]
    assert assay(*run) == 1  # precision 2/3 fails the registered gate
    assert assay(*run, "--expect-registration-sha256", pinned.upper()) == 1
    # Weakened, its digest recomputed (sha256 of the canonical JSON of the other keys, computed here by hand):
    weakened = {**document, "plan": {**document["plan"], "gates": ["precision>=0.1"]}}
    body = {k: v for k, v in weakened.items() if k != "registration_sha256"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    weakened["registration_sha256"] = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    registration.write_text(json.dumps(weakened, indent=2))
    capsys.readouterr()
    assert assay(*run) == 0  # the inherent limit: an unsigned registration, consistently edited, passes
    factory = Factory()
    assert assay(*run, "--expect-registration-sha256", pinned, factory=factory) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {registration} has registration_sha256 {weakened['registration_sha256']}, not the pinned {pinned}: "
        "it was changed (and its digest recomputed) since it was pinned; nothing run"
    )
    assert factory.built == 0
    # A second "gates" key (the last one would win) is refused, naming the key and its line.
    text = json.dumps(document, indent=2)
    lines = text.splitlines()
    gates_line = next(number for number, line in enumerate(lines, start=1) if '"gates"' in line)
    doubled = text.replace('"gates": [', '"gates": [\n      "precision>=0.1"\n    ],\n    "gates": [', 1)
    registration.write_text(doubled)
    assert assay(*run) == 2
    assert f"duplicate key 'gates' in a JSON object: line {gates_line + 3} column 5" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        assay(*run, "--expect-registration-sha256", "abc")
    assert "expected 64 hex digits" in capsys.readouterr().err
    assert assay(str(cohort), "--model-dir", str(model_dir), "-o", str(out), "--expect-registration-sha256", pinned) == 2


def test_a_repeated_key_in_a_labelled_row_is_refused(cohort: Path, model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Regression (item 4): ``{"label": "not_supported", ..., "label": "supported"}`` was read as its last label."""
    row = json.dumps({**rows()[0], "label": "not_supported"})
    with cohort.open("a") as stream:
        stream.write(row[:-1] + ', "label": "supported"}\n')
    assert assay(str(cohort), "--model-dir", str(model_dir), "-o", str(tmp_path / "r"), *GRID) == 2
    assert f"{cohort} line {len(COHORT) + 1}: invalid JSON: duplicate key 'label' in a JSON object" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_end_to_end_on_the_tiny_model(cohort: Path, tiny_model_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    argv = ["assay", str(cohort), "--model-dir", str(tiny_model_dir), "--grid", "0.5,0.8", "--resamples", "50", "-q"]
    assert cli.main([*argv, "-o", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["run"]["model_calls"] >= 1 and report["scores"]["manifest_sha256"]
    assert cli.main([*argv, "-o", str(tmp_path / "replay"), "--scores", str(out / "scores.jsonl"), "--offline"]) == 0
    replay = json.loads((tmp_path / "replay" / "report.json").read_text())
    assert replay["report_sha256"] == report["report_sha256"] and replay["run"]["model_calls"] == 0


# ---------------------------------------------------------------- import rules (docs/architecture.md)


def test_the_assay_package_is_decision_side_and_never_imports_onnxruntime() -> None:
    """The rule of tests/test_architecture.py's decision side, for the ``verifier.assay`` package (a directory,
    which that test's ``verifier/<room>.py`` list cannot name): no onnxruntime, tokenizers or engine import, and
    matplotlib only inside functions."""
    import ast

    root = Path(__file__).resolve().parents[1] / "verifier"
    for path in sorted([*(root / "assay").glob("*.py"), root / "cli" / "assay.py"]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module_level = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name.split(".")[0] not in {"onnxruntime", "tokenizers", "torch", "transformers"}, (path, name)
                assert not name.endswith("engine"), (path, name)
                if name.split(".")[0] == "matplotlib":
                    assert id(node) not in module_level, f"{path.name} imports matplotlib at module level"


def test_importing_the_assay_cli_loads_neither_onnxruntime_nor_matplotlib() -> None:
    import subprocess
    import sys

    code = ("import sys, verifier.cli.assay, verifier.assay; "
            "print(sorted(m for m in ('onnxruntime', 'tokenizers', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_figures_are_drawn_with_the_plot_extra_and_their_absence_is_said_without_it(cohort: Path, model_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    assert assay(str(cohort), "--model-dir", str(model_dir), "-o", str(out), *GRID) == 0
    figures = json.loads((out / "report.json").read_text())["run"]["figures"]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert figures == [] and "install the plot extra" in (out / "report.md").read_text()
    else:
        assert figures == ["sweep.png", "confusion.png"]
        assert all((out / name).read_bytes().startswith(b"\x89PNG") for name in figures)


def test_bundle_rows_carry_labels_and_bad_json_names_its_line(tmp_path: Path) -> None:
    from verifier.cli.assay import read_labelled
    from verifier.options import InputLimits

    path = tmp_path / "cohort.jsonl"
    bundle = {"rendered_context": "[M1] The launch is on Tuesday.", "candidates": [
        {"reference": "M1", "memory_id": str(uuid.UUID(int=5)), "rendered_text": "The launch is on Tuesday."},
        {"reference": "M2", "memory_id": str(uuid.UUID(int=6)), "rendered_text": "Not cited."}]}
    path.write_text(
        json.dumps({"id": "b1", "claim": "The launch is Tuesday.", "bundle": bundle, "label": "supported", "category": "dates"})
        + "\n\n{not json\n", encoding="utf-8")
    claims, invalid = read_labelled(str(path), ClaimVerificationConfig(), InputLimits())
    (claim,) = claims
    assert (claim.line, claim.name, claim.label, claim.category) == (1, "b1", "supported", "dates")
    assert [e.text for e in claim.request.evidence] == ["The launch is on Tuesday."]
    assert [(row.line, row.field) for row in invalid] == [(3, None)] and "invalid JSON" in invalid[0].message


def test_recorded_scores_of_another_model_directory_are_refused(cohort: Path, model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report"
    assert assay(str(cohort), "--model-dir", str(model_dir), "-o", str(out), *GRID) == 0
    other = tmp_path / "other"
    write_manifest(other)
    manifest = json.loads((other / MANIFEST_NAME).read_text())
    manifest["created_at"] = "2026-11-30T12:00:00Z"  # same model and revision, another export...
    manifest["files"]["model.onnx"]["sha256"] = "b" * 64  # ...of another graph
    (other / MANIFEST_NAME).write_text(json.dumps(manifest))
    factory = Factory()
    assert assay(str(cohort), "--model-dir", str(other), "-o", str(out), *GRID, factory=factory) == 2
    assert "holds scores of another model: determinants_sha256" in capsys.readouterr().err and factory.scorer.calls == []


def test_adding_a_variant_keeps_the_recorded_scores_valid(cohort: Path, model_dir: Path, tmp_path: Path) -> None:
    """Regression (issue 34): after ``python -m export.variants DIR --variants int8``, ``assay --scores
    runs/first/scores.jsonl --offline`` failed "holds scores of another model: manifest_sha256 ...",
    although ``model.onnx`` was byte-identical: the scores were keyed by the whole manifest."""
    first = tmp_path / "first"
    assert assay(str(cohort), "--model-dir", str(model_dir), "-o", str(first), *GRID) == 0
    manifest = json.loads((model_dir / MANIFEST_NAME).read_text())
    (model_dir / "model.int8.onnx").write_bytes(b"an int8 graph")
    manifest["files"]["model.int8.onnx"] = {"sha256": hashlib.sha256(b"an int8 graph").hexdigest(), "size": 13}
    manifest["variants"]["int8"] = {"file": "model.int8.onnx", "description": "dynamic int8", "parity": manifest["parity"]}
    (model_dir / MANIFEST_NAME).write_text(json.dumps(manifest))
    factory = Factory()
    replay = tmp_path / "replay"
    assert assay(str(cohort), "--model-dir", str(model_dir), "-o", str(replay), "--scores", str(first / "scores.jsonl"),
                 "--offline", *GRID, factory=factory) == 0
    assert factory.scorer.calls == []
    report = json.loads((replay / "report.json").read_text())
    assert report["overall"] == json.loads((first / "report.json").read_text())["overall"]
    meta = json.loads((first / "scores.meta.json").read_text())
    assert meta["determinants"]["graph_sha256"] == hashlib.sha256(b"not a real model").hexdigest()
    assert meta["determinants"]["variant"] is None and meta["determinants_sha256"]
    # the int8 variant's scores are another graph's: not these
    assert assay(str(cohort), "--model-dir", str(model_dir), "--variant", "int8", "-o", str(replay),
                 "--scores", str(first / "scores.jsonl"), "--offline", *GRID, factory=factory) == 2


# ---------------------------------------------------------------- what the report says first


def test_the_report_says_the_identity_weights_and_headline_first_and_keeps_the_long_tables_apart(
    cohort: Path, model_dir: Path, tmp_path: Path
) -> None:
    """Regression: report.md never said the model had random weights (only a stderr warning did), showed
    "resolved `None`" and "1 claims", and ran to 989 lines for 6 claims (the sweep table)."""
    from verifier.assay.report import DETAILS_NAME, markdown, model_facts, write_report

    out = tmp_path / "report"
    assert assay(str(cohort), "--model-dir", str(model_dir), "-o", str(out), *GRID) == 0
    report = json.loads((out / "report.json").read_text())
    text = (out / "report.md").read_text()
    lines = text.splitlines()
    # the command states the model directory (run.model, not digested): random weights come first
    assert lines[2].startswith("> **RANDOM WEIGHTS: this model is a seeded test model.")
    assert lines[4:7] == [
        f"- model: `test/tiny` at revision `{'a' * 40}`, resolved to commit `{report['scores']['resolved_revision']}`",
        f"- weights: **RANDOM** — a seeded test model (`{model_dir.resolve()}`): its scores, and every figure here, mean nothing",
        f"- cohort: `cohort.jsonl`, 8 claims (sha256 `{report['input']['sha256']}`)",
    ]
    assert lines[7].startswith("- support: precision 0.667 [") and lines[7].endswith(", 1 unsafe support")
    assert "- gates: none registered" in lines[8:10]
    assert "None" not in text and not re.search(r"(?<![\d.])1 claims\b", text)  # "1,123.241 claims/s" is fine
    rows = report["sweep"]["rows"]
    assert f"All {len(rows)} operating points and the per-category tables: [{DETAILS_NAME}]({DETAILS_NAME})." in lines
    assert not any(line.startswith("| entailment policy |") for line in lines)  # no sweep table in report.md
    assert len(lines) < 60
    details = (out / DETAILS_NAME).read_text().splitlines()
    table = details[details.index(f"## Threshold sweep ({len(rows)} operating points)"):]
    assert len([line for line in table if line.startswith("| ")]) == 1 + len(rows)  # the header, then one line a row
    assert "## Category `A` (4 claims)" in details

    # the same report without run.model: the weights are said to be unrecorded, never guessed
    del report["run"]["model"]
    assert "- weights: not recorded in this report (the caller did not state the model directory; see its manifest)" in markdown(report).splitlines()
    report["run"]["model"] = model_facts(model_dir)
    written = write_report(report, [], tmp_path / "again")
    assert written[:4] == ["report.json", "report.md", DETAILS_NAME, "results.jsonl"]
    stated = markdown(report).splitlines()
    assert stated[2].startswith("> **RANDOM WEIGHTS: this model is a seeded test model.")
    assert stated[5] == (f"- weights: **RANDOM** — a seeded test model (`{model_dir.resolve()}`): its scores, "
                         "and every figure here, mean nothing")
    assert json.loads((tmp_path / "again" / "report.json").read_text())["report_sha256"] == report["report_sha256"]


def test_a_repeated_key_in_recorded_scores_is_refused(tmp_path: Path) -> None:
    """Regression (trust on every surface, item 4): the sidecar and score lines were read with json.loads."""
    from verifier.assay.recording import meta_path

    path = tmp_path / "scores.jsonl"
    write_scores(path, {("p", "h"): (0.5, 0.25, 0.25)}, ScoreIdentity("m", "r"))
    meta = meta_path(path)
    text = meta.read_text(encoding="utf-8").rstrip()
    meta.write_text(text[:-1] + ', "model": "other"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="duplicate key 'model' in a JSON object"):
        read_scores(path)
