"""Signatures (issue 33): ``keygen``, ``--sign-key`` (verify, serve, ``RuntimeOptions``), ``check --public-key``.

Regression: a record whose digests were recomputed after an edit passed
``check``, and nothing proved who made a record. A signature binds every
field to a key's holder (``--rescore``, which proves the scores, is tested in
tests/test_replay.py).
"""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

pytest.importorskip("cryptography")

from verifier import ClaimEvidence, ClaimVerification, ClaimVerifier, RuntimeOptions, ScriptedScorer, cli  # noqa: E402
from verifier.decision.signing import load_public_key  # noqa: E402

from test_replay import CLAIM, REFUTING, ROW, SCRIPT, forge  # noqa: E402



def _keys(tmp_path: Path, name: str = "signing.key") -> tuple[Path, Path]:
    assert cli.main(["keygen", "--out", str(tmp_path / name)]) == 0
    return tmp_path / name, tmp_path / f"{name}.pub"


def _scripted(config: Any, runtime: Any) -> ClaimVerifier:
    return ClaimVerifier(config, scorer=ScriptedScorer(SCRIPT, default=(0.05, 0.05)), runtime=runtime)


def test_keygen_writes_a_private_key_0600_and_never_overwrites(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    private, public = _keys(tmp_path)
    assert stat.S_IMODE(os.stat(private).st_mode) == 0o600
    assert private.read_text().startswith("-----BEGIN PRIVATE KEY-----")
    assert public.read_text().startswith("-----BEGIN PUBLIC KEY-----")
    key_id = capsys.readouterr().err.splitlines()[-1].split()[-1]
    assert key_id == load_public_key(public).key_id and len(key_id) == 64
    before = private.read_bytes()
    assert cli.main(["keygen", "--out", str(private)]) == 2
    assert "a key is never overwritten" in capsys.readouterr().err
    assert private.read_bytes() == before


def test_signed_records_verify_and_unsigned_forged_or_foreign_ones_do_not(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, manifest_only_model_dir: Path
) -> None:
    """check --public-key accepts only records this key's holder signed, unedited, in every format."""
    private, public = _keys(tmp_path)
    _, other_public = _keys(tmp_path, "other.key")
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(ROW) + "\n", encoding="utf-8")
    signed, unsigned = tmp_path / "signed.jsonl", tmp_path / "unsigned.jsonl"
    assert cli.main(["verify", str(source), "-o", str(signed), "-q", "--sign-key", str(private)], make_verifier=_scripted) == 0
    assert cli.main(["verify", str(source), "-o", str(unsigned), "-q"], make_verifier=_scripted) == 0
    record = json.loads(signed.read_text(encoding="utf-8"))
    assert record["signature"]["algorithm"] == "ed25519" and record["signature"]["key_id"] == load_public_key(public).key_id
    # Signing changes no digest and no other field; unsigned output has no signature key at all.
    plain = json.loads(unsigned.read_text(encoding="utf-8"))
    assert "signature" not in plain and {k: v for k, v in record.items() if k != "signature"} == plain
    capsys.readouterr()
    assert cli.main(["check", str(signed), "--public-key", str(public), "--inputs", str(source)]) == 0
    # the summary says the signatures were verified, not only that the records are ok
    assert capsys.readouterr().err.splitlines()[-1] == f"checked 1 record: 1 ok, 0 with problems; 1 signature verified with {public}"
    assert cli.main(["check", str(unsigned), "--public-key", str(public)]) == 1
    unsigned_err = capsys.readouterr().err
    assert "the record is not signed" in unsigned_err and unsigned_err.endswith("; 0 signatures verified with " + str(public) + "\n")
    assert cli.main(["check", str(signed), "-q", "--public-key", str(other_public)]) == 1
    assert "the record is signed by another key" in capsys.readouterr().err
    # Any edit breaks the signature, even of a field no digest covers, and even with the digests recomputed.
    edits = {
        "resolved_revision": {**record, "resolved_revision": "feedface"},
        "forged": forge(record, status="insufficient", refuting_group=[], refuting_basis=None),
    }
    for name, edited in edits.items():
        for text in (json.dumps(edited) + "\n", json.dumps({"id": "r1", "line": 1, "result": edited}) + "\n",
                     json.dumps({"id": "r1", "result": json.dumps(edited), "error": None}) + "\n"):
            path = tmp_path / f"{name}.jsonl"
            path.write_text(text, encoding="utf-8")
            assert cli.main(["check", str(path), "-q", "--public-key", str(public)]) == 1, name
            assert "the signature does not verify" in capsys.readouterr().err, name
    # A key file that is not a key is a usage error naming it.
    assert cli.main(["verify", str(source), "-q", "--sign-key", str(source)], make_verifier=_scripted) == 2
    assert f"--sign-key {source}" in capsys.readouterr().err
    assert cli.main(["check", str(signed), "--public-key", str(private)]) == 2


