"""Every record names the engine that scored it, and check holds it to that engine (issue 47).

Values are derived independently of the code under test: the manifest's bytes are hashed here,
the graph's digest read from ``manifest.json`` with ``json``, the identity digest recomputed with
``hashlib`` over the record's own JSON. The ONNX engine runs the tiny seeded export
(``tests/conftest.py``) and its int8 variant.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from verifier import ClaimEvidence, ClaimVerification, ClaimVerifier, RuntimeOptions, ScriptedScorer, check_result, cli
from verifier.decision import audit

CLAIM = "The launch is on Tuesday."
ROWS = [
    {"id": "a", "claim": CLAIM, "evidence": [
        {"reference": "m1", "memory_id": str(UUID(int=1)), "text": "The launch is on Tuesday."},
        {"reference": "m2", "memory_id": str(UUID(int=2)), "text": "The team met on Monday."}]},
    {"id": "b", "claim": "Nadia leads Atlas.", "evidence": [
        {"reference": "m3", "memory_id": str(UUID(int=3)), "text": "Nadia leads the Atlas project."}]},
    {"id": "c", "claim": "Nadia leads Atlas.", "evidence": []},
]


def _canonical_sha256(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()


def _verify(tmp_path: Path, model_dir: Path, *extra: str) -> tuple[Path, Path, list[dict[str, Any]]]:
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in ROWS), encoding="utf-8")
    out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}.jsonl"
    assert cli.main(["verify", str(source), "-o", str(out), "-q", "--model-dir", str(model_dir), *extra]) == 0
    return source, out, [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def test_a_record_names_its_engine_from_the_files_that_ran(tiny_model_dir: Path, tmp_path: Path) -> None:
    """The identity's parts are the directory's: the manifest's sha256, the graph's and tokenizer's recorded
    digests, the runtime's version; its digest is the sha256 of the canonical JSON of the other parts."""
    import onnxruntime
    import tokenizers

    _, _, records = _verify(tmp_path, tiny_model_dir)
    manifest_bytes = (tiny_model_dir / "manifest.json").read_bytes()
    manifest = json.loads(manifest_bytes)
    engine = records[0]["engine"]
    assert engine["manifest_sha256"] == hashlib.sha256(manifest_bytes).hexdigest()
    assert (engine["graph_file"], engine["graph_sha256"]) == ("model.onnx", manifest["files"]["model.onnx"]["sha256"])
    assert engine["tokenizer_sha256"] == manifest["files"]["tokenizer.json"]["sha256"]
    assert (engine["runtime"], engine["runtime_version"]) == ("onnxruntime", onnxruntime.__version__)
    assert engine["tokenizers_version"] == tokenizers.__version__
    assert (engine["variant"], engine["precision"], engine["padding"]) == (None, "float32", "batched")
    assert engine["providers"] == ["CPUExecutionProvider"] and engine["graph_optimization_level"] == "all"
    assert engine["digest"] == _canonical_sha256({key: value for key, value in engine.items() if key != "digest"})
    assert records[1]["engine"] == engine  # computed once: every record of one engine names the same
    assert "engine" not in records[2] and records[2]["model_called"] is False  # nothing scored, no engine


def test_the_identity_changes_no_digest_prme_computes(tiny_model_dir: Path) -> None:
    """The identity is beside PRME's fields: the same result without it has every field and digest unchanged."""
    verifier = ClaimVerifier.from_model_dir(tiny_model_dir)
    evidence = [ClaimEvidence(reference="m1", memory_id=UUID(int=1), text="The launch is on Tuesday.")]
    result = verifier.verify_sync(CLAIM, evidence)
    assert result.engine is not None and result.engine == verifier.engine_identity()
    bare = result.model_copy(update={"engine": None})
    assert bare.model_dump(mode="json") == {k: v for k, v in result.model_dump(mode="json").items() if k != "engine"}
    assert audit.result_sha256(
        evaluation=bare.evaluation_id, status=bare.status.value, supporting_group=bare.supporting_group,
        refuting_group=bare.refuting_group, supporting_basis=bare.supporting_basis, refuting_basis=bare.refuting_basis,
        group_scores=bare.group_scores, localized_assessments=bare.localized_assessments, limitations=bare.limitations,
    ) == result.result_sha256
    assert check_result(result, config=verifier.config, evidence=evidence).ok
    assert check_result(bare, config=verifier.config, evidence=evidence).ok


