"""``check`` re-decides: a record must be what the decision procedure gives for its own recorded scores (issue 33).

Regression: a genuine ``refuted`` record (entailment 0.01, contradiction 0.97)
edited to ``supported`` with ``result_sha256`` recomputed by the public
:func:`verifier.decision.audit.result_sha256` passed ``check`` in every output
format, and ``verify --resume`` kept such a line. The forged records here are
made exactly as an attacker would: edit, then recompute the digest with the
public function. ``check --rescore`` (last tests) proves the scores themselves.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from verifier import ClaimEvidence, ClaimVerification, ClaimVerificationConfig, ClaimVerifier, ScriptedScorer, check_result, cli
from verifier.decision import audit
from verifier.decision.replay import replay

CLAIM = "The launch is on Tuesday."
REFUTING = "The launch is not on Tuesday."
#: A speech act: the entailment guard blocks it (docs/decision.md §4), whatever its score.
REPORTED = "Someone asked whether the launch is on Tuesday."
SCRIPT = {REFUTING: (0.01, 0.97), REPORTED: (0.95, 0.01)}


def _evidence(text: str, n: int = 1) -> ClaimEvidence:
    return ClaimEvidence(reference=f"m{n}", memory_id=UUID(int=n), text=text)


def _verifier(config: ClaimVerificationConfig = ClaimVerificationConfig(), runtime: Any = None) -> ClaimVerifier:
    return ClaimVerifier(config, scorer=ScriptedScorer(SCRIPT, default=(0.05, 0.05)), runtime=runtime)


def forge(record: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """``record`` with ``fields`` edited and ``result_sha256`` recomputed by the public function (an attacker's edit)."""
    data = {**record, **fields}
    result = ClaimVerification.model_validate(data)
    data["result_sha256"] = audit.result_sha256(
        evaluation=result.evaluation_id,
        status=result.status.value,
        supporting_group=result.supporting_group,
        refuting_group=result.refuting_group,
        supporting_basis=result.supporting_basis,
        refuting_basis=result.refuting_basis,
        group_scores=result.group_scores,
        localized_assessments=result.localized_assessments,
        limitations=result.limitations,
    )
    return data


def forged_supported(record: dict[str, Any]) -> dict[str, Any]:
    """A refuted record turned into ``supported`` by its refuting group (digest recomputed)."""
    return forge(
        record, status="supported", supporting_group=record["refuting_group"], supporting_basis="model_entailment",
        refuting_group=[], refuting_basis=None,
    )


def test_the_genuine_refuted_record_replays_and_the_forged_one_does_not() -> None:
    """Regression: the forged ``supported`` record passed check_result (its digests are consistent)."""
    evidence = [_evidence(REFUTING)]
    genuine = _verifier().verify_sync(CLAIM, evidence)
    assert (genuine.status.value, genuine.group_scores[0].entailment, genuine.group_scores[0].contradiction) == ("refuted", 0.01, 0.97)
    assert check_result(genuine).ok and check_result(genuine, evidence=evidence).ok
    forged = forged_supported(genuine.model_dump(mode="json"))
    # The digests alone are consistent: the old check (digests and structure) found nothing.
    assert ClaimVerification.model_validate(forged).result_sha256 == forged["result_sha256"]
    without = check_result(forged)
    assert without.problems == (
        "the supporting group's recorded entailment is below entailment_threshold 0.8",
        "a recorded contradiction >= 0.8 is a refutation unless its guard dropped it (uncorroborated_model_contradiction), but the status is supported",
    )
    replayed = check_result(forged, evidence=evidence)
    assert "the replay gives status 'refuted', the record says 'supported'" not in replayed.problems  # worded by value
    assert "the replay gives status refuted, the record says supported" in replayed.problems
    assert "the replay gives supporting_basis None, the record says 'model_entailment'" in replayed.problems


def test_a_guard_blocked_support_is_found_only_by_the_full_replay() -> None:
    """A speech act scored at entailment 0.95 is blocked by the guard (insufficient); edited to supported, its
    scores alone allow it (0.95 >= 0.8), but the replay over the passages gives insufficient."""
    evidence = [_evidence(REPORTED)]
    genuine = _verifier().verify_sync(CLAIM, evidence)
    assert genuine.status.value == "insufficient"
    data = genuine.model_dump(mode="json")
    forged = forge(data, status="supported", supporting_group=[str(UUID(int=1))], supporting_basis="model_entailment",
                   localized_assessments=[], limitations=[])
    assert check_result(forged).ok  # nothing in the record alone contradicts it
    report = check_result(forged, evidence=evidence)
    assert "the replay gives status insufficient, the record says supported" in report.problems


def test_a_score_the_replay_needs_but_the_record_lacks_is_named() -> None:
    """A record whose group score was dropped (digest recomputed) cannot be replayed: the missing premise is named."""
    evidence = [_evidence(REFUTING), _evidence("The weather is fine.", 2)]
    genuine = _verifier().verify_sync(CLAIM, evidence)
    data = genuine.model_dump(mode="json")
    forged = forge(data, group_scores=data["group_scores"][:1])
    report = check_result(forged, evidence=evidence)
    assert report.problems == (
        "the replay needs a score the record does not carry: premise 'The weather is fine.' "
        f"(sha256 {audit.sha256_hex('The weather is fine.')[:12]}...)",
    )
    # A score the procedure never asks for is refused too.
    extra = dict(data["group_scores"][1], references=["m9"], memory_ids=[str(UUID(int=9))])
    assert "1 group score(s) name memory ids that are not among the passages (first: [00000000-0000-0000-0000-000000000009])" in (
        check_result(forge(data, group_scores=[*data["group_scores"], extra]), evidence=evidence).problems
    )


@pytest.mark.parametrize(
    "config",
    [
        ClaimVerificationConfig(),
        ClaimVerificationConfig(entailment_policy="model_only", refutation_policy="model_only"),
        ClaimVerificationConfig(entailment_policy="strict", refutation_policy="strict"),
        ClaimVerificationConfig(max_group_size=3, group_candidate_limit=3),
    ],
    ids=["reference", "model_only", "strict", "triples"],
)
def test_genuine_records_replay_exactly(config: ClaimVerificationConfig) -> None:
    """Every genuine record replays to itself (pairs, rechecks and strict rulings included)."""
    passages = [
        _evidence("The launch is on Tuesday.\nThe team wants a quieter launch.", 1),
        _evidence(REPORTED, 2),
        _evidence("The weather is fine.", 3),
        _evidence(REFUTING, 4),
    ]
    verifier = _verifier(config)
    for evidence in (passages, passages[1:3], passages[:1], passages[3:]):
        result = verifier.verify_sync(CLAIM, evidence)
        outcome = replay(result, evidence, config)
        assert outcome.problems == (), (config, [e.reference for e in evidence])
        assert len(outcome.pairs) == len(result.group_scores) + sum(a.model_called for a in result.localized_assessments)
        assert check_result(result, config=config, evidence=evidence).ok
        assert check_result(result, config=config).ok  # the score bounds hold for every genuine record


# --------------------------------------------------------------------------- the command, every format


@pytest.fixture(autouse=True)
def _named_model(request: pytest.FixtureRequest) -> None:
    """The CLI tests resolve a manifest-only model directory (a scripted scorer does the scoring)."""
    if "tmp_path" in request.fixturenames:
        request.getfixturevalue("manifest_only_model_dir")


def _refuted_run(tmp_path: Path, argv: list[str]) -> tuple[Path, Path]:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"id": "r1", "claim": CLAIM, "evidence": [
        {"reference": "m1", "memory_id": str(UUID(int=1)), "text": REFUTING}]}) + "\n", encoding="utf-8")
    out = tmp_path / f"out{len(argv)}.jsonl"
    assert cli.main(["verify", str(source), "-o", str(out), "-q", *argv], make_verifier=lambda c, r: _verifier(c, r)) == 0
    return source, out