def test_a_signature_is_verified_over_the_record_as_stored_not_as_parsed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, manifest_only_model_dir: Path
) -> None:
    """An edit that parsing coerces back to the signed value (a bool or number as a string, 3.0 for 3, another
    spelling of a UUID, whitespace around a string) is a change: check --public-key refuses it in every format.

    Regression: the signature was verified over the parsed record, so each of these said "signature verified"."""
    private, public = _keys(tmp_path)
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(ROW) + "\n", encoding="utf-8")
    signed = tmp_path / "signed.jsonl"
    assert cli.main(["verify", str(source), "-o", str(signed), "-q", "--sign-key", str(private)], make_verifier=_scripted) == 0
    record = json.loads(signed.read_text(encoding="utf-8"))
    memory_id = record["refuting_group"][0]
    score = record["group_scores"][0]
    edits = {
        "model_called as a string": {**record, "model_called": "true"},
        "schema_version as a float": {**record, "schema_version": float(record["schema_version"])},
        "a score as a string": {**record, "group_scores": [{**score, "entailment": str(score["entailment"])}]},
        "a URN-spelled UUID": {**record, "refuting_group": ["urn:uuid:" + memory_id]},
        "a UUID without hyphens": {**record, "refuting_group": [memory_id.replace("-", "")]},
        "whitespace before the claim": {**record, "claim": " " + record["claim"]},
    }
    key = load_public_key(public)
    for name, edited in edits.items():
        # each edit parses to the signed record: only the stored values tell them apart
        parsed = ClaimVerification.model_validate(edited)
        assert parsed == ClaimVerification.model_validate(record) and key.problems(parsed) == [], name
        assert key.problems(parsed, stored=edited) != [], name
        assert key.problems(parsed, stored=json.dumps(edited)) != [], name
        for text in (json.dumps(edited) + "\n", json.dumps({"id": "r1", "line": 1, "result": edited}) + "\n",
                     json.dumps({"id": "r1", "result": json.dumps(edited), "error": None}) + "\n",
                     json.dumps([edited]) + "\n"):
            path = tmp_path / "edited.jsonl"
            path.write_text(text, encoding="utf-8")
            assert cli.main(["check", str(path), "-q", "--public-key", str(public)]) == 1, (name, text)
            assert "the signature does not verify" in capsys.readouterr().err, name
    # the record as written, in the same four formats, still verifies
    for text in (json.dumps(record) + "\n", json.dumps({"id": "r1", "line": 1, "result": record}) + "\n",
                 json.dumps({"id": "r1", "result": json.dumps(record), "error": None}) + "\n", json.dumps([record]) + "\n"):
        (tmp_path / "kept.jsonl").write_text(text, encoding="utf-8")
        assert cli.main(["check", str(tmp_path / "kept.jsonl"), "--public-key", str(public)]) == 0, text
        assert capsys.readouterr().err.endswith(f"; 1 signature verified with {public}\n")


def test_runtime_options_sign_the_librarys_results(tmp_path: Path) -> None:
    """RuntimeOptions(sign_key=...) signs verify_sync's results; a bad key is refused when the options are made."""
    private, public = _keys(tmp_path)
    evidence = [ClaimEvidence(reference="m1", memory_id=UUID(int=1), text=REFUTING)]
    signed = _scripted(None, RuntimeOptions(sign_key=private)).verify_sync(CLAIM, evidence)
    plain = _scripted(None, None).verify_sync(CLAIM, evidence)
    assert signed.signature is not None and load_public_key(public).problems(signed) == []
    assert signed.model_copy(update={"signature": None}) == plain
    assert plain.model_dump_json() == ClaimVerification.model_validate_json(plain.model_dump_json()).model_dump_json()
    assert '"signature"' not in plain.model_dump_json()
    reread = ClaimVerification.model_validate_json(signed.model_dump_json())
    assert load_public_key(public).problems(reread) == []
    with pytest.raises(ValueError, match="sign_key: .* is not an unencrypted PEM private key"):
        _scripted(None, RuntimeOptions(sign_key=public))


def test_serve_signs_its_results(tmp_path: Path, tiny_model_dir: Path) -> None:
    """serve --sign-key (ServerSettings' runtime): results over real HTTP carry a signature that verifies."""
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    import httpx

    from test_server import Server, _request
    from verifier.serve import ServerSettings

    private, public = _keys(tmp_path)
    running = Server(ServerSettings(model_dir=tiny_model_dir, runtime=RuntimeOptions(sign_key=private)))
    try:
        assert running.wait_ready().status_code == 200
        with running.client() as client:
            one = client.post("/v1/verify", json=_request(0))
            batch = client.post("/v1/verify/batch", json={"requests": [_request(1), _request(2)]})
    finally:
        running.stop()
    assert one.status_code == 200 and batch.status_code == 200, (one.text, batch.text)
    key = load_public_key(public)
    results = [ClaimVerification.model_validate(one.json())]
    results += [ClaimVerification.model_validate(item["result"]) for item in batch.json()["results"]]
    assert len(results) == 3
    for result in results:
        assert result.signature is not None and key.problems(result) == []
    assert httpx is not None