def test_a_scripted_scorer_or_a_replaced_prme_seam_names_no_engine(tiny_model_dir: Path) -> None:
    """Only the ONNX engine's scores name it: a scripted scorer's, or a PRME-style test's replaced
    ``_predict_sync`` in front of the engine, name none (and dump no ``engine`` key)."""
    evidence = [ClaimEvidence(reference="m1", memory_id=UUID(int=1), text="The launch is on Tuesday.")]
    scripted = ClaimVerifier(scorer=ScriptedScorer({}, default=(0.9, 0.05))).verify_sync(CLAIM, evidence)
    assert scripted.model_called and scripted.engine is None and "engine" not in scripted.model_dump()
    verifier = ClaimVerifier.from_model_dir(tiny_model_dir)
    verifier._predict_sync = lambda pairs: [(0.9, 0.05, 0.05) for _ in pairs]  # type: ignore[method-assign]
    assert verifier.verify_sync(CLAIM, evidence).engine is None


def test_padding_none_and_a_variant_are_other_engines(tiny_int8_dir: Path, tmp_path: Path) -> None:
    """The variant, its graph and precision, and the padding layout are parts of the identity."""
    manifest = json.loads((tiny_int8_dir / "manifest.json").read_text(encoding="utf-8"))
    _, _, plain = _verify(tmp_path, tiny_int8_dir)
    _, _, int8 = _verify(tmp_path, tiny_int8_dir, "--variant", "int8")
    _, _, alone = _verify(tmp_path, tiny_int8_dir, "--variant", "int8", "--padding", "none")
    engines = [records[0]["engine"] for records in (plain, int8, alone)]
    assert len({engine["digest"] for engine in engines}) == 3
    assert (engines[1]["variant"], engines[1]["graph_file"], engines[1]["precision"]) == ("int8", "model.int8.onnx", "int8")
    assert engines[1]["graph_sha256"] == manifest["files"]["model.int8.onnx"]["sha256"]
    assert [engine["padding"] for engine in engines] == ["batched", "batched", "none"]


def test_an_edited_identity_is_a_problem_and_a_signature_covers_it(tiny_model_dir: Path, tmp_path: Path) -> None:
    """An identity edited without its digest fails plain check; edited with its digest recomputed (an attacker
    who knows the formula) it fails the signature (issue 47: signatures cover the identity)."""
    pytest.importorskip("cryptography", reason="the sign extra is not installed: pip install -e '.[sign]'")
    key = tmp_path / "signing.key"
    assert cli.main(["keygen", "--out", str(key)]) == 0
    _, signed_path, records = _verify(tmp_path, tiny_model_dir, "--sign-key", str(key))
    edited = json.loads(json.dumps(records[0]))
    edited["engine"]["variant"] = "int8"
    assert cli.main(["check", str(_write(tmp_path / "edited.jsonl", [edited])), "-q"]) == 1
    redigested = json.loads(json.dumps(edited))
    redigested["engine"]["digest"] = _canonical_sha256({k: v for k, v in redigested["engine"].items() if k != "digest"})
    forged = _write(tmp_path / "forged.jsonl", [redigested])
    assert cli.main(["check", str(forged), "-q"]) == 0  # self-consistent: digests prove no more
    assert cli.main(["check", str(forged), "-q", "--public-key", f"{key}.pub"]) == 1
    assert cli.main(["check", str(signed_path), "-q", "--public-key", f"{key}.pub"]) == 0


