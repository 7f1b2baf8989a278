"""Signatures and re-scoring (issue 33): ``keygen``, ``--sign-key``, ``check --public-key``, ``check --rescore``.

Regression: a record whose digests were recomputed after an edit passed
``check``; nothing proved who made a record, or that its scores came from the
model. A signature binds every field to a key's holder; ``--rescore`` re-scores
every premise with the model.
"""

from __future__ import annotations

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

from test_replay import CLAIM, REFUTING, SCRIPT, forge  # noqa: E402

ROW = {"id": "r1", "claim": CLAIM, "evidence": [{"reference": "m1", "memory_id": str(UUID(int=1)), "text": REFUTING}]}


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
    assert cli.main(["check", str(unsigned), "-q", "--public-key", str(public)]) == 1
    assert "the record is not signed" in capsys.readouterr().err
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


def test_rescore_proves_the_scores(capsys: pytest.CaptureFixture[str], tmp_path: Path, tiny_model_dir: Path) -> None:
    """check --rescore re-scores every premise with the model: an edited score that changes no decision passes the
    replay, but not the re-scoring (float32: exact)."""
    rows = [
        {"id": "a", "claim": "The launch is on Tuesday.", "evidence": [
            {"reference": "m1", "memory_id": str(UUID(int=1)), "text": "The launch is on Tuesday."},
            {"reference": "m2", "memory_id": str(UUID(int=2)), "text": "The team met on Monday."}]},
        {"id": "b", "claim": "Nadia leads Atlas.", "evidence": [
            {"reference": "m3", "memory_id": str(UUID(int=3)), "text": "Nadia leads the Atlas project."}]},
    ]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert cli.main(["verify", str(source), "-o", str(out), "-q", "--model-dir", str(tiny_model_dir)]) == 0
    capsys.readouterr()
    argv = ["check", str(out), "--inputs", str(source), "--rescore", "--model-dir", str(tiny_model_dir)]
    code, err = cli.main(argv), capsys.readouterr().err
    assert code == 0, err
    assert "note: 2 records: every replayed score re-scored with the model: equal exactly (a float32 graph)" in err.splitlines()
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
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
    assert "tolerance 0)" in err and f"{path} line 1" not in err


def test_rescore_of_an_int8_variant_uses_its_parity_bound(capsys: pytest.CaptureFixture[str], tmp_path: Path, tiny_int8_dir: Path) -> None:
    """A dynamic-int8 variant's scores depend on its batch: --rescore compares within the variant's recorded gate."""
    from verifier.engine.identity import read_manifest_if_present

    gate = read_manifest_if_present(tiny_int8_dir).variants["int8"].parity.max_prob_diff_gate  # type: ignore[union-attr]
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(ROW) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert cli.main(["verify", str(source), "-o", str(out), "-q", "--model-dir", str(tiny_int8_dir), "--variant", "int8"]) == 0
    capsys.readouterr()
    assert cli.main(["check", str(out), "--inputs", str(source), "--rescore", "--model-dir", str(tiny_int8_dir),
                     "--variant", "int8"]) == 0
    assert f"note: 1 record: every replayed score re-scored with the model: equal within {gate:g} (the variant's parity bound)" in (
        capsys.readouterr().err.splitlines())
