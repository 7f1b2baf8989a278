"""Grounding checkers as the second model kind (docs/grounding.md): export, engine, chunking, ``ground``.

The references here are written from the checkers' documented behaviour, not from this package:
MiniCheck (Liyan06/MiniCheck ``minicheck/inference.py``) reads ``doc + tokenizer.eos_token + claim``
as one sequence, ``truncation=True`` at 2048 (DeBERTa) or 512 (RoBERTa) tokens, softmax, index 1 =
supported, and chunks documents by greedy sentence packing. Each test computes that with transformers
on PyTorch (or in plain Python for the chunker) and compares with the torch-free runtime.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from verifier import ClaimVerificationError

pytestmark = pytest.mark.export
torch = pytest.importorskip("torch")

MINICHECK_DEBERTA = "lytang/MiniCheck-DeBERTa-v3-Large"
REVISION = "0123456789abcdef0123456789abcdef01234567"
DOCUMENT = (
    "The quarterly review covered the billing migration. Latency at the 95th percentile dropped from 480 ms "
    "to 210 ms after the pool was resized. Error rates stayed below one tenth of a percent.\n"
    "The platform team agreed to revisit staffing. Mr. Park will lead the on-call rotation in January.\n\n"
    "Passkeys were rolled out for every internal dashboard on Tuesday."
)
CLAIMS = ("Latency improved after the pool was resized.", "Passkeys were rolled out on Friday.", "Mr. Park leads on-call.")


def _quiet_build(architecture: str, path: Path) -> Path:
    from verifier_export.testmodels import build_tiny_grounding_model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_tiny_grounding_model(path, architecture=architecture, seed=0)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def deberta_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _quiet_build("deberta-v2", tmp_path_factory.mktemp("minicheck-deberta") / "hf")


@pytest.fixture(scope="module")
def deberta_dir(deberta_source: Path) -> Path:
    from verifier_export.pipeline import export_model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = export_model(str(deberta_source), model_id=MINICHECK_DEBERTA, revision=REVISION,
                              output=deberta_source.parent / "onnx")
    assert report.status == "exported"
    return report.output_dir


@pytest.fixture(scope="module")
def reference(deberta_source: Path) -> Any:
    """P(support) as MiniCheck computes it, with transformers on PyTorch (float32)."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tokenizer = AutoTokenizer.from_pretrained(str(deberta_source))
        model = AutoModelForSequenceClassification.from_pretrained(str(deberta_source)).eval()

    def support(document: str, claim: str, max_length: int = 2048) -> tuple[float, bool]:
        text = document + tokenizer.eos_token + claim
        full = tokenizer(text)["input_ids"]
        encoded = tokenizer([text], max_length=max_length, truncation=True, padding=True, return_tensors="pt")
        with torch.no_grad():
            probabilities = torch.nn.functional.softmax(model(**encoded).logits, dim=1)
        return float(probabilities[0, 1]), len(full) > max_length

    support.tokenizer = tokenizer  # type: ignore[attr-defined]
    return support