def test_check_refuses_the_forged_record_in_every_format(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Regression: the forged supported line passed ``check`` as a bare line, an envelope, a Ray row and a JSON array."""
    source, bare = _refuted_run(tmp_path, [])
    genuine = json.loads(bare.read_text(encoding="utf-8"))
    assert genuine["status"] == "refuted"
    forged = forged_supported(genuine)
    formats = {
        "bare.jsonl": json.dumps(forged) + "\n",
        "envelope.jsonl": json.dumps({"id": "r1", "line": 1, "result": forged}) + "\n",
        "ray.jsonl": json.dumps({"id": "r1", "result": json.dumps(forged), "error": None}) + "\n",
        "array.json": json.dumps([{"id": "r1", "line": 1, "result": forged}]),
    }
    for name, text in formats.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        capsys.readouterr()
        assert cli.main(["check", str(path), "-q"]) == 1, name
        err = capsys.readouterr().err
        assert "the supporting group's recorded entailment is below entailment_threshold 0.8" in err, name
        assert cli.main(["check", str(path), "-q", "--inputs", str(source)]) == 1, name
        assert "the replay gives status refuted, the record says supported" in capsys.readouterr().err, name
    # The genuine line checks out, replayed against its input.
    assert cli.main(["check", str(bare), "--inputs", str(source)]) == 0
    err = capsys.readouterr().err
    assert "decision replayed from the scores only" not in err and "checked 1 record: 1 ok" in err


def test_check_inputs_names_a_record_that_answers_no_row(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A record replayed against an input that lacks its claim and evidence is refused, not passed over."""
    source, bare = _refuted_run(tmp_path, [])
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "x", "claim": "Something else.", "evidence": []}) + "\n", encoding="utf-8")
    assert cli.main(["check", str(bare), "-q", "--inputs", str(other)]) == 1
    assert "no row of --inputs has this record's claim and evidence" in capsys.readouterr().err
    assert cli.main(["check", str(bare), "--rescore"]) == 2
    assert "--rescore needs --inputs FILE" in capsys.readouterr().err


