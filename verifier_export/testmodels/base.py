"""The seeded *base-shaped* test model: the exact DeBERTa-v3-base configuration, randomly initialised.

Internal test support (see :mod:`verifier_export.testmodels`): the benchmarks time
this model (its speed is the real model's speed); its outputs are random and
must never be reported as quality figures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from verifier.engine.manifest import RANDOM_WEIGHTS_CONFIG_KEY

from . import common

__all__ = ["deberta_v3_base_config", "build_deberta_v3_base_random"]


def deberta_v3_base_config() -> Any:
    """The exact ``DebertaV2Config`` of DeBERTa-v3-base as an NLI cross-encoder.

    Values from ``cross-encoder/nli-deberta-v3-base``'s ``config.json``:
    hidden 768, 12 layers, 12 heads, intermediate 3072, vocab 128100,
    ``max_position_embeddings`` 512, relative attention with 256 position
    buckets, ``pos_att_type`` p2c+c2p, ``norm_rel_ebd`` layer_norm,
    ``share_att_key``, ``type_vocab_size`` 0, no absolute position input,
    ``id2label`` contradiction/entailment/neutral.

    Raises:
        ImportError: transformers is not installed.
    """
    from transformers import DebertaV2Config

    id2label = dict(enumerate(common.DEFAULT_LABEL_ORDER))
    return DebertaV2Config(
        vocab_size=common.DEBERTA_V3_VOCAB_SIZE,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        max_position_embeddings=512,
        type_vocab_size=0,
        initializer_range=0.02,
        layer_norm_eps=1e-7,
        relative_attention=True,
        max_relative_positions=-1,
        position_buckets=256,
        pos_att_type=["p2c", "c2p"],
        norm_rel_ebd="layer_norm",
        share_att_key=True,
        position_biased_input=False,
        pad_token_id=0,
        pooler_hidden_size=768,
        pooler_dropout=0,
        pooler_hidden_act="gelu",
        id2label=id2label,
        label2id={label: index for index, label in id2label.items()},
        **{RANDOM_WEIGHTS_CONFIG_KEY: True},
    )


def build_deberta_v3_base_random(output_dir: Path, seed: int = 0) -> Path:
    """Build a randomly initialised model with the exact DeBERTa-v3-base configuration.

    Configuration: :func:`deberta_v3_base_config`. The real DeBERTa-v3
    tokenizer files are copied in. About 184M parameters (~740 MB of float32
    safetensors); building takes a few seconds.

    Its speed is the real model's speed; its outputs are random and must never
    be reported as quality figures.

    Args:
        output_dir: directory to write (created).
        seed: torch seed for the initialisation.

    Returns:
        ``output_dir``.

    Raises:
        FileNotFoundError: the real DeBERTa-v3 tokenizer files are absent.
        ImportError: torch or transformers is not installed.
    """
    import torch
    from transformers import DebertaV2ForSequenceClassification

    common.real_tokenizer_dir()  # fail before creating anything when the files are absent
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    common.copy_real_tokenizer(output_dir, tokenizer_json=True)
    torch.manual_seed(seed)
    model = DebertaV2ForSequenceClassification(deberta_v3_base_config())
    model.eval()
    model.save_pretrained(str(output_dir), safe_serialization=True)
    return output_dir