def test_resume_keeps_only_lines_signed_as_the_run_signs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, manifest_only_model_dir: Path
) -> None:
    """verify --resume --sign-key keeps an earlier line only when this key signed it (an uninterrupted run would have);
    a signed line in an unsigned run, or an unsigned one in a signed run, is refused."""
    private, _ = _keys(tmp_path)
    other, _ = _keys(tmp_path, "other.key")
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(ROW) + "\n", encoding="utf-8")

    def run(out: Path, *argv: str) -> int:
        return cli.main(["verify", str(source), "-o", str(out), "-q", "--resume", *argv], make_verifier=_scripted)

    signed, unsigned = tmp_path / "signed.jsonl", tmp_path / "unsigned.jsonl"
    assert run(signed, "--sign-key", str(private)) == 0 and run(unsigned) == 0
    capsys.readouterr()
    assert run(signed, "--sign-key", str(private)) == 0  # the same key: kept
    assert run(signed, "--sign-key", str(other)) == 2
    assert "is not signed as this run signs (--sign-key): the record is signed by another key" in capsys.readouterr().err
    assert run(unsigned, "--sign-key", str(private)) == 2
    assert "the record is not signed" in capsys.readouterr().err
    assert run(signed) == 2
    assert "is signed, but this run does not sign" in capsys.readouterr().err
    assert len(signed.read_text(encoding="utf-8").splitlines()) == 1  # nothing appended by any refused run


def test_only_the_canonical_base64_of_a_signature_verifies(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, manifest_only_model_dir: Path
) -> None:
    """Bug (issue 49 item 5): base64 decoding ignores the last character's 4 unused bits, so each signed record had
    16 spellings of its signature that all passed check --public-key (bytes-deduplication fooled)."""
    private, public = _keys(tmp_path)
    source, signed = tmp_path / "in.jsonl", tmp_path / "signed.jsonl"
    source.write_text(json.dumps(ROW) + "\n", encoding="utf-8")
    assert cli.main(["verify", str(source), "-o", str(signed), "-q", "--sign-key", str(private)], make_verifier=_scripted) == 0
    record = json.loads(signed.read_text(encoding="utf-8"))
    value = record["signature"]["value"]
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    index = alphabet.index(value[85])
    assert index % 16 == 0 and value.endswith("==")  # 64 bytes: the 86th character keeps 2 bits, its low 4 are zero
    respelled = [value[:85] + alphabet[index + low] + "==" for low in range(1, 16)]
    assert {base64.b64decode(other) for other in respelled} == {base64.b64decode(value)}  # the same 64 bytes
    capsys.readouterr()
    for other in respelled:
        signed.write_text(json.dumps({**record, "signature": {**record["signature"], "value": other}}) + "\n", encoding="utf-8")
        assert cli.main(["check", str(signed), "--public-key", str(public), "-q"]) == 1, other
        assert "the signature value is not the canonical base64 of a 64-byte signature" in capsys.readouterr().err
    signed.write_text(json.dumps(record) + "\n", encoding="utf-8")
    assert cli.main(["check", str(signed), "--public-key", str(public), "-q"]) == 0


def test_an_unsigned_error_row_in_place_of_a_signed_result_is_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, manifest_only_model_dir: Path
) -> None:
    """Issue 49 item 6: error rows are not signed, so a signed result replaced by a made-up error row passed
    check --public-key with no word. The summary now says the error rows carry no signature, and --inputs
    catches the swap (the row it names is valid)."""
    private, public = _keys(tmp_path)
    source, signed = tmp_path / "in.jsonl", tmp_path / "signed.jsonl"
    rows = [ROW, {**ROW, "id": "r2"}]
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    assert cli.main(["verify", str(source), "-o", str(signed), "-q", "--output-format", "envelope",
                     "--sign-key", str(private)], make_verifier=_scripted) == 0
    first, second = signed.read_text(encoding="utf-8").splitlines()
    error = {"field": "claim", "message": "claim is empty", "unit": "line"}
    signed.write_text(first + "\n" + json.dumps({"id": "r2", "line": 2, "error": error}) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert cli.main(["check", str(signed), "--public-key", str(public)]) == 0
    assert "1 error row (skipped input rows) holds no result and no signature: --public-key proves results only" in (
        capsys.readouterr().err)
    assert cli.main(["check", str(signed), "--public-key", str(public), "--inputs", str(source), "-q"]) == 1
    assert f"{signed} line 2: an error row for line 2, but --inputs has no invalid row there" in capsys.readouterr().err
