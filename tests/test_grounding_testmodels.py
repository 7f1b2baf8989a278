"""The seeded tiny grounding checkers (verifier_export.testmodels.grounding) and the T5 label-token graph.

Each architecture is built once per module. Checked: the tokenizers load fast
and in the right class, with MiniCheck's input conventions (T5: a literal
``</s>`` is the special token and the encoding ends with it; RoBERTa: ``<s> ...
</s> ... </s>``); outputs vary with the input; the same seed writes the same
bytes; the one-graph Flan-T5 export (verifier_export.label_token_graph) agrees
with transformers within 1e-4 for batch 1 and a padded batch of 3.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.export
torch = pytest.importorskip("torch")

from verifier.engine.manifest import RANDOM_WEIGHTS_CONFIG_KEY  # noqa: E402
from verifier_export.errors import ExportError  # noqa: E402
from verifier_export.label_token_graph import export_label_token_graph, reference_label_logits  # noqa: E402
from verifier_export.testmodels import build_tiny_grounding_model  # noqa: E402

DOCUMENTS = (
    "The bridge opened in 2004 in Paris after 12 months of work, and the mayor was present.",
    "Alice won the football match on Friday.",
    "Prices went up by 3% - from $10 to $10.30.",
    "The museum closed last year because the costs rose.",
)
CLAIMS = (
    "The bridge opened in 2004.",
    "Ravi lost the match in Lima.",
    "Prices rose.",
    "The museum is open.",
)
T5_TEXTS = tuple(f"predict: {document}</s>{claim}" for document, claim in zip(DOCUMENTS, CLAIMS))
TOKENIZER_CLASSES = {
    "deberta-v2": "DebertaV2TokenizerFast",
    "roberta": "RobertaTokenizerFast",
    "t5": "T5TokenizerFast",
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("grounding")
    return {
        arch: build_tiny_grounding_model(root / arch, architecture=arch)  # type: ignore[arg-type]
        for arch in TOKENIZER_CLASSES
    }


@pytest.fixture(scope="module")
def t5_model(built: dict[str, Path]) -> Any:
    from transformers import AutoModelForSeq2SeqLM

    return AutoModelForSeq2SeqLM.from_pretrained(str(built["t5"])).eval()


@pytest.fixture(scope="module")
def t5_graph(t5_model: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_label_token_graph(t5_model, tmp_path_factory.mktemp("label-graph") / "model.onnx")


def _tokenizer(path: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path))


@pytest.mark.parametrize("arch", sorted(TOKENIZER_CLASSES))
def test_directory_loads_with_a_fast_tokenizer_of_the_expected_class(built: dict[str, Path], arch: str) -> None:
    path = built[arch]
    tokenizer = _tokenizer(path)
    assert tokenizer.is_fast
    assert type(tokenizer).__name__ == TOKENIZER_CLASSES[arch]
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    assert config[RANDOM_WEIGHTS_CONFIG_KEY] is True
    for name in ("model.safetensors", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        assert (path / name).is_file(), name
    if arch != "t5":
        assert config["id2label"] == {"0": "LABEL_0", "1": "LABEL_1"}


def test_t5_tokenizer_matches_the_literal_eos_and_appends_one(built: dict[str, Path]) -> None:
    tokenizer = _tokenizer(built["t5"])
    ids = tokenizer("predict: a document</s>a claim")["input_ids"]
    assert ids[-1] == 1
    assert ids.count(1) == 2
    assert tokenizer.pad_token_id == 0 and tokenizer.unk_token_id == 2
    # the label tokens are ordinary pieces, not specials or unknowns
    pieces = tokenizer.convert_ids_to_tokens([3, 209])
    assert all(piece not in ("<pad>", "</s>", "<unk>") for piece in pieces), pieces


def test_roberta_tokenizer_uses_roberta_specials(built: dict[str, Path]) -> None:
    tokenizer = _tokenizer(built["roberta"])
    ids = tokenizer("doc</s>claim")["input_ids"]
    assert ids[0] == 0 and ids[-1] == 2
    assert ids.count(2) == 2 and 0 not in ids[1:]
    middle = ids.index(2)
    assert 1 < middle < len(ids) - 2  # pieces of "doc", then </s>, then pieces of "claim"
    assert [tokenizer.convert_tokens_to_ids(t) for t in ("<s>", "<pad>", "</s>", "<unk>", "<mask>")] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("arch", ["deberta-v2", "roberta"])
def test_classifier_probabilities_vary_with_the_input(built: dict[str, Path], arch: str) -> None:
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(str(built[arch])).eval()
    encoded = _tokenizer(built[arch])(list(DOCUMENTS), list(CLAIMS), padding=True, return_tensors="pt")
    with torch.no_grad():
        supported = model(**encoded).logits.softmax(-1)[:, 1].numpy()
    gaps = np.abs(supported[:, None] - supported[None, :])[np.triu_indices(len(supported), 1)]
    assert (gaps > 0.01).sum() >= 3, supported


def test_t5_label_probabilities_vary_with_the_input(built: dict[str, Path], t5_model: Any) -> None:
    encoded = _tokenizer(built["t5"])(list(T5_TEXTS), padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = t5_model(
            input_ids=encoded["input_ids"],
            attention_mask=encoded["attention_mask"],
            decoder_input_ids=torch.zeros((len(T5_TEXTS), 1), dtype=torch.long),
        ).logits[:, 0, [3, 209]]
    supported = logits.softmax(-1)[:, 1].numpy()
    assert ((supported > 0.01) & (supported < 0.99)).any(), supported
    gaps = np.abs(supported[:, None] - supported[None, :])[np.triu_indices(len(supported), 1)]
    assert (gaps > 0.01).sum() >= 3, supported


@pytest.mark.parametrize("arch", ["deberta-v2", "roberta"])
def test_classifier_onnx_export_matches_pytorch(built: dict[str, Path], arch: str, tmp_path: Path) -> None:
    """The classifiers export with the pipeline's optimum path, and float32 ONNX and PyTorch agree within 1e-4."""
    from transformers import AutoModelForSequenceClassification

    from verifier_export.onnx import export_onnx

    model = AutoModelForSequenceClassification.from_pretrained(str(built[arch])).eval()
    with warnings.catch_warnings():
        # RoBERTa's trace warns in torch's own F.embedding (padding_idx vs weight.size(0)): not a test subject.
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        graph = export_onnx(model, tmp_path / "model.onnx", opset=None)
    encoded = _tokenizer(built[arch])(list(DOCUMENTS[:3]), list(CLAIMS[:3]), padding=True, return_tensors="np")
    with torch.no_grad():
        expected = model(**{name: torch.as_tensor(value) for name, value in encoded.items()}).logits.numpy()
    import onnxruntime as ort

    session = ort.InferenceSession(str(graph), providers=["CPUExecutionProvider"])
    feed = {i.name: encoded[i.name].astype(np.int64) for i in session.get_inputs()}
    (logits,) = session.run(None, feed)
    np.testing.assert_allclose(logits, expected, atol=1e-4, rtol=0)