def test_resume_does_not_keep_a_forged_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Regression: ``verify --resume`` kept the forged supported line ("1 row already ... kept")."""
    source, out = _refuted_run(tmp_path, ["--resume"])
    envelope = json.loads(out.read_text(encoding="utf-8"))
    forged_line = json.dumps({"id": "r1", "line": 1, "result": forged_supported(envelope["result"])},
                             ensure_ascii=False, separators=(",", ":")) + "\n"
    # Written byte for byte as verify renders an envelope, so only the replay can refuse it.
    from verifier.cli.bulk import envelope_text

    rendered = envelope_text("r1", 1, result=ClaimVerification.model_validate(forged_supported(envelope["result"])).model_dump_json())
    out.write_text(rendered, encoding="utf-8")
    capsys.readouterr()
    code = cli.main(["verify", str(source), "-o", str(out), "--resume"], make_verifier=lambda c, r: _verifier(c, r))
    err = capsys.readouterr().err
    assert code == 2, err
    assert "holds a result that does not check out" in err and "kept" not in err
    assert out.read_text(encoding="utf-8") == rendered  # nothing appended
    assert forged_line  # (the plain JSON form, for reference)


def test_resume_replays_against_the_row(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The guard-blocked support edited to supported passes the score bounds; --resume's replay over the row refuses it."""
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"id": "r1", "claim": CLAIM, "evidence": [
        {"reference": "m1", "memory_id": str(UUID(int=1)), "text": REPORTED}]}) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    make = lambda c, r: _verifier(c, r)  # noqa: E731
    assert cli.main(["verify", str(source), "-o", str(out), "-q", "--resume"], make_verifier=make) == 0
    envelope = json.loads(out.read_text(encoding="utf-8"))
    assert envelope["result"]["status"] == "insufficient"
    forged = forge(envelope["result"], status="supported", supporting_group=[str(UUID(int=1))],
                   supporting_basis="model_entailment", localized_assessments=[], limitations=[])
    assert check_result(forged).ok
    from verifier.cli.bulk import envelope_text

    out.write_text(envelope_text("r1", 1, result=ClaimVerification.model_validate(forged).model_dump_json()), encoding="utf-8")
    capsys.readouterr()
    assert cli.main(["verify", str(source), "-o", str(out), "--resume"], make_verifier=make) == 2
    assert "the replay gives status insufficient, the record says supported" in capsys.readouterr().err


