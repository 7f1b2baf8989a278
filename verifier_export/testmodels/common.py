"""What the seeded test-model builders share: the label order, the real DeBERTa-v3 tokenizer files, JSON output.

Internal test support (see :mod:`verifier_export.testmodels`).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_LABEL_ORDER",
    "REAL_TOKENIZER_DIR_ENV",
    "REAL_TOKENIZER_FILES",
    "DEBERTA_V3_VOCAB_SIZE",
    "VENDORED_TOKENIZER_DIR",
    "real_tokenizer_dir",
    "copy_real_tokenizer",
    "write_json",
]

#: ``id2label`` order of ``cross-encoder/nli-deberta-v3-base`` (its model card config).
DEFAULT_LABEL_ORDER: tuple[str, str, str] = ("contradiction", "entailment", "neutral")

#: Environment variable overriding where the real DeBERTa-v3 tokenizer files live.
REAL_TOKENIZER_DIR_ENV = "CLAIM_VERIFIER_DEBERTA_V3_TOKENIZER_DIR"

#: Files of the real DeBERTa-v3 tokenizer copied into a model directory.
REAL_TOKENIZER_FILES: tuple[str, ...] = (
    "spm.model",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
)

#: Vocabulary size of the DeBERTa-v3 family (128,000 pieces + [MASK] at 128000, padded).
DEBERTA_V3_VOCAB_SIZE = 128100


#: The copy this repository carries (tests/data/deberta-v3-tokenizer/README.md: provenance, MIT licence).
VENDORED_TOKENIZER_DIR = Path(__file__).resolve().parents[2] / "tests" / "data" / "deberta-v3-tokenizer"


def real_tokenizer_dir() -> Path:
    """Locate the real DeBERTa-v3 tokenizer files.

    ``$CLAIM_VERIFIER_DEBERTA_V3_TOKENIZER_DIR`` when set, else the copy this
    repository carries (:data:`VENDORED_TOKENIZER_DIR`).

    Returns:
        The directory holding ``spm.model`` and ``tokenizer.json``.

    Raises:
        FileNotFoundError: the directory lacks the files (an installed package
            without the repository's ``tests/data``: set the variable).
    """
    env = os.environ.get(REAL_TOKENIZER_DIR_ENV)
    candidate = Path(env) if env else VENDORED_TOKENIZER_DIR
    if (candidate / "spm.model").is_file() and (candidate / "tokenizer.json").is_file():
        return candidate
    raise FileNotFoundError(
        f"real DeBERTa-v3 tokenizer files not found in {candidate}; "
        f"set ${REAL_TOKENIZER_DIR_ENV} to a directory with spm.model and tokenizer.json"
    )


def copy_real_tokenizer(output_dir: Path, *, tokenizer_json: bool) -> None:
    source = real_tokenizer_dir()
    for name in REAL_TOKENIZER_FILES:
        if name == "tokenizer.json" and not tokenizer_json:
            continue
        if (source / name).is_file():
            shutil.copyfile(source / name, output_dir / name)


def write_json(path: Path, payload: Any) -> None:
    path.write_text(json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
