"""Reading results back: ``check_result`` and ``python -m verifier check`` find records edited after the fact.

Regression: a stored result whose status was edited validated silently. The
results checked here are real ones (scripted scores through the public API);
each tamper changes one field the digests cover.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from uuid import UUID

import pytest

from verifier import (
    ClaimEvidence,
    ClaimVerification,
    ClaimVerificationConfig,
    ClaimVerifier,
    ScriptedScorer,
    check_result,
    cli,
)

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = {
    "The launch is Tuesday.": (0.95, 0.01),
    "The launch is not Tuesday; it is Wednesday.": (0.01, 0.97),
    "The team wants a quieter launch.\nThe release shipped on Tuesday.": (0.98, 0.01),
}
EVIDENCE = [
    ClaimEvidence(reference="m1", memory_id=UUID(int=1), text="The launch is Tuesday."),
    ClaimEvidence(reference="m2", memory_id=UUID(int=2), text="The launch is not Tuesday; it is Wednesday."),
]


def verifier() -> ClaimVerifier:
    return ClaimVerifier(scorer=ScriptedScorer(SCRIPT, default=(0.05, 0.05)))


def results() -> list[ClaimVerification]:
    v = verifier()
    return [
        v.verify_sync("The launch is Tuesday.", EVIDENCE),  # contested
        v.verify_sync("The launch is Tuesday.", EVIDENCE[:1]),  # supported
        v.verify_sync("There are four launches.", EVIDENCE, requires_complete_set=True),  # incomplete
        v.verify_sync("The launch is Tuesday.", []),  # insufficient, no model call
        v.verify_sync(  # localized recheck
            "The release shipped on Tuesday.",
            [ClaimEvidence(reference="m3", memory_id=UUID(int=3), text="The team wants a quieter launch.\nThe release shipped on Tuesday.")],
        ),
    ]


@pytest.mark.parametrize("index", range(5))
def test_genuine_results_check_out(index: int) -> None:
    result = results()[index]
    report = check_result(result)
    assert report.ok, report.problems
    assert check_result(result.model_dump_json()).ok and check_result(result.model_dump(mode="json")).ok


def test_with_the_inputs_every_digest_is_checked() -> None:
    result = results()[0]
    report = check_result(result, config=ClaimVerificationConfig(), evidence=EVIDENCE)
    assert report.ok and report.notes == ()
    wrong = check_result(result, config=ClaimVerificationConfig(entailment_threshold=0.9), evidence=EVIDENCE[:1])
    assert wrong.problems == (
        "configuration_sha256 does not match the given configuration",
        "evidence_sha256 does not match the given evidence",
    )


def _edit(result: ClaimVerification, **fields: object) -> dict[str, object]:
    data = result.model_dump(mode="json")
    data.update(fields)
    return data


def test_an_edited_status_is_found() -> None:
    contested = results()[0]
    data = _edit(contested, status="supported", refuting_group=[], refuting_basis=None)
    assert check_result(data).problems == (
        "result_sha256 does not match the record (its status, groups, bases, scores or limitations were edited)",
        # the replay from the scores: m2's contradiction 0.97 is a refutation, which the status drops
        "a recorded contradiction >= 0.8 is a refutation unless its guard dropped it (uncorroborated_model_contradiction), but the status is supported",
    )
    inconsistent = check_result(_edit(contested, status="supported"))
    assert "status supported with a refuting group" in inconsistent.problems


def test_an_edited_score_is_found() -> None:
    data = _edit(results()[1])
    data["group_scores"][0]["entailment"] = 0.5  # type: ignore[index]
    data["group_scores"][0]["neutral"] = 0.49  # type: ignore[index]
    problems = check_result(data).problems
    assert any(problem.startswith("result_sha256 does not match") for problem in problems)
    # and the replay from the scores alone: the support's entailment is now below the 0.8 threshold
    assert "the supporting group's recorded entailment is below entailment_threshold 0.8" in problems


def test_an_edited_claim_is_found() -> None:
    report = check_result(_edit(results()[1], claim="The launch is Monday."))
    assert report.problems == ("claim_sha256 does not match claim (the claim was edited)",)


def test_an_edited_input_digest_is_found() -> None:
    report = check_result(_edit(results()[1], evidence_sha256="0" * 64))
    assert report.problems == ("evaluation_id does not match the input digests (a digest or the schema version was edited)",)


def test_older_schemas_are_checked_as_far_as_possible() -> None:
    """Regression (trust on every surface, item 1): a schema 3 record relabelled schema 2 used to check out,
    its digests "made by an earlier formula and not recomputed". Schemas 1 and 2 are recomputed by their own
    formula now, so lowering the schema version is found like any other edit."""
    data = _edit(results()[1], schema_version=2, localized_assessments=[])
    report = check_result(data)
    assert report.problems == ("evaluation_id does not match the input digests (a digest or the schema version was edited)",)
    assert not any(note.startswith("schema 2") for note in report.notes)


def test_not_a_result_record() -> None:
    with pytest.raises(ValueError, match="not a result record: field status"):
        check_result({**results()[1].model_dump(mode="json"), "status": "maybe"})


def test_the_command(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    lines = [r.model_dump_json() for r in results()]
    tampered = json.loads(lines[1])
    tampered["status"] = "refuted"
    lines[1] = json.dumps(tampered)
    path = tmp_path / "results.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert cli.main(["check", str(path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert f"{path} line 2: status refuted with a supporting group" in err
    assert err[-1] == "checked 5 records: 4 ok, 1 with problems"
    path.write_text("\n".join(r.model_dump_json() for r in results()) + "\n", encoding="utf-8")
    assert cli.main(["check", str(path), "-q"]) == 0
    assert capsys.readouterr().err == ""
    path.write_text('{"status": 1}\n', encoding="utf-8")
    assert cli.main(["check", str(path)]) == 2
    assert f"error: 1 line of {path} is not a result record" in capsys.readouterr().err


def test_version_and_program_name() -> None:
    """Regression: `claim-verifier --help` said `usage: python -m verifier`; there was no --version."""
    import verifier

    found = re.search(r'^version = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.MULTILINE)
    assert found is not None
    declared = found.group(1)
    assert verifier.__version__ == declared
    completed = subprocess.run([sys.executable, "-m", "verifier", "--version"], capture_output=True, text=True, cwd=ROOT)
    assert completed.stdout.strip() == f"python -m verifier {declared}"
    script = Path(sys.executable).with_name("onnx-claim-verifier")  # issue 26: the distribution's own name
    assert script.exists(), f"{script}: reinstall the checkout (bash scripts/setup.sh)"
    usage = subprocess.run([str(script), "--help"], capture_output=True, text=True).stdout
    assert usage.startswith("usage: onnx-claim-verifier ")


def test_verify_takes_a_variant(capsys: pytest.CaptureFixture[str], tiny_model_dir: Path, tmp_path: Path) -> None:
    rows = tmp_path / "in.jsonl"
    rows.write_text(json.dumps({"claim": "x y", "evidence": [{"reference": "m1", "memory_id": str(UUID(int=1)), "text": "x y"}]}) + "\n")
    code = cli.main(["verify", str(rows), "--model-dir", str(tiny_model_dir), "--variant", "int8", "-q"])
    assert code == 1
    assert "variant 'int8' is not in" in capsys.readouterr().err


# ---------------------------------------------------------------- trust on every surface (items 1-4)


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _legacy(data: dict[str, object]) -> dict[str, object]:
    """``data`` (a result's JSON) sealed by the schema 1/2 formula of docs/audit.md, computed here by hand:
    evaluation_id without the schema version, result_sha256 over the same decision record."""
    evaluation = _sha(_canonical({key: data[key] for key in ("claim_sha256", "configuration_sha256", "evidence_sha256")}))
    record = {
        "evaluation_id": evaluation,
        "group_scores": data["group_scores"],
        "localized_assessments": data.get("localized_assessments", []),
        "limitations": data["limitations"],
        "refuting_basis": data.get("refuting_basis"),
        "refuting_group": data["refuting_group"],
        "status": data["status"],
        "supporting_basis": data.get("supporting_basis"),
        "supporting_group": data["supporting_group"],
    }
    return {**data, "evaluation_id": evaluation, "result_sha256": _sha(_canonical(record))}


def _forged(result: ClaimVerification) -> dict[str, object]:
    """The probe of item 1: a result that is not supported, made to say supported and relabelled schema 2."""
    data = result.model_dump(mode="json")
    data.update(status="supported", supporting_group=[str(EVIDENCE[0].memory_id)], supporting_basis="model_entailment",
                refuting_group=[], refuting_basis=None, schema_version=2)
    del data["localized_assessments"]
    return data


def test_a_record_never_checks_out_because_it_claims_an_older_schema(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    contested = results()[0]
    assert contested.status.value == "contested"
    forged = _forged(contested)
    assert check_result(forged).problems == (
        "evaluation_id does not match the input digests (a digest or the schema version was edited)",
        "result_sha256 does not match the record (its status, groups, bases, scores or limitations were edited)",
        "a recorded contradiction >= 0.8 is a refutation unless its guard dropped it (uncorroborated_model_contradiction), but the status is supported",
    )
    path = tmp_path / "forged.jsonl"
    path.write_text(json.dumps(forged) + "\n", encoding="utf-8")
    assert cli.main(["check", str(path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert f"{path} line 1: result_sha256 does not match the record (its status, groups, bases, scores or limitations were edited)" in err
    assert err[-1] == "checked 1 record: 0 ok, 1 with problems"
    # A genuine schema 2 record (sealed by the documented formula) checks out, and so does schema 1.
    genuine = _legacy({k: v for k, v in results()[1].model_dump(mode="json").items() if k != "localized_assessments"} | {"schema_version": 2})
    assert check_result(genuine).ok
    one = {**genuine, "schema_version": 1, "supporting_basis": None}
    assert not check_result(one).ok and check_result(_legacy(one)).ok
    # ... and a forgery sealed by that formula is still found: its own evaluation id, but the old result digest.
    half = {**forged, "evaluation_id": _legacy(forged)["evaluation_id"]}
    assert check_result(half).problems == (
        "result_sha256 does not match the record (its status, groups, bases, scores or limitations were edited)",
        "a recorded contradiction >= 0.8 is a refutation unless its guard dropped it (uncorroborated_model_contradiction), but the status is supported",
    )


def test_the_command_prints_what_it_could_not_verify(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    stored = results()
    stored[0] = stored[0].model_copy(update={"resolved_revision": "feedface"})  # as the ONNX engine records it
    stored[1] = stored[1].model_copy(update={"resolved_revision": "feedface"})
    path = tmp_path / "results.jsonl"
    path.write_text("".join(r.model_dump_json() + "\n" for r in stored), encoding="utf-8")
    assert cli.main(["check", str(path)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "note: 5 records: evidence_sha256 not checked (a result holds no evidence: check --inputs, or "
        "check_result(record, evidence=the passages), checks it)",
        "note: 5 records: decision replayed from the scores only: the guards read the passages, which a result "
        "does not carry (check --inputs, or check_result(record, evidence=the passages), replays the whole procedure)",
        "note: 2 records: resolved_revision (what ran) is covered by no digest",
        "checked 5 records: 5 ok, 0 with problems",
    ]


def test_an_edited_model_or_revision_is_found(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Regression (item 2): ``model`` and ``requested_revision`` are covered by configuration_sha256, which
    check now recomputes from the default configuration with the record's model and revision."""
    genuine = results()[1].model_dump(mode="json")
    path = tmp_path / "results.jsonl"
    for field, value in (("model", "someone/else"), ("requested_revision", "main")):
        path.write_text(json.dumps({**genuine, field: value}) + "\n", encoding="utf-8")
        assert cli.main(["check", str(path)]) == 1
        err = capsys.readouterr().err.splitlines()
        assert err[0].startswith("hint: configuration_sha256 is recomputed from the default decision configuration")
        assert err[1] == f"{path} line 1: configuration_sha256 does not match the given configuration"
    # A record made with other decision options checks out only when they are given.
    strict = ClaimVerifier(ClaimVerificationConfig(entailment_threshold=0.9), scorer=ScriptedScorer(SCRIPT)).verify_sync(
        "The launch is Tuesday.", EVIDENCE[:1]
    )
    path.write_text(strict.model_dump_json() + "\n", encoding="utf-8")
    assert cli.main(["check", str(path), "-q"]) == 1
    assert "configuration_sha256 does not match the given configuration" in capsys.readouterr().err
    assert cli.main(["check", str(path), "-q", "--entailment-threshold", "0.9"]) == 0
    # --model pins the model every record must name.
    assert cli.main(["check", str(path), "-q", "--entailment-threshold", "0.9", "--model", "other/model"]) == 1
    assert "model or requested_revision differs from the given configuration" in capsys.readouterr().err
    # The library: configuration_for is the configuration a record names.
    from verifier.decision.check import configuration_for

    assert configuration_for(strict, {"entailment_threshold": 0.9}) == ClaimVerificationConfig(entailment_threshold=0.9)
    assert check_result(strict, config=configuration_for(strict, {"entailment_threshold": 0.9})).ok


def test_records_of_the_strict_policy_get_a_hint_naming_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Checked without the policies verify had, strict-policy records fail their configuration digest; the
    hint says so (their schema 4 fields show it) and, given the policies, they check out (new-user trial)."""
    config = ClaimVerificationConfig(entailment_policy="strict", refutation_policy="strict")
    made = ClaimVerifier(config, scorer=ScriptedScorer(SCRIPT, default=(0.05, 0.05)))
    records = [made.verify_sync("The launch is Tuesday.", EVIDENCE), made.verify_sync("The launch is Tuesday.", EVIDENCE[:1])]
    assert {r.schema_version for r in records} == {4} and all(r.as_of is None for r in records)
    path = tmp_path / "strict.jsonl"
    path.write_text("".join(r.model_dump_json() + "\n" for r in records), encoding="utf-8")
    assert cli.main(["check", str(path), "-q"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[0] == (
        f"hint: {path} line 1 was made under the strict policy (schema_version 4, strict_rulings): give "
        "--entailment-policy and --refutation-policy as verify had them (e.g. --entailment-policy strict "
        "--refutation-policy strict); without them its configuration_sha256 cannot match"
    ), err
    assert cli.main(["check", str(path), "-q", "--entailment-policy", "strict", "--refutation-policy", "strict"]) == 0
    # a reference-policy record with another threshold gets no such hint
    other = ClaimVerifier(ClaimVerificationConfig(entailment_threshold=0.9), scorer=ScriptedScorer(SCRIPT))
    path.write_text(other.verify_sync("The launch is Tuesday.", EVIDENCE[:1]).model_dump_json() + "\n", encoding="utf-8")
    assert cli.main(["check", str(path), "-q"]) == 1
    assert "strict policy" not in capsys.readouterr().err


def test_strict_records_checked_without_the_policies_give_the_hint_first_and_each_problem_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Regression (issue 50, new-user trial): ``check`` of strict-policy output without the policy options
    printed 82 problem lines, the same two for each of 41 records, and the hint explaining them last. Now
    the hint comes first, each distinct problem once, and one line says how many more records have it."""
    config = ClaimVerificationConfig(entailment_policy="strict", refutation_policy="strict")
    made = ClaimVerifier(config, scorer=ScriptedScorer(SCRIPT, default=(0.05, 0.05)))
    records = [made.verify_sync("The launch is Tuesday.", EVIDENCE[:1]) for _ in range(6)]
    path = tmp_path / "strict.jsonl"
    path.write_text("".join(r.model_dump_json() + "\n" for r in records), encoding="utf-8")
    assert cli.main(["check", str(path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"hint: {path} line 1 was made under the strict policy"), err
    assert err[1:3] == [
        f"{path} line 1: configuration_sha256 does not match the given configuration",
        f"... and 5 more with the same problem (first: {path} line 1): configuration_sha256 does not match the "
        "given configuration",
    ], err
    assert sum("configuration_sha256 does not match" in line for line in err) == 2
    assert err[-1] == "checked 6 records: 0 ok, 6 with problems"


def test_check_reads_every_format_verify_writes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, manifest_only_model_dir: Path
) -> None:
    """Regression (item 3): envelopes and --resume output were "not result records"."""
    from jsonl_helpers import evidence_row, scripted_verifier, write_jsonl

    source = write_jsonl(tmp_path / "in.jsonl", [evidence_row(1), evidence_row(2, claim="  "), evidence_row(3)])
    outputs = {
        "bare": ["--skip-invalid"],
        "envelope": ["--skip-invalid", "--output-format", "envelope"],
        "resume": ["--skip-invalid", "--resume"],
    }
    for name, argv in outputs.items():
        out = tmp_path / f"{name}.jsonl"
        assert cli.main(["verify", str(source), "-o", str(out), "-q", *argv], make_verifier=scripted_verifier) == 0
        capsys.readouterr()
        assert cli.main(["check", str(out)]) == 0, name
        err = capsys.readouterr().err.splitlines()
        expected = "checked 2 records: 2 ok, 0 with problems" + ("" if name == "bare" else "; 1 error row (skipped input rows) holds no result")
        assert err[-1] == expected
        assert ("note: 3 envelopes: the id and line beside a result are covered by no digest" in err) == (name != "bare")
    envelopes = [json.loads(line) for line in (tmp_path / "resume.jsonl").read_text(encoding="utf-8").splitlines()]
    # Ray's rows (result as JSON text, in a directory of files) and a JSON array of envelopes.
    ray_dir = tmp_path / "ray"
    ray_dir.mkdir()
    (ray_dir / "part-0.json").write_text("".join(
        json.dumps({"id": e["id"], "result": json.dumps(e["result"]) if "result" in e else None,
                    "error": json.dumps(e["error"]) if "error" in e else None}) + "\n"
        for e in envelopes), encoding="utf-8")
    (tmp_path / "array.json").write_text(json.dumps(envelopes, indent=1), encoding="utf-8")
    for given in (ray_dir, tmp_path / "array.json"):
        assert cli.main(["check", str(given), "-q"]) == 0, given
    # Entries of the directory that are not read are named in a note (they were skipped without a word).
    (ray_dir / "_SUCCESS").write_text("", encoding="utf-8")
    (ray_dir / ".part-1.json").write_text("not a record\n", encoding="utf-8")
    (ray_dir / "nested").mkdir()
    capsys.readouterr()
    assert cli.main(["check", str(ray_dir)]) == 0
    assert (f"note: {ray_dir}: 3 entries not read (a name starting with . or _, or not a regular file): "
            ".part-1.json, _SUCCESS, nested") in capsys.readouterr().err.splitlines()
    # An edited status inside an envelope is found, and named by its line.
    edited = [dict(e) for e in envelopes]
    edited[0]["result"] = {**edited[0]["result"], "status": "refuted"}
    edited_path = tmp_path / "edited.jsonl"
    edited_path.write_text("".join(json.dumps(e) + "\n" for e in edited), encoding="utf-8")
    capsys.readouterr()
    assert cli.main(["check", str(edited_path), "-q"]) == 1
    assert f"{edited_path} line 1: status refuted with a supporting group" in capsys.readouterr().err
    # An envelope key that no digest covers is not a record of verify.
    (tmp_path / "extra.jsonl").write_text(json.dumps({**envelopes[0], "verdict": "supported"}) + "\n", encoding="utf-8")
    assert cli.main(["check", str(tmp_path / "extra.jsonl")]) == 2
    assert "unknown key 'verdict'" in capsys.readouterr().err


def test_a_repeated_key_is_refused_by_check(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Regression (item 4): a second "status" passed check (Python reads the last value, other parsers the first)."""
    line = results()[0].model_dump_json()
    doubled = line[:-1] + ', "status": "contested"}'
    assert json.loads(doubled)["status"] == "contested"
    path = tmp_path / "results.jsonl"
    path.write_text(line + "\n" + doubled + "\n", encoding="utf-8")
    assert cli.main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"error: {path} line 2: not a result record: invalid JSON: duplicate key 'status' in a JSON object: line 1 column {len(line) + 2}" in err
    with pytest.raises(ValueError, match="duplicate key 'status'"):
        check_result(doubled)


def test_records_out_of_input_order_replay_against_the_row_with_their_requires_complete_set(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A result does not record requires_complete_set: rows that differ only in it were confused when the
    records came back in another order (joined shards, Ray), and genuine records failed (adversarial run)."""
    claim, evidence = "There are four launches.", EVIDENCE[:1]
    flags = [False, True, False, True]
    made = [verifier().verify_sync(claim, evidence, requires_complete_set=flag) for flag in flags]
    assert [r.status.value for r in made] == ["supported", "incomplete"] * 2  # the flag alone decides here
    rows = [{"claim": claim, "evidence": [e.model_dump(mode="json") for e in evidence], "requires_complete_set": flag}
            for flag in flags]
    inputs = tmp_path / "in.jsonl"
    inputs.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    records = tmp_path / "records.jsonl"
    for order in ([0, 1, 2, 3], [1, 0, 3, 2], [3, 1, 2, 0]):
        records.write_text("".join(made[i].model_dump_json() + "\n" for i in order), encoding="utf-8")
        assert cli.main(["check", str(records), "--inputs", str(inputs), "-q"]) == 0, order
    # an incomplete record has no row to come from when every row has the flag off
    inputs.write_text("".join(json.dumps({**row, "requires_complete_set": False}) + "\n" for row in rows), encoding="utf-8")
    records.write_text(made[1].model_dump_json() + "\n", encoding="utf-8")
    capsys.readouterr()
    assert cli.main(["check", str(records), "--inputs", str(inputs), "-q"]) == 1
    assert "the replay needs a score the record does not carry" in capsys.readouterr().err


def test_a_model_directory_verifier_checks_against_its_own_config(tiny_model_dir: Path) -> None:
    """With a model directory whose manifest names another model, ``verifier.config`` (what docs/audit.md says to
    check against) carries the manifest's model and revision: records check out against it, and against the
    configuration passed in (the pinned model) they are named a configuration mismatch, never silently ok."""
    from verifier import RuntimeOptions

    manifest = json.loads((tiny_model_dir / "manifest.json").read_text(encoding="utf-8"))
    passed = ClaimVerificationConfig(entailment_threshold=0.8)
    with ClaimVerifier(passed, runtime=RuntimeOptions(model_dir=tiny_model_dir)) as made:
        result = made.verify_sync(EVIDENCE[0].text, EVIDENCE[:1])
        assert made.config.model == manifest["model"] == result.model
        assert made.config.revision == result.requested_revision
        assert made.config.entailment_threshold == 0.8 and passed.model != manifest["model"]
        assert check_result(result, config=made.config).ok
    wrong = check_result(result, config=passed)
    assert any("configuration_sha256" in problem for problem in wrong.problems), wrong.problems


def test_under_inputs_a_record_of_an_older_schema_is_a_problem_not_ok(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Regression (stop 43's adversarial run): a record relabelled schema 2 (or 1), its digests recomputed by
    that schema's formula, skipped the replay and --rescore and checked out under --inputs --rescore, exit 0.
    verify never writes those schemas; under --inputs such a record is now named, exit 1 (without --inputs its
    digests and score bounds are checked as before)."""
    supported = results()[1]
    genuine = _legacy({k: v for k, v in supported.model_dump(mode="json").items() if k != "localized_assessments"}
                      | {"schema_version": 2})
    assert check_result(genuine).ok
    records, inputs = tmp_path / "records.jsonl", tmp_path / "in.jsonl"
    records.write_text(json.dumps(genuine) + "\n", encoding="utf-8")
    inputs.write_text(json.dumps({"claim": supported.claim, "evidence": [e.model_dump(mode="json") for e in EVIDENCE[:1]]}) + "\n",
                      encoding="utf-8")
    assert cli.main(["check", str(records), "-q"]) == 0
    assert cli.main(["check", str(records), "--inputs", str(inputs), "-q"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"{records} line 1: schema 2: --inputs cannot replay its decision, nor --rescore re-score it "
        "(verify writes schema 3 or 4); only its digests and score bounds were checked"
    ]
    records.write_text(supported.model_dump_json() + "\n", encoding="utf-8")  # the record as verify wrote it
    assert cli.main(["check", str(records), "--inputs", str(inputs), "-q"]) == 0


def test_under_inputs_the_rows_as_of_is_what_a_record_is_replayed_at(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Regression (stop 43's adversarial run): the replay took as_of from the record, so a strict-policy record
    moved to an earlier as_of (an expired passage no longer vetoed, digests recomputed) checked out against
    its input row. A record whose as_of is not its row's is now named."""
    from datetime import datetime, timezone

    made_at, moved_to = datetime(2026, 6, 1, tzinfo=timezone.utc), datetime(2025, 6, 1, tzinfo=timezone.utc)
    record = verifier().verify_sync("The launch is Tuesday.", EVIDENCE[:1], as_of=made_at)
    moved = verifier().verify_sync("The launch is Tuesday.", EVIDENCE[:1], as_of=moved_to)
    row = {"claim": record.claim, "evidence": [e.model_dump(mode="json") for e in EVIDENCE[:1]], "as_of": made_at.isoformat()}
    records, inputs = tmp_path / "records.jsonl", tmp_path / "in.jsonl"
    inputs.write_text(json.dumps(row) + "\n", encoding="utf-8")
    records.write_text(record.model_dump_json() + "\n", encoding="utf-8")
    assert cli.main(["check", str(records), "--inputs", str(inputs), "-q"]) == 0
    records.write_text(moved.model_dump_json() + "\n", encoding="utf-8")  # a genuine record, of another as_of
    assert check_result(moved).ok
    assert cli.main(["check", str(records), "--inputs", str(inputs), "-q"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"{records} line 1: its as_of is not the as_of of any row of --inputs with its claim and evidence"
    ]


def test_a_line_that_is_not_an_object_is_named_by_its_json_type(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text('"a result"\n[1]\n', encoding="utf-8")
    assert cli.main(["check", str(path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: {path} line 1: not a result record: expected a JSON object, got string",
        f"error: {path} line 2: not a result record: expected a JSON object, got array",
        f"error: 2 lines of {path} are not result records",
    ]
    path.write_text("null\n", encoding="utf-8")
    assert cli.main(["check", str(path)]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"error: 1 line of {path} is not a result record"


def test_a_row_of_inputs_without_a_record_is_noted_and_with_every_row_a_problem(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Regression (stop 43's adversarial run): a signed output with the refuted record deleted still checked
    out with --inputs and --public-key, saying nothing of the row left without a record."""
    claims = ["The launch is Tuesday.", "The launch is Wednesday.", "The launch moved."]
    made = [verifier().verify_sync(claim, EVIDENCE) for claim in claims]
    inputs, records = tmp_path / "in.jsonl", tmp_path / "records.jsonl"
    inputs.write_text("".join(json.dumps({"claim": c, "evidence": [e.model_dump(mode="json") for e in EVIDENCE]}) + "\n"
                              for c in claims), encoding="utf-8")
    records.write_text(made[0].model_dump_json() + "\n" + made[2].model_dump_json() + "\n", encoding="utf-8")  # line 2's is gone
    assert cli.main(["check", str(records), "--inputs", str(inputs)]) == 0  # a subset (one shard's output) checks out
    err = capsys.readouterr().err.splitlines()
    assert f"note: 1 row of {inputs} has no record (first: line 2; --every-row makes each a problem)" in err
    assert cli.main(["check", str(records), "--inputs", str(inputs), "--every-row"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert f"{inputs} line 2: no record answers this row (--every-row)" in err
    assert err[-1] == f"checked 2 records: 2 ok, 0 with problems; 1 row of {inputs} without a record"
    records.write_text("".join(r.model_dump_json() + "\n" for r in made), encoding="utf-8")
    assert cli.main(["check", str(records), "--inputs", str(inputs), "--every-row", "-q"]) == 0
    assert cli.main(["check", str(records), "--every-row"]) == 2
    assert "error: --every-row needs --inputs FILE" in capsys.readouterr().err


def test_decision_options_that_form_no_configuration_are_one_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Regression (stop 43's adversarial run): --model '' was reported once per record, exit 1."""
    path = tmp_path / "results.jsonl"
    path.write_text("".join(r.model_dump_json() + "\n" for r in results()), encoding="utf-8")
    assert cli.main(["check", str(path), "--model", ""]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: the decision options do not form a configuration: field model: String should have at least 1 character"
    ]


def _rows_file(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_under_inputs_an_envelope_answers_only_the_row_at_its_line_and_id(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Regression (stop 43's adversarial round 2): check matched a record to a row by its digests alone and
    never compared the envelope's line and id, which no digest or signature covers: results swapped between
    envelopes (two claims, or two rows that differ only in requires_complete_set) checked out, exit 0."""
    from verifier.envelopes import envelope_text

    evidence = [e.model_dump(mode="json") for e in EVIDENCE[:1]]
    rows = [{"id": "a", "claim": "The launch is Tuesday.", "evidence": evidence},
            {"id": "b", "claim": "There are four launches.", "evidence": evidence},
            {"id": "c", "claim": "There are four launches.", "evidence": evidence, "requires_complete_set": True}]
    made = [verifier().verify_sync(r["claim"], EVIDENCE[:1], requires_complete_set=r.get("requires_complete_set", False)) for r in rows]
    assert [m.status.value for m in made] == ["supported", "supported", "incomplete"]
    inputs, records = _rows_file(tmp_path / "in.jsonl", rows), tmp_path / "records.jsonl"

    def write(order: list[int]) -> None:
        records.write_text("".join(envelope_text(rows[n]["id"], n + 1, result=made[m].model_dump_json())
                                   for n, m in enumerate(order)), encoding="utf-8")

    write([0, 1, 2])
    assert cli.main(["check", str(records), "--inputs", str(inputs), "--every-row", "-q"]) == 0
    write([1, 0, 2])  # two claims' results swapped
    assert cli.main(["check", str(records), "--inputs", str(inputs), "-q"]) == 1
    assert f"{records} line 1: its envelope names line 1 and id 'a', which is no row of --inputs with its claim, evidence and as_of" in (
        capsys.readouterr().err)
    write([0, 2, 1])  # the rows that differ only in requires_complete_set swapped their verdicts
    assert cli.main(["check", str(records), "--inputs", str(inputs), "-q"]) == 1
    err = capsys.readouterr().err
    assert f"{records} line 2: the replay needs a score the record does not carry" in err  # incomplete: no score
    assert f"{records} line 3: the replay gives model_called False, the record says True" in err


def test_under_inputs_repeated_rows_are_each_answered_and_as_of_is_matched_as_written(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Regression (stop 43's adversarial round 2): bare records took the first row with their digests, so of two
    equal rows (joined shards) one was left without a record under --every-row; and as_of was matched by instant,
    so the record of a row written "Z" answered a row written "+02:00" (a result keeps the row's spelling)."""
    from datetime import datetime, timedelta, timezone

    evidence = [e.model_dump(mode="json") for e in EVIDENCE[:1]]
    twice = [{"claim": "The launch is Tuesday.", "evidence": evidence}] * 2
    inputs, records = _rows_file(tmp_path / "in.jsonl", twice), tmp_path / "records.jsonl"
    same = verifier().verify_sync("The launch is Tuesday.", EVIDENCE[:1]).model_dump_json()
    records.write_text(same + "\n" + same + "\n", encoding="utf-8")
    assert cli.main(["check", str(records), "--inputs", str(inputs), "--every-row", "-q"]) == 0
    utc, plus2 = datetime(2026, 6, 1, tzinfo=timezone.utc), datetime(2026, 6, 1, 2, tzinfo=timezone(timedelta(hours=2)))
    assert utc == plus2
    rows = [{"claim": "The launch is Tuesday.", "evidence": evidence, "as_of": when.isoformat()} for when in (utc, plus2)]
    _rows_file(inputs, rows)
    made = [verifier().verify_sync("The launch is Tuesday.", EVIDENCE[:1], as_of=when) for when in (utc, plus2)]
    records.write_text("".join(m.model_dump_json() + "\n" for m in made), encoding="utf-8")
    assert cli.main(["check", str(records), "--inputs", str(inputs), "--every-row", "-q"]) == 0
    records.write_text("".join(made[0].model_dump_json() + "\n" for _ in range(2)), encoding="utf-8")  # the Z record twice
    assert cli.main(["check", str(records), "--inputs", str(inputs), "--every-row", "-q"]) == 1
    assert f"{inputs} line 2: no record answers this row (--every-row)" in capsys.readouterr().err


def test_under_inputs_an_error_row_must_report_its_rows_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Regression (stop 43's adversarial round 2): an error envelope standing for a valid row (beside that row's
    result, or in its place) checked out: error rows were never compared with --inputs."""
    from verifier.envelopes import envelope_text

    evidence = [e.model_dump(mode="json") for e in EVIDENCE[:1]]
    rows = [{"id": "a", "claim": "The launch is Tuesday.", "evidence": evidence}, {"id": "b", "claim": "  ", "evidence": evidence}]
    inputs, records = _rows_file(tmp_path / "in.jsonl", rows), tmp_path / "records.jsonl"
    result = verifier().verify_sync("The launch is Tuesday.", EVIDENCE[:1]).model_dump_json()
    empty = {"field": "claim", "message": "claim is empty", "unit": "line"}
    records.write_text(envelope_text("a", 1, result=result) + envelope_text("b", 2, error=empty), encoding="utf-8")
    assert cli.main(["check", str(records), "--inputs", str(inputs), "--every-row", "-q"]) == 0
    records.write_text(envelope_text("a", 1, result=result) + envelope_text("a", 1, error=empty) + envelope_text("b", 2, error=empty),
                       encoding="utf-8")
    assert cli.main(["check", str(records), "--inputs", str(inputs)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert f"{records} line 2: an error row for line 1, but --inputs has no invalid row there" in err
    assert err[-1].endswith("; 2 error rows (skipped input rows) hold no result, 1 of them not the error its --inputs row has")
    other = {**empty, "message": "claim must contain a visible character"}
    records.write_text(envelope_text("a", 1, result=result) + envelope_text("b", 2, error=other), encoding="utf-8")
    assert cli.main(["check", str(records), "--inputs", str(inputs), "-q"]) == 1
    assert f"{records} line 2: an error row for line 2 that is not the error --inputs line 2 has" in capsys.readouterr().err


def test_under_inputs_error_rows_without_a_line_and_second_records_are_problems(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Regression (stop 43's adversarial round 3): an error row without "line" (Ray's form) or with an extra key
    in its error was never compared with --inputs, and a record repeated (an envelope or a bare line) checked out."""
    from verifier.envelopes import envelope_text

    evidence = [e.model_dump(mode="json") for e in EVIDENCE[:1]]
    rows = [{"id": "a", "claim": "The launch is Tuesday.", "evidence": evidence}, {"id": "b", "claim": "  ", "evidence": evidence}]
    inputs, records = _rows_file(tmp_path / "in.jsonl", rows), tmp_path / "records.jsonl"
    result = verifier().verify_sync("The launch is Tuesday.", EVIDENCE[:1]).model_dump_json()
    empty = {"field": "claim", "message": "claim is empty"}
    ray_error = json.dumps({"id": "b", "result": None, "error": json.dumps({**empty, "unit": "row"})}) + "\n"
    records.write_text(envelope_text("a", 1, result=result) + ray_error, encoding="utf-8")
    assert cli.main(["check", str(records), "--inputs", str(inputs), "--every-row", "-q"]) == 0  # Ray's own form
    forged = json.dumps({"id": "a", "error": {**empty, "unit": "line"}}) + "\n"  # no line, and row "a" is valid
    extra_key = json.dumps({"id": "b", "line": 2, "error": {**empty, "unit": "line", "note": "x"}}) + "\n"
    records.write_text(envelope_text("a", 1, result=result) + forged + extra_key, encoding="utf-8")
    assert cli.main(["check", str(records), "--inputs", str(inputs), "-q"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert f"{records} line 2: an error row for id 'a', but --inputs has no invalid row there" in err
    assert f"{records} line 3: an error row whose error is not one verify writes (exactly field, message and unit)" in err
    twice = envelope_text("a", 1, result=result)
    records.write_text(twice + twice, encoding="utf-8")
    assert cli.main(["check", str(records), "--inputs", str(inputs), "-q"]) == 1
    assert f"{records} line 2: a second record for --inputs line 1 (verify writes one per row)" in capsys.readouterr().err
    records.write_text(result + "\n" + result + "\n", encoding="utf-8")  # bare
    assert cli.main(["check", str(records), "--inputs", str(inputs), "-q"]) == 1
    assert f"{records} line 2: a second record for --inputs line 1 (verify writes one per row)" in capsys.readouterr().err


def test_check_result_takes_the_config_and_passages_as_mappings_like_the_verifier() -> None:
    """Regression: ``config={...}`` raised AttributeError ('dict' object has no attribute 'model_dump'),
    though ClaimVerifier takes the same mapping; the mapping now checks exactly as the instance does."""
    made = ClaimVerifier({"max_group_size": 3}, scorer=ScriptedScorer(SCRIPT, default=(0.05, 0.05)))
    result = made.verify_sync("The launch is Tuesday.", EVIDENCE)
    record = json.loads(result.model_dump_json())
    passages = [item.model_dump(mode="json") for item in EVIDENCE]
    as_mappings = check_result(record, config={"max_group_size": 3}, evidence=passages)
    as_objects = check_result(record, config=ClaimVerificationConfig(max_group_size=3), evidence=EVIDENCE)
    assert as_mappings.ok and as_mappings == as_objects
    assert not check_result(record, config={"max_group_size": 2}).ok  # a different configuration's digest
    with pytest.raises(ValueError, match="max_group_size"):
        check_result(record, config={"max_group_size": "three"})


def test_checking_the_input_file_instead_of_the_results_says_so_in_two_lines(capsys: pytest.CaptureFixture[str]) -> None:
    """Regression (new-user trial): ``check examples/claims.jsonl`` (RESULTS and --inputs swapped) printed one
    error per row, 41 in all, and never said what the file was."""
    claims = ROOT / "examples" / "claims.jsonl"
    rows = len(claims.read_text(encoding="utf-8").splitlines())
    assert cli.main(["check", str(claims)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and err[0].startswith(f"error: {claims} line 1: not a result record: "), err
    assert err[1] == (f"error: {rows} lines of {claims} are not result records: they are verify's input (a claim, "
                      f"no status); check its results with `check RESULTS --inputs {claims}`")


def test_a_second_record_is_reported_when_the_requires_complete_set_retry_finds_its_row(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Bug (issue 49 item 4): two rows differing only in requires_complete_set; row 1's record replaced by a copy of
    row 2's ``incomplete`` gave "2 ok", exit 0: the retry against the other row skipped the second-record check."""
    claim, evidence = "There are four launches.", EVIDENCE[:1]
    made = [verifier().verify_sync(claim, evidence, requires_complete_set=flag) for flag in (False, True)]
    assert [r.status.value for r in made] == ["supported", "incomplete"]
    rows = [{"claim": claim, "evidence": [e.model_dump(mode="json") for e in evidence], "requires_complete_set": flag}
            for flag in (False, True)]
    inputs, records = tmp_path / "in.jsonl", tmp_path / "records.jsonl"
    inputs.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    records.write_text(made[0].model_dump_json() + "\n" + made[1].model_dump_json() + "\n", encoding="utf-8")
    assert cli.main(["check", str(records), "--inputs", str(inputs), "-q"]) == 0  # the genuine pair
    copy = made[1].model_dump_json() + "\n"
    records.write_text(copy + copy, encoding="utf-8")
    capsys.readouterr()
    assert cli.main(["check", str(records), "--inputs", str(inputs), "-q"]) == 1
    err = capsys.readouterr().err
    assert f"{records} line 2: a second record for --inputs line 2 (verify writes one per row)" in err
    assert f"{records} line 1:" not in err  # the first copy answers row 2 once, which is no problem
