"""Tests of the seeded test-model builders (verifier_export.testmodels)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

from verifier_export.testmodels import (  # noqa: E402
    DEFAULT_LABEL_ORDER,
    build_tiny_model,
    deberta_v3_base_config,
    real_tokenizer_dir,
)


def _logits(model_dir: Path, pairs: list[tuple[str, str]]) -> Any:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
        model = AutoModelForSequenceClassification.from_pretrained(str(model_dir)).eval()
    batch = tokenizer([p for p, _ in pairs], [h for _, h in pairs], padding=True, return_tensors="pt")
    with torch.no_grad():
        return model(**batch).logits


PAIRS = [
    ("The cat sat on the mat.", "A dog is in the house."),
    ("Ravi owns the ingestion pipeline.", "Ravi no longer owns ingestion."),
    ("The launch is Tuesday.", "The launch is not Tuesday; it is Wednesday."),
    ("The user wants offline sync.", "I would like offline sync."),
    ("Alice does not use Jira.", "Alice uses Jira."),
    ("The release shipped on Tuesday.", "The team shipped the release."),
    ("Paris is a city.", "London is a city."),
    ("The port is 8080.", "The port is 8443."),
]


def test_tiny_deberta_layout(tiny_source_dir: Path) -> None:
    config = json.loads((tiny_source_dir / "config.json").read_text())
    assert config["model_type"] == "deberta-v2"
    assert config["id2label"] == {"0": "contradiction", "1": "entailment", "2": "neutral"}
    assert config["relative_attention"] is True
    assert config["pos_att_type"] == ["p2c", "c2p"]
    assert config["norm_rel_ebd"] == "layer_norm"
    assert config["share_att_key"] is True
    assert config["type_vocab_size"] == 0
    assert config["position_biased_input"] is False
    assert 32 <= config["hidden_size"] <= 64
    assert config["claim_verifier_random_weights"] is True

    from tokenizers import Tokenizer  # type: ignore[import-untyped]

    tokenizer = Tokenizer.from_file(str(tiny_source_dir / "tokenizer.json"))
    assert [tokenizer.token_to_id(t) for t in ("[PAD]", "[CLS]", "[SEP]", "[UNK]")] == [0, 1, 2, 3]
    encoding = tokenizer.encode("the cat", "a dog")
    assert encoding.tokens == ["[CLS]", "\u2581the", "\u2581cat", "[SEP]", "\u2581a", "\u2581dog", "[SEP]"]
    assert encoding.type_ids == [0, 0, 0, 0, 1, 1, 1]
    assert tokenizer.encode("😀").ids == [1, tokenizer.token_to_id("\u2581"), 3, 2]


def test_tiny_deberta_loads_with_autotokenizer_fast(tiny_source_dir: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_source_dir), use_fast=True)
    assert tokenizer.is_fast
    assert tokenizer.pad_token_id == 0 and tokenizer.model_max_length == 512
    assert tokenizer("the cat", "a dog")["input_ids"][0] == 1


def test_tiny_logits_far_from_zero_and_varied(tiny_source_dir: Path) -> None:
    logits = _logits(tiny_source_dir, PAIRS)
    top2 = logits.topk(2, dim=1).values
    gaps = top2[:, 0] - top2[:, 1]
    assert float(gaps.median()) > 1.0
    assert float(logits.abs().max()) > 2.0
    assert len(set(logits.argmax(dim=1).tolist())) >= 2, "argmax should vary with the input"


def test_same_seed_same_weights_other_seed_differs(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = build_tiny_model(tmp_path / "a", seed=3)
        second = build_tiny_model(tmp_path / "b", seed=3)
        third = build_tiny_model(tmp_path / "c", seed=4)
    weights = "model.safetensors"
    assert (first / weights).read_bytes() == (second / weights).read_bytes()
    assert (first / "tokenizer.json").read_bytes() == (second / "tokenizer.json").read_bytes()
    assert (first / weights).read_bytes() != (third / weights).read_bytes()


def test_bert_takes_token_type_ids(tiny_bert_source_dir: Path) -> None:
    config = json.loads((tiny_bert_source_dir / "config.json").read_text())
    assert config["model_type"] == "bert" and config["type_vocab_size"] == 2
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert_source_dir))
    assert tokenizer("the cat", "a dog")["token_type_ids"] == [0, 0, 0, 0, 1, 1, 1]


def test_label_order_is_written(tiny_reordered_source_dir: Path) -> None:
    config = json.loads((tiny_reordered_source_dir / "config.json").read_text())
    assert config["id2label"] == {"0": "entailment", "1": "neutral", "2": "contradiction"}
    assert config["label2id"] == {"entailment": 0, "neutral": 1, "contradiction": 2}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"architecture": "roberta"}, "architecture must be"),
        ({"label_order": ("a", "a", "b")}, "three distinct labels"),
        ({"architecture": "bert", "real_vocab": True}, "real_vocab=True needs"),
        ({"tokenizer_json": False}, "tokenizer_json=False needs real_vocab=True"),
    ],
)
def test_bad_arguments(tmp_path: Path, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_tiny_model(tmp_path / "m", **kwargs)
    assert not (tmp_path / "m").exists()


def test_real_vocab_missing_raises_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from verifier_export.testmodels.common import REAL_TOKENIZER_DIR_ENV

    monkeypatch.setenv(REAL_TOKENIZER_DIR_ENV, str(tmp_path / "empty"))
    with pytest.raises(FileNotFoundError, match="real DeBERTa-v3 tokenizer files not found in"):
        build_tiny_model(tmp_path / "m", real_vocab=True)
    assert not (tmp_path / "m").exists()



def test_real_vocab_model(tmp_path: Path) -> None:
    real = real_tokenizer_dir()  # the repository's own copy: never skipped
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = build_tiny_model(tmp_path / "m", real_vocab=True)
    config = json.loads((path / "config.json").read_text())
    assert config["vocab_size"] == 128100
    assert (path / "tokenizer.json").read_bytes() == (real / "tokenizer.json").read_bytes()
    assert (path / "spm.model").read_bytes() == (real / "spm.model").read_bytes()


def test_deberta_v3_base_config_matches_design() -> None:
    config = deberta_v3_base_config()
    assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads) == (768, 12, 12)
    assert (config.intermediate_size, config.vocab_size, config.max_position_embeddings) == (3072, 128100, 512)
    assert config.relative_attention and config.position_buckets == 256
    assert list(config.pos_att_type) == ["p2c", "c2p"]
    assert config.norm_rel_ebd == "layer_norm" and config.share_att_key
    assert config.type_vocab_size == 0 and not config.position_biased_input
    assert [config.id2label[i] for i in range(3)] == list(DEFAULT_LABEL_ORDER)