# --------------------------------------------------------------------------- check --rescore: the scores follow from the model

ROW = {"id": "r1", "claim": CLAIM, "evidence": [{"reference": "m1", "memory_id": str(UUID(int=1)), "text": REFUTING}]}


def test_rescore_proves_the_scores(capsys: pytest.CaptureFixture[str], tmp_path: Path, tiny_model_dir: Path) -> None:
    """check --rescore re-scores every premise with the model: an edited score that changes no decision passes the
    replay, but not the re-scoring (float32: exact)."""
    rows = [
        {"id": "a", "claim": "The launch is on Tuesday.", "evidence": [
            {"reference": "m1", "memory_id": str(UUID(int=1)), "text": "The launch is on Tuesday."},
            {"reference": "m2", "memory_id": str(UUID(int=2)), "text": "The team met on Monday."}]},
        {"id": "b", "claim": "Nadia leads Atlas.", "evidence": [
            {"reference": "m3", "memory_id": str(UUID(int=3)), "text": "Nadia leads the Atlas project."}]},
        {"id": "c", "claim": "Nadia leads Atlas.", "evidence": []},  # nothing scored: nothing to re-score
    ]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert cli.main(["verify", str(source), "-o", str(out), "-q", "--model-dir", str(tiny_model_dir)]) == 0
    capsys.readouterr()
    argv = ["check", str(out), "--inputs", str(source), "--rescore", "--model-dir", str(tiny_model_dir)]
    code, err = cli.main(argv), capsys.readouterr().err
    assert code == 0, err
    assert "note: 2 records: every replayed score re-scored with the engine the record names: equal exactly" in err.splitlines()
    # regression (new-user trial): the notes added up to fewer records than were checked
    assert "note: 1 record: no score to re-score (the record holds none: no passage was scored)" in err.splitlines()
    assert err.splitlines()[-1] == "checked 3 records: 3 ok, 0 with problems"
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()][:2]
    score = records[1]["group_scores"][0]
    nudged = dict(score, entailment=score["entailment"] + 1e-7, neutral=score["neutral"] - 1e-7)
    edited = forge(records[1], group_scores=[nudged])
    path = tmp_path / "edited.jsonl"
    path.write_text(json.dumps(records[0]) + "\n" + json.dumps(edited) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert cli.main(["check", str(path), "-q", "--inputs", str(source)]) == 0  # the decision still follows
    assert cli.main([*argv[:1], str(path), *argv[2:], "-q"]) == 1
    err = capsys.readouterr().err
    assert f"{path} line 2: the model scores the group premise 'Nadia leads the Atlas project.' at" in err
    assert "tolerance 0: held to its engine exactly)" in err and f"{path} line 1" not in err
    # regression (stop 43's adversarial run): the note said every score was equal for the mismatched record too
    assert cli.main([*argv[:1], str(path), *argv[2:]]) == 1
    assert "note: 1 record: every replayed score re-scored with the engine the record names: equal exactly" in (
        capsys.readouterr().err.splitlines())


def test_rescore_of_an_int8_variant_uses_its_run_to_run_spread(capsys: pytest.CaptureFixture[str], tmp_path: Path, tiny_int8_dir: Path) -> None:
    """A dynamic-int8 variant's batched scores depend on its batch: --rescore holds them to twice the spread the
    exporter measured between batch layouts (issue 47: it used the export gate, 0.3 on the smoke model, so a
    forged score within it passed)."""
    from verifier.engine.identity import read_manifest_if_present

    spread = read_manifest_if_present(tiny_int8_dir).variants["int8"].parity.run_prob_spread  # type: ignore[union-attr]
    assert spread is not None and spread > 0  # dynamic int8 quantises each batch: its layouts differ
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(ROW) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert cli.main(["verify", str(source), "-o", str(out), "-q", "--model-dir", str(tiny_int8_dir), "--variant", "int8"]) == 0
    capsys.readouterr()
    # no --variant: the record names its engine
    assert cli.main(["check", str(out), "--inputs", str(source), "--rescore", "--model-dir", str(tiny_int8_dir)]) == 0
    assert (f"note: 1 record: every replayed score re-scored with the engine the record names: equal within {2 * spread:.3g} "
            "(2 x the run-to-run spread variant int8 recorded at export)") in capsys.readouterr().err.splitlines()


def test_an_older_schema_is_not_replayed_by_this_procedure() -> None:
    """A genuine schema 2 record (no localized rechecks in that procedure) is bound-checked, never refused by a replay
    whose schema differs."""
    from test_check import EVIDENCE, _legacy, results

    genuine = _legacy({k: v for k, v in results()[1].model_dump(mode="json").items() if k != "localized_assessments"}
                      | {"schema_version": 2})
    report = check_result(genuine, evidence=EVIDENCE[:1])
    assert report.ok and report.replay is None
    assert any(note.startswith("schema 2: decision checked by the score bounds only") for note in report.notes)


_TEXTS = (
    "The launch is on Tuesday.", REFUTING, REPORTED, "If the budget passes, the launch is on Tuesday.",
    "The launch is on Tuesday.\nThe team wants a quieter launch.", "The weather is fine.",
    "The launch was never on Tuesday.", "Maybe the launch is on Tuesday.", "The launch is on Wednesday, not Tuesday.",
    "The release costs 5 dollars.", "The launch is on Tuesday. I think so?",
)


class _SeededScorer:
    """Scores each premise once from a seeded generator: strong entailment, strong contradiction, near misses, low."""

    def __init__(self, rng: Any) -> None:
        self.rng, self.memo = rng, {}  # type: dict[str, tuple[float, float, float]]

    def score(self, pairs: list[tuple[str, str]]) -> Any:
        import numpy as np

        for premise, _ in pairs:
            if premise not in self.memo:
                k = self.rng.random()
                e, c = ((0.85 + 0.1 * self.rng.random(), 0.01) if k < 0.3 else (0.01, 0.85 + 0.1 * self.rng.random())
                        if k < 0.55 else (0.5, 0.45) if k < 0.65 else (0.1 * self.rng.random(), 0.1 * self.rng.random()))
                self.memo[premise] = (e, c, 1 - e - c)
        return np.asarray([self.memo[premise] for premise, _ in pairs])


def test_no_genuine_record_is_refused() -> None:
    """300 seeded random verifications (every policy, group sizes 1-3, provenance, guarded texts): each genuine
    record passes the score bounds and the full replay (a false refusal would make --resume refuse its own output)."""
    import random

    rng = random.Random(33)
    for _ in range(300):
        config = ClaimVerificationConfig(
            entailment_policy=rng.choice(["speech_act_guarded", "model_only", "strict"]),
            refutation_policy=rng.choice(["explicit_corroboration", "model_only", "strict"]),
            max_group_size=rng.choice([1, 2, 3]), group_candidate_limit=rng.choice([2, 3, 8]),
        )
        evidence = [
            ClaimEvidence(reference=f"m{j}", memory_id=UUID(int=j + 1), text=rng.choice(_TEXTS) + rng.choice(["", f" ({j})"]),
                          lifecycle_state=rng.choice([None, None, "stable", "superseded", "contested"]),
                          epistemic_type=rng.choice([None, None, "observed", "hypothetical"]))
            for j in range(rng.randint(0, 5))
        ]
        claim = rng.choice([CLAIM, "The release costs 5 dollars.", REFUTING])
        result = ClaimVerifier(config, scorer=_SeededScorer(rng)).verify_sync(claim, evidence)
        assert check_result(result, config=config).problems == (), (config, claim, evidence)
        assert check_result(result, config=config, evidence=evidence).problems == (), (config, claim, evidence)
