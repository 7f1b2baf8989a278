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
    )
    inconsistent = check_result(_edit(contested, status="supported"))
    assert "status supported with a refuting group" in inconsistent.problems


def test_an_edited_score_is_found() -> None:
    data = _edit(results()[1])
    data["group_scores"][0]["entailment"] = 0.5  # type: ignore[index]
    data["group_scores"][0]["neutral"] = 0.49  # type: ignore[index]
    assert check_result(data).problems[-1].startswith("result_sha256 does not match")


def test_an_edited_claim_is_found() -> None:
    report = check_result(_edit(results()[1], claim="The launch is Monday."))
    assert report.problems == ("claim_sha256 does not match claim (the claim was edited)",)


def test_an_edited_input_digest_is_found() -> None:
    report = check_result(_edit(results()[1], evidence_sha256="0" * 64))
    assert report.problems == ("evaluation_id does not match the input digests (a digest or the schema version was edited)",)


def test_older_schemas_are_checked_as_far_as_possible() -> None:
    data = _edit(results()[1], schema_version=2, localized_assessments=[])
    report = check_result(data)
    assert report.ok
    assert report.notes[0].startswith("schema 2: evaluation_id and result_sha256 were made by an earlier formula")


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
    assert "not result records" in capsys.readouterr().err


def test_version_and_program_name() -> None:
    """Regression: `claim-verifier --help` said `usage: python -m verifier`; there was no --version."""
    import verifier

    found = re.search(r'^version = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.MULTILINE)
    assert found is not None
    declared = found.group(1)
    assert verifier.__version__ == declared
    completed = subprocess.run([sys.executable, "-m", "verifier", "--version"], capture_output=True, text=True, cwd=ROOT)
    assert completed.stdout.strip() == f"python -m verifier {declared}"
    script = Path(sys.executable).with_name("claim-verifier")
    if script.exists():
        usage = subprocess.run([str(script), "--help"], capture_output=True, text=True).stdout
        assert usage.startswith("usage: claim-verifier ")


def test_verify_takes_a_variant(capsys: pytest.CaptureFixture[str], tiny_model_dir: Path, tmp_path: Path) -> None:
    rows = tmp_path / "in.jsonl"
    rows.write_text(json.dumps({"claim": "x y", "evidence": [{"reference": "m1", "memory_id": str(UUID(int=1)), "text": "x y"}]}) + "\n")
    code = cli.main(["verify", str(rows), "--model-dir", str(tiny_model_dir), "--variant", "int8", "-q"])
    assert code == 1
    assert "variant 'int8' is not in" in capsys.readouterr().err