def test_manifest_records_the_kind_and_minicheck_template(deberta_dir: Path) -> None:
    manifest = json.loads((deberta_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["kind"] == "grounding"
    grounding = manifest["grounding"]
    # DeBERTa-v3's eos_token is [SEP]: MiniCheck's eos join, written literally
    assert grounding["template"] == "{document}[SEP]{claim}"
    assert grounding["support_column"] == 1 and grounding["chunk_unit"] == "tokens" and grounding["chunk_size"] == 400
    assert manifest["max_length"] == 2048 and manifest["labels"] == ["unsupported", "supported"]
    assert manifest["parity"]["passed"] and manifest["parity"]["max_abs_logit_diff"] <= 1e-4
    golden = json.loads((deberta_dir / "golden.json").read_text(encoding="utf-8"))
    assert golden["labels"] == ["unsupported", "supported"]
    assert max(len(pair["input_ids"]) for pair in golden["pairs"]) == 2048  # a golden document was cut


def test_nli_manifest_bytes_carry_no_kind(tiny_model_dir: Path) -> None:
    """An NLI export keeps its earlier manifest format, so earlier readers (which refuse unknown fields) read it."""
    manifest = json.loads((tiny_model_dir / "manifest.json").read_text(encoding="utf-8"))
    assert "kind" not in manifest and "grounding" not in manifest


def test_scores_equal_minicheck_on_pytorch(deberta_dir: Path, reference: Any) -> None:
    from verifier.engine.grounding_scorer import GroundingScorer

    long_document = DOCUMENT * 60  # far past 2,048 tokens: the claim is cut off, as in MiniCheck
    pairs = [(DOCUMENT, claim) for claim in CLAIMS] + [(long_document, CLAIMS[0]), ("Yes.", "No.")]
    scorer = GroundingScorer(deberta_dir, verify_golden=True)
    ours = scorer.score(pairs)
    expected = [reference(document, claim) for document, claim in pairs]
    assert np.max(np.abs(ours - np.array([value for value, _ in expected]))) <= 1e-4
    assert scorer.truncated(pairs) == [cut for _, cut in expected] == [False, False, False, True, False]
    assert len({round(float(value), 3) for value in ours}) >= 3  # the random model still tells inputs apart
    alone = np.concatenate([scorer.score([pair]) for pair in pairs])
    assert np.array_equal(alone, ours)  # float32 onnxruntime: a pair's bits do not depend on its batch


def test_identity_names_kind_template_and_length(deberta_dir: Path) -> None:
    from verifier.engine.grounding_scorer import GroundingScorer

    scorer = GroundingScorer(deberta_dir).load()
    identity = scorer.engine_identity
    assert identity.grounding is not None
    parts = identity.model_dump(mode="json")["grounding"]
    assert parts["kind"] == "grounding" and parts["template"] == "{document}[SEP]{claim}" and parts["max_length"] == 2048
    assert identity.digest_matches
    edited = dict(identity.model_dump(mode="json"), grounding=dict(parts, max_length=512))
    from verifier.engine_identity import EngineIdentity

    assert not EngineIdentity.model_validate(edited).digest_matches


def test_each_kind_refuses_the_other(deberta_dir: Path, tiny_model_dir: Path) -> None:
    from verifier import ClaimEvidence, ClaimVerifier, OnnxScorer
    from verifier.engine.grounding_scorer import GroundingScorer

    with pytest.raises(ClaimVerificationError, match="holds a three-label NLI model .*a two-label grounding model is expected"):
        GroundingScorer(tiny_model_dir).score([("a", "b")])
    with pytest.raises(ClaimVerificationError, match="holds a two-label grounding model .*a three-label NLI model is expected"):
        OnnxScorer(deberta_dir).score([("a", "b")])
    evidence = [ClaimEvidence(reference="E1", memory_id="00000000-0000-4000-8000-000000000001", text="The launch is Tuesday.")]
    with pytest.raises(ClaimVerificationError, match="holds a two-label grounding model"):
        ClaimVerifier.from_model_dir(deberta_dir).verify_sync("The launch is on Tuesday.", evidence)


def _minicheck_chunks(document: str, size: int, count: Any) -> list[str]:
    """MiniCheck's chunker, transcribed from its documented algorithm (module docstring), over NLTK's
    untrained Punkt (what runs here without the punkt_tab data)."""
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    splitter = PunktSentenceTokenizer()
    sentences: list[str] = []
    for block in document.split("\n"):
        sentences.extend(splitter.tokenize(block))
        sentences.append("\n")
    sentences = sentences[:-1] or [""]
    chunks, current, total = [], [], 0
    for sentence in sentences:
        units = count(sentence)
        if total + units > size:
            chunks.append(" ".join(current))
            current, total = [sentence], units
        else:
            current.append(sentence)
            total += units
    if current:
        chunks.append(" ".join(current))
    return [chunk for chunk in (c.replace(" \n ", "\n").strip() for c in chunks) if chunk]


@pytest.mark.parametrize("size", [12, 25, 400])
def test_chunks_and_scores_follow_minicheck(deberta_dir: Path, reference: Any, size: int) -> None:
    from verifier import GroundingChecker

    tokenizer = reference.tokenizer

    def count(sentence: str) -> int:
        return len(tokenizer(sentence, padding=False, add_special_tokens=False, max_length=2048, truncation=True)["input_ids"])

    expected_chunks = _minicheck_chunks(DOCUMENT, size, count)
    checker = GroundingChecker(deberta_dir, splitter="nltk-punkt-untrained")
    labels, best, used, per_chunk = checker.score([DOCUMENT] * len(CLAIMS), list(CLAIMS), chunk_size=size)
    assert used == [expected_chunks] * len(CLAIMS)
    assert (len(expected_chunks) > 2) == (size < 400)
    for claim_index, claim in enumerate(CLAIMS):
        wanted = [reference(chunk, claim)[0] for chunk in expected_chunks]
        assert np.max(np.abs(np.array(per_chunk[claim_index]) - wanted)) <= 1e-4
        assert best[claim_index] == max(per_chunk[claim_index])
        assert labels[claim_index] == int(best[claim_index] > 0.5)
    result = checker.check(DOCUMENT, CLAIMS[0], chunk_size=size)
    for chunk in result.chunks:  # each span covers its chunk's words, in document order
        assert chunk.text.split() == DOCUMENT[chunk.start:chunk.end].split()
    assert [chunk.start for chunk in result.chunks] == sorted(chunk.start for chunk in result.chunks)
    assert result.chunking is not None and result.chunking.splitter == "nltk-punkt-untrained"


def test_whole_document_is_cut_and_says_so(deberta_dir: Path, reference: Any) -> None:
    from verifier import GroundingChecker

    long_document = DOCUMENT * 60
    result = GroundingChecker(deberta_dir).check(long_document, CLAIMS[1], chunk_size=0)
    expected, cut = reference(long_document, CLAIMS[1])
    assert cut and result.truncated and result.chunking is None
    assert abs(result.support_probability - expected) <= 1e-4
    assert [(chunk.start, chunk.end) for chunk in result.chunks] == [(0, len(long_document))]


@pytest.mark.parametrize(
    ("docs", "claims", "message"),
    [
        (["a document"], ["  "], "claims[0] is empty"),
        ([""], ["a claim"], "docs[0] is empty"),
        (["one", "two"], ["a claim"], "equally long"),
        ("a document", ["a claim"], "docs must be a list of str"),
    ],
)
def test_bad_input_names_the_field(deberta_dir: Path, docs: Any, claims: Any, message: str) -> None:
    from verifier import GroundingChecker

    with pytest.raises(ValueError, match=re.escape(message)):
        GroundingChecker(deberta_dir).score(docs, claims)


def _ground(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "verifier", "ground", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300, check=False)


def test_ground_command_writes_one_line_per_row(deberta_dir: Path, reference: Any, tmp_path: Path) -> None:
    rows = [{"id": "r1", "document": DOCUMENT, "claim": CLAIMS[0]}, {"id": 7, "document": DOCUMENT * 60, "claim": CLAIMS[2]}]
    source = tmp_path / "rows.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    done = _ground(str(source), "--model-dir", str(deberta_dir), "--no-chunking", "-o", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [line["id"] for line in lines] == ["r1", 7]
    for row, line in zip(rows, lines):
        expected, cut = reference(row["document"], row["claim"])
        assert abs(line["support_probability"] - expected) <= 1e-4
        assert line["supported"] == (line["support_probability"] > 0.5) and line["label"] == int(line["supported"])
        assert line["truncated"] == cut and line["chunking"] is None
        assert line["engine"]["grounding"]["template"] == "{document}[SEP]{claim}"
    chunked = _ground(str(source), "--model-dir", str(deberta_dir), "--chunk-size", "30", cwd=tmp_path)
    assert chunked.returncode == 0, chunked.stderr
    first = json.loads(chunked.stdout.splitlines()[0])
    assert len(first["chunks"]) > 1 and first["chunking"]["size"] == 30
    assert first["support_probability"] == max(chunk["support_probability"] for chunk in first["chunks"])


def test_ground_refuses_a_bad_row_before_any_model_work(deberta_dir: Path, tmp_path: Path) -> None:
    source = tmp_path / "rows.jsonl"
    source.write_text(json.dumps({"id": 1, "document": "d", "claim": "c"}) + "\n" + json.dumps({"id": 2, "document": "d"}) + "\n",
                      encoding="utf-8")
    out = tmp_path / "out.jsonl"
    done = _ground(str(source), "--model-dir", str(deberta_dir), "-o", str(out), cwd=tmp_path)
    assert done.returncode == 2
    assert "line 2: field claim: must be a string" in done.stderr
    assert not out.exists()
    missing = _ground(str(source), "--model-dir", str(tmp_path / "missing"), cwd=tmp_path)
    assert missing.returncode == 1 and "does not exist" in missing.stderr  # the directory is opened first


def test_export_refuses_a_three_label_model_as_a_grounding_checker(tiny_source_dir: Path, tmp_path: Path) -> None:
    from verifier_export.errors import ExportError, LabelError
    from verifier_export.pipeline import export_model

    with pytest.raises(LabelError, match="3 labels .*a two-label grounding model is expected here, not a three-label NLI model"):
        export_model(str(tiny_source_dir), model_id=MINICHECK_DEBERTA, revision=REVISION, output=tmp_path / "x")
    with pytest.raises(ExportError, match=re.escape("--kind grounding: ") + ".*--template and --support-label"):
        export_model(str(tiny_source_dir), kind="grounding", output=tmp_path / "y")
    with pytest.raises(ExportError, match=re.escape("--template needs --kind grounding")):
        export_model(str(tiny_source_dir), template="{document}{claim}", output=tmp_path / "z")
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


def test_ground_runs_prmes_wice_protocol(deberta_dir: Path, reference: Any, tmp_path: Path) -> None:
    """WiCE's test rows (one per oracle variant) scored as PRME's registered protocol: per variant, the
    non-blank evidence sentences joined by newlines; the claim's score is the maximum over its variants."""
    rows = [
        {"label": "supported", "supporting_sentences": [[0]], "claim": CLAIMS[0],
         "evidence": [DOCUMENT.split("\n")[0], "  ", "Error rates stayed low."], "meta": {"id": "test00001"}},
        {"label": "supported", "supporting_sentences": [[0]], "claim": CLAIMS[0],
         "evidence": ["", DOCUMENT * 60], "meta": {"id": "test00001"}},
        {"label": "not_supported", "supporting_sentences": [], "claim": CLAIMS[1],
         "evidence": ["Passkeys were rolled out on Tuesday."], "meta": {"id": "test00002"}},
        {"label": "partially_supported", "supporting_sentences": [[0]], "claim": CLAIMS[2],
         "evidence": [DOCUMENT.split("\n")[1]], "meta": {"id": "test00003"}},
    ]
    source = tmp_path / "test.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    done = _ground(str(source), "--model-dir", str(deberta_dir), cwd=tmp_path)  # whole documents by default
    assert done.returncode == 0, done.stderr
    assert "whole documents" in done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["id"] for line in lines] == ["test00001", "test00002", "test00003"]
    assert all(line["chunking"] is None for line in lines)
    assert [line["oracle_variants"] for line in lines] == [2, 1, 1]
    expected: dict[str, list[float]] = {}
    for row in rows:
        document = "\n".join(item for item in row["evidence"] if item.strip())
        expected.setdefault(row["meta"]["id"], []).append(reference(document, row["claim"])[0])
    predicted = []
    for line in lines:
        wanted = expected[line["id"]]
        assert np.max(np.abs(np.array(line["variant_support_probabilities"]) - wanted)) <= 1e-4
        assert line["support_probability"] == max(line["variant_support_probabilities"])
        assert line["predicted_supported"] == (max(wanted) > 0.5)
        predicted.append(line["predicted_supported"])
    assert lines[0]["truncated"] and not lines[1]["truncated"]
    tp = int(predicted[0])
    fp = int(predicted[1]) + int(predicted[2])
    assert f"TP {tp}, FP {fp}, TN {2 - fp}, FN {1 - tp};" in done.stderr


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``exported(architecture)``: MiniCheck-Flan-T5- and -RoBERTa-shaped random models, each exported once as
    the copy of its hub id: ``(architecture, source, directory)``."""
    from verifier_export.pipeline import export_model

    made: dict[str, tuple[str, Path, Path]] = {}

    def export(architecture: str) -> tuple[str, Path, Path]:
        if architecture not in made:
            model_id = {"t5": "lytang/MiniCheck-Flan-T5-Large", "roberta": "lytang/MiniCheck-RoBERTa-Large"}[architecture]
            source = _quiet_build(architecture, tmp_path_factory.mktemp(architecture) / "hf")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                report = export_model(str(source), model_id=model_id, revision=REVISION, output=source.parent / "onnx")
            made[architecture] = (architecture, source, report.output_dir)
        return made[architecture]

    return export


def _minicheck_reference(architecture: str, source: Path, document: str, claim: str) -> tuple[float, bool]:
    """MiniCheck's own reading (minicheck/inference.py): RoBERTa ``doc + "</s>" + claim`` at 512 tokens, index 1;
    Flan-T5 ``"predict: " + doc + "</s>" + claim`` at 2048, one decoder step from id 0, softmax of tokens 3 and 209."""
    from transformers import AutoModelForSeq2SeqLM, AutoModelForSequenceClassification, AutoTokenizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tokenizer = AutoTokenizer.from_pretrained(str(source))
        if architecture == "t5":
            model = AutoModelForSeq2SeqLM.from_pretrained(str(source)).eval()
        else:
            model = AutoModelForSequenceClassification.from_pretrained(str(source)).eval()
    text = tokenizer.eos_token.join([document, claim])
    full = len(tokenizer(("predict: " if architecture == "t5" else "") + text)["input_ids"])
    with torch.no_grad():
        if architecture == "t5":
            encoded = tokenizer(["predict: " + text], max_length=2048, truncation=True, padding=True, return_tensors="pt")
            logits = model(input_ids=encoded["input_ids"], attention_mask=encoded["attention_mask"],
                           decoder_input_ids=torch.zeros((1, 1), dtype=torch.long)).logits.squeeze(1)
            probabilities = torch.softmax(logits[:, torch.tensor([3, 209])], dim=-1)
        else:
            encoded = tokenizer([text], max_length=512, truncation=True, padding=True, return_tensors="pt")
            probabilities = torch.softmax(model(**encoded).logits, dim=1)
    return float(probabilities[0, 1]), full > (2048 if architecture == "t5" else 512)


@pytest.mark.parametrize("name", ["t5", "roberta"])
def test_flan_t5_and_roberta_score_as_minicheck(exported: Any, name: str) -> None:
    from verifier import GroundingChecker

    architecture, source, directory = exported(name)
    manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    expected_template = "predict: {document}</s>{claim}" if architecture == "t5" else "{document}</s>{claim}"
    assert manifest["grounding"]["template"] == expected_template
    assert manifest["max_length"] == (2048 if architecture == "t5" else 512)
    checker = GroundingChecker(directory, verify_golden=True)
    documents = [DOCUMENT, DOCUMENT * 20, "Yes."]
    results = checker.check_many(documents, [CLAIMS[0], CLAIMS[1], CLAIMS[2]], chunk_size=0)
    for document, claim, result in zip(documents, CLAIMS, results):
        expected, cut = _minicheck_reference(architecture, source, document, claim)
        assert abs(result.support_probability - expected) <= 1e-4
        assert result.truncated == cut
    assert results[1].truncated and not results[2].truncated
    if architecture == "t5":  # Flan-T5 chunks count whitespace words (500 by default)
        result = checker.check(DOCUMENT, CLAIMS[0], chunk_size=20)
        assert result.chunking is not None and result.chunking.unit == "words"
        assert all(len(chunk.text.split()) <= 20 or "." not in chunk.text[:-1] for chunk in result.chunks)
        assert len(result.chunks) > 2


def test_a_graph_with_external_data_loads_and_is_held_to_its_record(exported: Any, tmp_path: Path) -> None:
    """MiniCheck-Flan-T5-Large is ~3 GB in float32, past protobuf's 2 GB: its export keeps the weights in
    ``model.onnx.data``. The runtime loads the graph from its verified descriptor, so it names the data's
    folder to onnxruntime after hashing the data file against the manifest."""
    import hashlib
    import shutil

    import onnx

    from verifier.engine.grounding_scorer import GroundingScorer

    _, _, directory = exported("t5")
    copy = Path(shutil.copytree(directory, tmp_path / "external"))
    onnx.save_model(onnx.load(str(directory / "model.onnx")), str(copy / "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="model.onnx.data", size_threshold=0)
    manifest = json.loads((copy / "manifest.json").read_text(encoding="utf-8"))
    for name in ("model.onnx", "model.onnx.data"):
        data = (copy / name).read_bytes()
        manifest["files"][name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    (copy / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    pairs = [(DOCUMENT, claim) for claim in CLAIMS]
    assert np.array_equal(GroundingScorer(copy).score(pairs), GroundingScorer(directory).score(pairs))
    with open(copy / "model.onnx.data", "r+b") as handle:
        handle.seek(100)
        byte = handle.read(1)
        handle.seek(100)
        handle.write(bytes([byte[0] ^ 1]))
    with pytest.raises(ClaimVerificationError, match=r"model.onnx.data: sha256 [0-9a-f]{64} size \d+ != manifest"):
        GroundingScorer(copy).score(pairs)


def test_info_and_a_second_export_name_the_grounding_kind(deberta_dir: Path, deberta_source: Path, tmp_path: Path) -> None:
    from verifier_export.pipeline import export_model

    done = subprocess.run([sys.executable, "-m", "verifier", "info", "--model-dir", str(deberta_dir)], capture_output=True,
                          text=True, cwd=tmp_path, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert re.search(r"^kind +grounding \(sequence-classification; support column 1", done.stdout, re.M)
    assert re.search(r"^template +'\{document\}\[SEP\]\{claim\}'$", done.stdout, re.M)
    assert re.search(r"^  float32 export: engine [0-9a-f]{64} \(float32 on onnxruntime ", done.stdout, re.M)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = export_model(str(deberta_source), model_id=MINICHECK_DEBERTA, revision=REVISION, output=deberta_dir)
    assert again.status == "verified" and again.manifest.grounding is not None


def test_a_variant_of_a_grounding_directory_is_gated_and_keeps_its_kind(deberta_dir: Path, tmp_path: Path) -> None:
    """``export.variants`` over a grounding directory: gated against the same PyTorch golden logits (read through
    the template), recorded, and scored by the grounding engine, whose identity names the variant."""
    import shutil

    from verifier.engine.grounding_scorer import GroundingScorer
    from verifier_export.variants import build_variants

    copy = Path(shutil.copytree(deberta_dir, tmp_path / "variants"))
    report = build_variants(copy, ["optimized"])
    manifest = json.loads((copy / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["kind"] == "grounding" and "optimized" in manifest["variants"]
    assert manifest["variants"]["optimized"]["parity"]["passed"] and report.manifest.grounding is not None
    pairs = [(DOCUMENT, claim) for claim in CLAIMS] + [(DOCUMENT * 60, CLAIMS[0])]
    plain, optimized = GroundingScorer(copy), GroundingScorer(copy, variant="optimized", verify_golden=True)
    assert np.max(np.abs(plain.score(pairs) - optimized.score(pairs))) <= 1e-5
    assert optimized.engine_identity.variant == "optimized" and optimized.engine_identity.grounding is not None
    assert optimized.engine_identity.digest != plain.engine_identity.digest


@pytest.mark.parametrize(
    ("field", "value"),
    [("template", "{claim}[SEP]{document}"), ("chunk_size", 3), ("label_token_ids", [5, 6]), ("support_column", 0)],
)
def test_an_edited_grounding_record_is_refused_at_open(deberta_dir: Path, tmp_path: Path, field: str, value: Any) -> None:
    """Adversarial hunt: an edited template in manifest.json was read as written and flipped decisions. The whole
    grounding record is also in the hashed golden.json, and the two must agree."""
    import shutil

    from verifier.engine.grounding_scorer import GroundingScorer

    copy = Path(shutil.copytree(deberta_dir, tmp_path / "edited"))
    manifest = json.loads((copy / "manifest.json").read_text(encoding="utf-8"))
    manifest["grounding"][field] = value
    if field == "support_column":
        manifest["labels"] = manifest["labels"][::-1]
    (copy / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(ClaimVerificationError, match=rf"records .*grounding\.{field} .* but golden\.json "):
        GroundingScorer(copy).score([("a document", "a claim")])


def test_ground_refuses_what_would_harm_before_any_model_work(deberta_dir: Path, tmp_path: Path) -> None:
    """Adversarial hunt: ``-o`` inside the model directory replaced its manifest; a lone surrogate failed inside the
    tokenizer after other rows were scored; an empty input never looked at the model directory."""
    import shutil

    copy = Path(shutil.copytree(deberta_dir, tmp_path / "model"))
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"id": 1, "document": "d.", "claim": "c."}) + "\n", encoding="utf-8")
    before = (copy / "manifest.json").read_bytes()
    done = _ground(str(rows), "--model-dir", str(copy), "-o", str(copy / "manifest.json"), cwd=tmp_path)
    assert done.returncode == 2 and "is the model directory's manifest.json" in done.stderr
    assert (copy / "manifest.json").read_bytes() == before
    rows.write_text(json.dumps({"id": 1, "document": "d.", "claim": "c."}) + "\n" + '{"document": "a.\\ud800", "claim": "b."}\n',
                    encoding="utf-8")
    done = _ground(str(rows), "--model-dir", str(copy), cwd=tmp_path)
    assert done.returncode == 2 and "line 2: field document: a lone surrogate" in done.stderr and not done.stdout
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    done = _ground(str(empty), "--model-dir", str(tmp_path / "missing"), cwd=tmp_path)
    assert done.returncode == 1 and "does not exist" in done.stderr


def test_the_label_token_graph_claims_no_batch_exactness(exported: Any) -> None:
    """Adversarial hunt: MiniCheck-Flan-T5's graph moved a pair by ~1e-6 between a batch and alone while its identity
    claimed a float32 onnxruntime engine's exactness; it no longer claims it (one pair at a time still is exact)."""
    from verifier.engine.grounding_scorer import GroundingScorer

    _, _, directory = exported("t5")
    assert not GroundingScorer(directory).load().engine_identity.exact_across_batches
    assert GroundingScorer(directory, padding="none").load().engine_identity.exact_across_batches
    _, _, roberta = exported("roberta")
    assert GroundingScorer(roberta).load().engine_identity.exact_across_batches
