"""Internal test support: seeded test models, tiny Hugging Face classifier directories built offline.

**Not part of the exporter's API** (``export`` does not list it): the test
suite, ``python -m export --smoke`` (through a function-level import in
:func:`verifier_export.pipeline.export_smoke`) and the benchmarks import it, because
no real weights are reachable offline. Every builder writes an ordinary
Hugging Face model directory (``config.json``, ``model.safetensors``,
tokenizer files) that ``python -m export --model <dir>`` exports like any
downloaded revision, with :data:`verifier.engine.manifest.RANDOM_WEIGHTS_CONFIG_KEY`
set in ``config.json`` so the export and the runtime flag it as random.

Builders:

* :func:`build_tiny_model` (:mod:`.tiny`) -- a tiny DeBERTa-v2 (v3-style
  relative attention) or BERT sequence classifier with three NLI labels,
  logits scaled far from zero, and a tiny tokenizer (Unigram in DeBERTa-v3
  layout, or WordPiece).
* :func:`build_deberta_v3_base_random` (:mod:`.base`) -- the exact
  DeBERTa-v3-base configuration, randomly initialised, with the real
  DeBERTa-v3 tokenizer files (for speed figures only; its outputs mean nothing).

Shared pieces (label order, locating the real tokenizer files) are
:mod:`.common`. torch and transformers are imported inside the functions, so
importing this package is cheap. The outputs of these models are random:
never present them as quality figures.

Errors::

    FileNotFoundError   the real DeBERTa-v3 tokenizer files are not available
    ValueError          bad builder arguments (unknown architecture, bad labels)
"""

from __future__ import annotations

from .base import build_deberta_v3_base_random, deberta_v3_base_config
from .common import (
    DEFAULT_LABEL_ORDER,
    REAL_TOKENIZER_DIR_ENV,
    REAL_TOKENIZER_FILES,
    real_tokenizer_dir,
)
from .grounding import GroundingArchitecture, build_tiny_grounding_model
from .tiny import Architecture, build_tiny_model

__all__ = [
    "DEFAULT_LABEL_ORDER",
    "REAL_TOKENIZER_DIR_ENV",
    "REAL_TOKENIZER_FILES",
    "Architecture",
    "real_tokenizer_dir",
    "build_tiny_model",
    "GroundingArchitecture",
    "build_tiny_grounding_model",
    "deberta_v3_base_config",
    "build_deberta_v3_base_random",
]