@pytest.mark.parametrize("arch", ["roberta", "t5"])
def test_the_same_seed_writes_the_same_bytes(built: dict[str, Path], arch: str, tmp_path: Path) -> None:
    again = build_tiny_grounding_model(tmp_path / arch, architecture=arch)  # type: ignore[arg-type]
    names = sorted(p.name for p in built[arch].iterdir())
    assert names == sorted(p.name for p in again.iterdir())
    for name in names:
        assert (built[arch] / name).read_bytes() == (again / name).read_bytes(), name


def test_deberta_same_seed_same_weights_other_seed_other_weights(built: dict[str, Path], tmp_path: Path) -> None:
    again = build_tiny_grounding_model(tmp_path / "same", architecture="deberta-v2", seed=0)
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        assert (built["deberta-v2"] / name).read_bytes() == (again / name).read_bytes(), name
    other = build_tiny_grounding_model(tmp_path / "other", architecture="deberta-v2", seed=1)
    assert (other / "model.safetensors").read_bytes() != (again / "model.safetensors").read_bytes()
    assert json.loads((again / "tokenizer_config.json").read_text(encoding="utf-8"))["model_max_length"] == 2048


def _run_graph(graph: Path, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(str(graph), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["input_ids", "attention_mask"]
    assert [o.name for o in session.get_outputs()] == ["logits"]
    (logits,) = session.run(None, {"input_ids": ids.astype(np.int64), "attention_mask": mask.astype(np.int64)})
    assert logits.dtype == np.float32 and logits.shape == (ids.shape[0], 2)
    return np.asarray(logits)


def test_label_token_graph_matches_transformers_for_batch_1(
    built: dict[str, Path], t5_model: Any, t5_graph: Path
) -> None:
    encoded = _tokenizer(built["t5"])([T5_TEXTS[0]], return_tensors="np")
    ids, mask = encoded["input_ids"], encoded["attention_mask"]
    # independent reference: the transformers model called directly
    with torch.no_grad():
        direct = t5_model(
            input_ids=torch.as_tensor(ids), attention_mask=torch.as_tensor(mask),
            decoder_input_ids=torch.zeros((1, 1), dtype=torch.long),
        ).logits[:, 0, [3, 209]].numpy()
    np.testing.assert_allclose(reference_label_logits(t5_model, ids, mask), direct, atol=1e-6, rtol=0)
    np.testing.assert_allclose(_run_graph(t5_graph, ids, mask), direct, atol=1e-4, rtol=0)


def test_label_token_graph_matches_transformers_for_a_padded_batch_of_3(
    built: dict[str, Path], t5_model: Any, t5_graph: Path
) -> None:
    texts = [T5_TEXTS[0], "predict: x</s>y", T5_TEXTS[1] + " " + DOCUMENTS[2]]
    encoded = _tokenizer(built["t5"])(texts, padding=True, return_tensors="np")
    ids, mask = encoded["input_ids"], encoded["attention_mask"]
    assert len(set(mask.sum(axis=1).tolist())) == 3  # three lengths, two rows padded
    graph_logits = _run_graph(t5_graph, ids, mask)
    reference = reference_label_logits(t5_model, ids, mask)
    assert reference.dtype == np.float32 and reference.shape == (3, 2)
    np.testing.assert_allclose(graph_logits, reference, atol=1e-4, rtol=0)
    # each padded row scores as it does alone (padding is masked out)
    for row, text in enumerate(texts):
        alone = _tokenizer(built["t5"])([text], return_tensors="np")
        np.testing.assert_allclose(
            _run_graph(t5_graph, alone["input_ids"], alone["attention_mask"])[0], graph_logits[row], atol=1e-4, rtol=0
        )


def test_label_token_graph_refuses_a_label_token_outside_the_vocabulary(t5_model: Any, tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="outside the model's vocabulary"):
        export_label_token_graph(t5_model, tmp_path / "model.onnx", label_token_ids=(3, 10**6))
    assert not (tmp_path / "model.onnx").exists()
