"""The seeded *tiny* test models: DeBERTa-v2 (v3-style relative attention) or BERT, hidden 32.

Internal test support (see :mod:`verifier_export.testmodels`): the tests, the
``--smoke`` export and the benchmark's plumbing checks build their models
here. Their outputs are random: never present them as quality figures.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Sequence

from verifier.engine.manifest import RANDOM_WEIGHTS_CONFIG_KEY

from . import common

if TYPE_CHECKING:  # pragma: no cover - typing only
    import torch

__all__ = ["Architecture", "build_tiny_model"]

Architecture = Literal["deberta-v2", "bert"]

_TINY_MAX_POSITIONS = 512
# Ten times transformers' default (0.02): the [CLS] state then varies with the
# input, so the classifier needs only a modest scale and float32 noise in the
# logits stays near 1e-5 (at 0.02 the head must be scaled ~10^4x and PyTorch's
# own float32 and float64 logits differ by 5e-4, failing any 1e-4 gate).
_TINY_INITIALIZER_RANGE = 0.2

# Words that get their own Unigram piece in the tiny vocabulary, so common text
# tokenizes into few pieces (everything else falls back to single characters).
_TINY_WORDS: tuple[str, ...] = (
    "the", "a", "an", "is", "was", "are", "were", "be", "not", "no", "never",
    "and", "or", "of", "to", "in", "on", "at", "for", "with", "by", "from",
    "it", "this", "that", "he", "she", "they", "we", "i", "you", "user", "team",
    "launch", "release", "deploy", "deployed", "shipped", "tuesday", "wednesday",
    "monday", "friday", "may", "june", "date", "trip", "starts", "stop", "next",
    "after", "before", "owns", "leads", "project", "review", "pipeline",
    "passkeys", "enabled", "wants", "would", "like", "offline", "sync", "keys",
    "rotated", "port", "tests", "pass", "customer", "notice", "cat", "dog",
    "sat", "mat", "house", "city", "paris", "london", "ravi", "tessa", "alice",
    "jira", "uses", "use", "does", "did", "has", "have", "had",
    "ing", "ed", "s", "er", "ly", "tion",
)
_ASCII_CHARS = (
    "abcdefghijklmnopqrstuvwxyz"
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    "0123456789"
    ".,;:!?'\"()[]{}-_/\\@#$%&*+=<>~`^|"
)
# A few non-ASCII letters get pieces; other characters (CJK, emoji) become [UNK].
_EXTRA_CHARS = "éèêàâçñöüäßøåíóúÉÖÜ"


def _check_labels(label_order: Sequence[str]) -> tuple[str, ...]:
    labels = tuple(label_order)
    if len(labels) != 3 or len(set(labels)) != 3:
        raise ValueError(f"label_order must be three distinct labels, got {labels!r}")
    return labels


def _tiny_unigram_vocab() -> list[tuple[str, float]]:
    """The tiny Unigram vocabulary in DeBERTa-v3 layout: [PAD]=0, [CLS]=1, [SEP]=2, [UNK]=3."""
    vocab: list[tuple[str, float]] = [("[PAD]", 0.0), ("[CLS]", 0.0), ("[SEP]", 0.0), ("[UNK]", 0.0)]
    seen = {piece for piece, _ in vocab}

    def add(piece: str, score: float) -> None:
        if piece not in seen:
            seen.add(piece)
            vocab.append((piece, score))

    add("\u2581", -6.0)
    for word in _TINY_WORDS:
        add("\u2581" + word, -4.0)
        add("\u2581" + word.capitalize(), -4.5)
        add(word, -5.0)
    for char in _ASCII_CHARS + _EXTRA_CHARS:
        add("\u2581" + char, -8.0)
        add(char, -9.0)
    add("[MASK]", 0.0)
    return vocab


def _write_tiny_unigram_tokenizer(output_dir: Path, *, max_length: int) -> int:
    """Write a tiny DeBERTa-v3-layout Unigram ``tokenizer.json`` plus transformers configs.

    Returns:
        The vocabulary size (number of pieces).
    """
    from tokenizers import (  # type: ignore[import-untyped]
        AddedToken,
        Regex,
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
    )

    vocab = _tiny_unigram_vocab()
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=3, byte_fallback=False))
    # DeBERTa-v3: strip, then sentencepiece's nmt_nfkc normalisation (approximated
    # by NFKC plus collapsing runs of spaces), then a Metaspace pre-tokenizer.
    tokenizer.normalizer = normalizers.Sequence(
        [
            normalizers.Strip(left=True, right=True),
            normalizers.NFKC(),
            normalizers.Replace(Regex(r"\s+"), " "),
        ]
    )
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tokenizer.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 1), ("[SEP]", 2)],
    )
    tokenizer.add_special_tokens(
        [
            AddedToken(token, single_word=False, lstrip=False, rstrip=False, normalized=False, special=True)
            for token in ("[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]")
        ]
    )
    tokenizer.save(str(output_dir / "tokenizer.json"))

    special = {
        "bos_token": "[CLS]",
        "eos_token": "[SEP]",
        "cls_token": "[CLS]",
        "sep_token": "[SEP]",
        "pad_token": "[PAD]",
        "unk_token": "[UNK]",
        "mask_token": "[MASK]",
    }
    tokenizer_config: dict[str, Any] = {
        "tokenizer_class": "DebertaV2Tokenizer",
        "model_max_length": max_length,
        "do_lower_case": False,
        "split_by_punct": False,
        "vocab_type": "spm",
        "clean_up_tokenization_spaces": False,
        **special,
    }
    common.write_json(output_dir / "tokenizer_config.json", tokenizer_config)
    common.write_json(output_dir / "special_tokens_map.json", special)
    return len(vocab)


def _write_tiny_wordpiece_tokenizer(output_dir: Path, *, max_length: int) -> int:
    """Write a tiny lower-casing WordPiece (BERT) tokenizer; return its vocabulary size."""
    from transformers import BertTokenizerFast

    tokens: list[str] = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    seen = set(tokens)
    for piece in list(_TINY_WORDS) + list(_ASCII_CHARS.lower() + "eacnouaøaiou"):
        for candidate in (piece, "##" + piece):
            if candidate not in seen:
                seen.add(candidate)
                tokens.append(candidate)
    vocab_file = output_dir / "vocab.txt"
    vocab_file.write_text("\n".join(tokens) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast(vocab_file=str(vocab_file), do_lower_case=True, model_max_length=max_length)
    tokenizer.save_pretrained(str(output_dir))
    return len(tokens)


def _calibration_batch(
    output_dir: Path, vocab_size: int, *, with_token_type_ids: bool, seed: int
) -> dict[str, "torch.Tensor"]:
    """A fixed batch of word-salad (premise, hypothesis) pairs used to scale the classifier head.

    Encoded with the directory's own ``tokenizer.json`` so the calibration sees
    realistic ids; random ids when there is none (``spm.model`` only).
    """
    import random

    import torch

    rng = random.Random(seed + 1)
    tokenizer_file = output_dir / "tokenizer.json"
    batch = 64
    if tokenizer_file.is_file():
        from tokenizers import Tokenizer  # type: ignore[import-untyped]

        tokenizer = Tokenizer.from_file(str(tokenizer_file))
        tokenizer.no_truncation()
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        pairs = [
            (
                " ".join(rng.choice(_TINY_WORDS) for _ in range(rng.randint(3, 12))).capitalize() + ".",
                " ".join(rng.choice(_TINY_WORDS) for _ in range(rng.randint(3, 8))).capitalize() + ".",
            )
            for _ in range(batch)
        ]
        encodings = tokenizer.encode_batch(pairs)
        inputs = {
            "input_ids": torch.tensor([e.ids for e in encodings], dtype=torch.long),
            "attention_mask": torch.tensor([e.attention_mask for e in encodings], dtype=torch.long),
        }
        if with_token_type_ids:
            inputs["token_type_ids"] = torch.tensor([e.type_ids for e in encodings], dtype=torch.long)
        return inputs
    generator = torch.Generator().manual_seed(seed + 1)
    length = 24
    ids = torch.randint(5, vocab_size, (batch, length), generator=generator)
    ids[:, 0] = 1
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def _scale_classifier(model: Any, classifier: "torch.nn.Linear", inputs: dict[str, "torch.Tensor"]) -> None:
    """Centre and scale the classifier head so logits are far from zero and vary by input.

    After this, logits over the calibration batch have zero mean per label and a
    standard deviation of about 4, so typical top-1/top-2 gaps are well above 1
    and far above float32 export noise.
    """
    import torch

    with torch.no_grad():
        model.eval()
        logits = model(**inputs).logits.double()
        mean = logits.mean(dim=0)
        spread = float(logits.std(dim=0).mean())
        scale = 4.0 / max(spread, 1e-6)
        classifier.weight.mul_(scale)
        classifier.bias.copy_(((classifier.bias.double() - mean) * scale).to(classifier.bias.dtype))


def build_tiny_model(
    output_dir: Path,
    *,
    seed: int = 0,
    architecture: Architecture = "deberta-v2",
    label_order: tuple[str, str, str] = common.DEFAULT_LABEL_ORDER,
    real_vocab: bool = False,
    tokenizer_json: bool = True,
) -> Path:
    """Build a seeded tiny three-label sequence classifier as a Hugging Face directory.

    ``deberta-v2``: ``DebertaV2ForSequenceClassification`` with DeBERTa-v3-style
    relative attention (``relative_attention``, 64 ``position_buckets``,
    ``pos_att_type`` p2c+c2p, ``norm_rel_ebd`` layer_norm, ``share_att_key``,
    ``type_vocab_size`` 0, no absolute positions), hidden 32, 2 layers, 4
    heads, max 512 positions, and a tiny Unigram ``tokenizer.json`` in
    DeBERTa-v3 layout ([PAD]=0, [CLS]=1, [SEP]=2, [UNK]=3; ``[CLS] A [SEP] B
    [SEP]``; Metaspace pre-tokenizer; characters outside its ~600 pieces become
    [UNK]). The graph takes ``input_ids`` and ``attention_mask`` only.

    ``bert``: ``BertForSequenceClassification`` (hidden 32, 2 layers,
    ``type_vocab_size`` 2) with a tiny lower-casing WordPiece tokenizer; the
    graph also takes ``token_type_ids``.

    The classifier head is centred and scaled on a calibration batch so logits
    have a spread of about 4 (argmax stable, gaps well above export noise) and
    the argmax varies with the input. Same arguments, same bytes of weights.

    Args:
        output_dir: directory to write (created; existing files are overwritten).
        seed: torch seed for the weights.
        architecture: ``"deberta-v2"`` or ``"bert"``.
        label_order: ``id2label`` in index order (any three distinct strings, so
            tests can also build models with wrong labels).
        real_vocab: deberta-v2 only: use the real 128,100-piece DeBERTa-v3
            tokenizer files (``spm.model``, ``tokenizer.json``, configs) and a
            matching embedding size.
        tokenizer_json: with ``real_vocab``, whether to copy ``tokenizer.json``
            (``False`` leaves only ``spm.model``, exercising the export's
            conversion path).

    Returns:
        ``output_dir``.

    Raises:
        ValueError: unknown ``architecture``, ``real_vocab`` with ``bert``, or
            ``label_order`` not three distinct strings.
        FileNotFoundError: ``real_vocab`` and the real tokenizer files are absent
            (see :func:`~verifier_export.testmodels.common.real_tokenizer_dir`).
        ImportError: torch or transformers is not installed (the ``export`` extra).

    Example:
        >>> from pathlib import Path
        >>> import tempfile
        >>> path = build_tiny_model(Path(tempfile.mkdtemp()) / "tiny")  # doctest: +SKIP
        >>> sorted(p.name for p in path.iterdir())  # doctest: +SKIP
        ['config.json', 'model.safetensors', 'special_tokens_map.json', 'tokenizer.json', 'tokenizer_config.json']
    """
    labels = _check_labels(label_order)
    if architecture not in ("deberta-v2", "bert"):
        raise ValueError(f"architecture must be 'deberta-v2' or 'bert', got {architecture!r}")
    if real_vocab and architecture != "deberta-v2":
        raise ValueError("real_vocab=True needs architecture='deberta-v2' (the real vocabulary is DeBERTa-v3's)")
    if not real_vocab and not tokenizer_json:
        raise ValueError("tokenizer_json=False needs real_vocab=True (only the real vocabulary has spm.model)")

    import torch

    output_dir = Path(output_dir)
    if real_vocab:
        common.real_tokenizer_dir()  # fail before creating anything when the files are absent
    output_dir.mkdir(parents=True, exist_ok=True)
    id2label = {index: label for index, label in enumerate(labels)}
    label2id = {label: index for index, label in id2label.items()}

    if architecture == "deberta-v2":
        from transformers import DebertaV2Config, DebertaV2ForSequenceClassification

        if real_vocab:
            common.copy_real_tokenizer(output_dir, tokenizer_json=tokenizer_json)
            vocab_size = common.DEBERTA_V3_VOCAB_SIZE
        else:
            vocab_size = _write_tiny_unigram_tokenizer(output_dir, max_length=_TINY_MAX_POSITIONS)
        config = DebertaV2Config(
            vocab_size=vocab_size,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            hidden_act="gelu",
            hidden_dropout_prob=0.1,
            attention_probs_dropout_prob=0.1,
            max_position_embeddings=_TINY_MAX_POSITIONS,
            type_vocab_size=0,
            initializer_range=_TINY_INITIALIZER_RANGE,
            layer_norm_eps=1e-7,
            relative_attention=True,
            max_relative_positions=-1,
            position_buckets=64,
            pos_att_type=["p2c", "c2p"],
            norm_rel_ebd="layer_norm",
            share_att_key=True,
            position_biased_input=False,
            pad_token_id=0,
            pooler_hidden_size=32,
            pooler_dropout=0,
            pooler_hidden_act="gelu",
            id2label=id2label,
            label2id=label2id,
            **{RANDOM_WEIGHTS_CONFIG_KEY: True},
        )
        torch.manual_seed(seed)
        model: Any = DebertaV2ForSequenceClassification(config)
        calibration = _calibration_batch(output_dir, vocab_size, with_token_type_ids=False, seed=seed)
    else:
        from transformers import BertConfig, BertForSequenceClassification

        vocab_size = _write_tiny_wordpiece_tokenizer(output_dir, max_length=_TINY_MAX_POSITIONS)
        config_bert = BertConfig(
            vocab_size=vocab_size,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            max_position_embeddings=_TINY_MAX_POSITIONS,
            type_vocab_size=2,
            initializer_range=_TINY_INITIALIZER_RANGE,
            pad_token_id=0,
            id2label=id2label,
            label2id=label2id,
            **{RANDOM_WEIGHTS_CONFIG_KEY: True},
        )
        torch.manual_seed(seed)
        model = BertForSequenceClassification(config_bert)
        calibration = _calibration_batch(output_dir, vocab_size, with_token_type_ids=True, seed=seed)

    _scale_classifier(model, model.classifier, calibration)
    model.save_pretrained(str(output_dir), safe_serialization=True)
    return output_dir