def test_rescore_needs_no_variant_and_refuses_one_that_contradicts_the_record(
    tiny_int8_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 47: check --rescore took the checker's word for the variant: 139 of 150 genuine float32 records
    passed --variant bf16, whose export gate was the tolerance. Each record is re-scored with its own engine."""
    source, out, _ = _verify(tmp_path, tiny_int8_dir)
    _, int8_out, _ = _verify(tmp_path, tiny_int8_dir, "--variant", "int8")
    mixed = _write(tmp_path / "mixed.jsonl", [
        *map(json.loads, out.read_text(encoding="utf-8").splitlines()),
        *map(json.loads, int8_out.read_text(encoding="utf-8").splitlines()),
    ])
    twice = tmp_path / "twice.jsonl"  # each row twice: one record of each engine answers it
    twice.write_text(source.read_text(encoding="utf-8") * 2, encoding="utf-8")
    argv = ["check", str(mixed), "--inputs", str(twice), "--rescore", "--model-dir", str(tiny_int8_dir)]
    capsys.readouterr()
    assert cli.main(argv) == 0, capsys.readouterr().err
    assert cli.main([*argv, "--variant", "int8", "-q"]) == 1
    err = capsys.readouterr().err
    assert f"{mixed} line 1: the record was scored by the float32 export; --variant int8 contradicts it" in err
    assert f"{mixed} line 4:" not in err  # the int8 records are int8's


def test_rescore_refuses_a_directory_that_does_not_hold_the_records_engine(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another export of the same model and revision (another graph) is not the record's engine: refused, naming
    what differs, before anything is compared."""
    from verifier.engine.manifest import FileRecord, read_manifest, sha256_file
    from verifier.engine.session import create_session, session_options
    from verifier_export.manifest import write_manifest

    source, out, _ = _verify(tmp_path, tiny_model_dir)
    other = Path(shutil.copytree(tiny_model_dir, tmp_path / "other"))
    create_session(other / "model.onnx", session_options(graph_optimization_level="basic", optimized_model_filepath=tmp_path / "o.onnx"),
                   where="model.onnx")
    (tmp_path / "o.onnx").replace(other / "model.onnx")
    manifest = read_manifest(other)
    graph = FileRecord(sha256=sha256_file(other / "model.onnx"), size=(other / "model.onnx").stat().st_size)
    write_manifest(other, manifest.model_copy(update={"files": {**manifest.files, "model.onnx": graph},
                                                       "requested_revision": manifest.revision}))
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    capsys.readouterr()
    argv = ["check", str(out), "--inputs", str(source), "--rescore", "--model-dir", str(other), "-q",
            "--revision", records[0]["requested_revision"]]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert f"--model-dir {other} does not hold the engine the record names (graph_sha256 '{records[0]['engine']['graph_sha256']}'" in err


def test_a_forged_int8_score_outside_its_engines_spread_is_refused(
    tiny_int8_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 47: an int8 record forged from 0.755 to 0.8005 entailment passed --rescore --variant int8, whose
    tolerance was the export gate. Batched: held to 2x the spread recorded at export; padding none: exact."""
    from test_replay import forge
    from verifier.engine.scorer import OnnxScorer

    manifest = json.loads((tiny_int8_dir / "manifest.json").read_text(encoding="utf-8"))
    spread = manifest["variants"]["int8"]["parity"]["run_prob_spread"]
    premise = ROWS[1]["evidence"][0]["text"]
    alone = OnnxScorer(tiny_int8_dir, variant="int8", padding="none").score([(premise, ROWS[1]["claim"])])[0].tolist()
    for extra, tolerance in (((), 2 * spread), (("--padding", "none"), 0.0)):
        source, out, records = _verify(tmp_path, tiny_int8_dir, "--variant", "int8", *extra)
        # just outside the tolerance from what the engine gives alone: the smallest probability gains, the others pay
        low = min(range(3), key=lambda index: alone[index])
        shift = tolerance + 0.01
        rest = sum(value for index, value in enumerate(alone) if index != low)
        moved = [value + shift if index == low else value - shift * value / rest for index, value in enumerate(alone)]
        score = dict(records[1]["group_scores"][0], entailment=moved[0], contradiction=moved[1], neutral=1.0 - moved[0] - moved[1])
        path = _write(tmp_path / "forged.jsonl", [forge(records[1], group_scores=[score])])
        capsys.readouterr()
        argv = ["check", str(path), "--inputs", str(source), "--rescore", "--model-dir", str(tiny_int8_dir), "-q"]
        assert cli.main(argv) == 1, extra
        assert f"> tolerance {tolerance:g}: held to its engine" in capsys.readouterr().err
        assert cli.main(["check", str(out), "--inputs", str(source), "--rescore", "--model-dir", str(tiny_int8_dir), "-q"]) == 0


def test_a_record_without_an_identity_is_held_to_float32_exactness(
    tiny_int8_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """PRME's records (and older ones) name no engine: re-scored exactly with the float32 graph; a --variant that
    is not float32 is refused, saying why."""
    source, out, records = _verify(tmp_path, tiny_int8_dir)
    bare = _write(tmp_path / "bare.jsonl", [{k: v for k, v in record.items() if k != "engine"} for record in records])
    argv = ["check", str(bare), "--inputs", str(source), "--rescore", "--model-dir", str(tiny_int8_dir), "-q"]
    capsys.readouterr()
    assert cli.main(argv) == 0
    assert cli.main([*argv, "--variant", "int8"]) == 1
    assert ("the record names no engine (PRME's, or written before engine identities), so it is held to a float32 "
            f"graph's exactness; --variant int8 is not a float32 graph of {tiny_int8_dir}") in capsys.readouterr().err


def test_the_identity_reads_back(tiny_model_dir: Path) -> None:
    """A record's JSON reads back to the same identity (the library type), and the digest is the recomputed one."""
    verifier = ClaimVerifier(runtime=RuntimeOptions(model_dir=tiny_model_dir))
    evidence = [ClaimEvidence(reference="m1", memory_id=UUID(int=1), text="The launch is on Tuesday.")]
    result = verifier.verify_sync(CLAIM, evidence)
    again = ClaimVerification.model_validate_json(result.model_dump_json())
    assert again.engine == result.engine and again.engine is not None and again.engine.digest_matches


def _interrupted(tmp_path: Path, model_dir: Path) -> tuple[list[str], Path, list[str]]:
    """A ``verify --resume`` command over ROWS, its output cut back to its first line (an interrupted run), and
    the lines the whole run wrote."""
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in ROWS), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    argv = ["verify", str(source), "-o", str(out), "--resume", "-q", "--model-dir", str(model_dir)]
    assert cli.main(argv) == 0
    whole = out.read_text(encoding="utf-8").splitlines(keepends=True)
    out.write_text(whole[0], encoding="utf-8")
    return argv, out, whole


def test_resume_refuses_a_kept_line_of_another_engine(tiny_int8_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An output holds one engine's records: --resume with other options (here the int8 variant over a float32
    output) would silently mix two engines' results; the kept line is refused, naming what differs."""
    argv, out, first = _interrupted(tmp_path, tiny_int8_dir)
    capsys.readouterr()
    assert cli.main([*argv, "--variant", "int8"]) == 2
    err = capsys.readouterr().err
    assert f"{out} line 1 (id 'a') was scored by another engine than this run's (variant None != 'int8'" in err
    assert out.read_text(encoding="utf-8") == first[0]  # nothing lost
    assert cli.main(argv) == 0 and out.read_text(encoding="utf-8").splitlines(keepends=True) == first


def test_rescore_says_when_the_record_ran_another_runtime_version(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another onnxruntime or tokenizers version is not another engine for --rescore (the scores decide), but
    the note says which versions scored and re-scored the record."""
    import onnxruntime

    source, _, records = _verify(tmp_path, tiny_model_dir)
    older = json.loads(json.dumps(records[0]))
    older["engine"]["runtime_version"] = "1.0.0"
    older["engine"]["digest"] = _canonical_sha256({k: v for k, v in older["engine"].items() if k != "digest"})
    path = _write(tmp_path / "older.jsonl", [older])
    capsys.readouterr()
    assert cli.main(["check", str(path), "--inputs", str(source), "--rescore", "--model-dir", str(tiny_model_dir)]) == 0
    assert (f"equal exactly (scored with onnxruntime 1.0.0, tokenizers {older['engine']['tokenizers_version']}; re-scored with "
            f"{onnxruntime.__version__}") in capsys.readouterr().err


def test_a_model_named_by_any_path_still_runs(tiny_model_dir: Path, tmp_path: Path) -> None:
    """Regression (adversarial hunt of issue 47): a local export records --model as given, and the identity took
    only printable ASCII up to 200 characters, so '/home/josé/models/nli' or a long path failed every verify."""
    from verifier.engine.manifest import read_manifest
    from verifier_export.manifest import write_manifest

    for name in ("/home/josé/models/nli", "/" + "m" * 300):
        directory = Path(shutil.copytree(tiny_model_dir, tmp_path / f"m{len(name)}"))
        write_manifest(directory, read_manifest(directory).model_copy(update={"model": name}))
        _, _, records = _verify(tmp_path, directory)
        assert records[0]["engine"]["model"] == name == records[0]["model"]


def test_resume_keeps_lines_of_a_directory_that_only_gained_a_variant(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Adversarial hunt: --resume refused an output because a variant was added to the directory since (only the
    manifest's digest differed: no score did), with advice it could not follow; and it kept a scored line whose
    engine had been removed, mixing in scores of an engine it could not name."""
    from verifier_export.variants import build_variants

    directory = Path(shutil.copytree(tiny_model_dir, tmp_path / "model"))
    argv, out, whole = _interrupted(tmp_path, directory)
    build_variants(directory, ["optimized"])  # rewrites manifest.json: another manifest_sha256, the same scores
    assert cli.main(argv) == 0 and out.read_text(encoding="utf-8").splitlines(keepends=True)[0] == whole[0]
    record = json.loads(whole[0])
    stripped = dict(record, result={k: v for k, v in record["result"].items() if k != "engine"})
    out.write_text(json.dumps(stripped, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert cli.main(argv) == 2
    assert "names no engine, but this run's records name theirs" in capsys.readouterr().err


def test_a_checker_can_require_an_engine_or_exact_scores(
    tiny_int8_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Adversarial hunt: a record chooses the engine it is held to, so a float32 record relabelled as batched
    int8 (digests recomputed) is held only within int8's spread. --engine DIGEST makes every scored record name the
    checker's engine; --exact refuses a record that cannot be re-scored exactly."""
    source, floats, float_records = _verify(tmp_path, tiny_int8_dir)
    _, int8, _ = _verify(tmp_path, tiny_int8_dir, "--variant", "int8")
    _, alone, _ = _verify(tmp_path, tiny_int8_dir, "--variant", "int8", "--padding", "none")
    digest = float_records[0]["engine"]["digest"]
    capsys.readouterr()
    assert cli.main(["check", str(floats), "-q", "--engine", digest[:12]]) == 0
    assert cli.main(["check", str(int8), "-q", "--engine", digest]) == 1
    err = capsys.readouterr().err
    assert f"{int8} line 1: the record names engine " in err and f"(variant int8 (model.int8.onnx, int8) on onnxruntime" in err
    assert f"not --engine {digest}" in err and f"{int8} line 3" not in err  # nothing scored, no engine to name
    with pytest.raises(SystemExit) as refused:
        cli.main(["check", str(floats), "--engine", "xyz"])
    assert refused.value.code == 2 and "--engine: 'xyz' is not an engine identity digest" in capsys.readouterr().err
    rescore = ["--inputs", str(source), "--rescore", "--model-dir", str(tiny_int8_dir), "--exact", "-q"]
    assert cli.main(["check", str(alone), *rescore]) == 0 and cli.main(["check", str(floats), *rescore]) == 0
    capsys.readouterr()
    assert cli.main(["check", str(int8), *rescore]) == 1
    assert "--exact: the record's scores can be held only within 0.338" in capsys.readouterr().err


def test_a_record_moved_to_another_revision_is_a_problem_without_rescore(tiny_model_dir: Path, tmp_path: Path) -> None:
    """Adversarial hunt: a record whose requested_revision was edited (digests recomputed) passed plain check,
    though its engine identity names the revision that ran; now the two must agree."""
    from verifier.decision.audit import configuration_sha256, evaluation_id
    from verifier import ClaimVerificationConfig

    _, _, records = _verify(tmp_path, tiny_model_dir)
    record = dict(records[1], requested_revision="seed1")
    config = ClaimVerificationConfig(model=record["model"], revision="seed1")
    record["configuration_sha256"] = configuration_sha256(config)
    record["evaluation_id"] = evaluation_id(claim_digest=record["claim_sha256"], configuration_digest=record["configuration_sha256"],
                                            evidence_digest=record["evidence_sha256"], schema_version=record["schema_version"])
    from test_replay import forge

    report = check_result(forge(record), config=config)
    assert report.problems == (
        f"the engine identity names revision {records[1]['engine']['revision']}, the record requested_revision seed1 "
        "(and resolved_revision None)",
    )
