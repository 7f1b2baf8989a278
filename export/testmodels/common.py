"""What the seeded test-model builders share: the label order, the real DeBERTa-v3 tokenizer files, JSON output.

Internal test support (see :mod:`export.testmodels`).
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
    "real_tokenizer_dir",
    "copy_real_tokenizer",
    "write_json",
]

#: ``id2label`` order of ``cross-encoder/nli-deberta-v3-base`` (its model card config).
DEFAULT_LABEL_ORDER: tuple[str, str, str] = ("contradiction", "entailment", "neutral")

#: Environment variable overriding where the real DeBERTa-v3 tokenizer files live.
REAL_TOKENIZER_DIR_ENV = "CLAIM_VERIFIER_DEBERTA_V3_TOKENIZER_DIR"

#: Files of the real DeBERTa-v3 tokenizer copied into a model directory
#: (shared/data/deberta-v3-tokenizer/README.md).
REAL_TOKENIZER_FILES: tuple[str, ...] = (
    "spm.model",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
)

#: Vocabulary size of the DeBERTa-v3 family (128,000 pieces + [MASK] at 128000, padded).
DEBERTA_V3_VOCAB_SIZE = 128100


def real_tokenizer_dir() -> Path:
    """Locate the real DeBERTa-v3 tokenizer files.

    Looks at ``$CLAIM_VERIFIER_DEBERTA_V3_TOKENIZER_DIR`` first, then
    ``../shared/data/deberta-v3-tokenizer`` relative to the repository root, then
    ``/work/shared/data/deberta-v3-tokenizer``.

    Returns:
        The directory holding ``spm.model`` and ``tokenizer.json``.

    Raises:
        FileNotFoundError: no candidate directory holds the files (a user's
            clone has no ``../shared``); tests should skip on this.
    """
    candidates: list[Path] = []
    env = os.environ.get(REAL_TOKENIZER_DIR_ENV)
    if env:
        candidates.append(Path(env))
    repo_root = Path(__file__).resolve().parents[2]
    candidates.append(repo_root.parent / "shared" / "data" / "deberta-v3-tokenizer")
    candidates.append(Path("/work/shared/data/deberta-v3-tokenizer"))
    for candidate in candidates:
        if (candidate / "spm.model").is_file() and (candidate / "tokenizer.json").is_file():
            return candidate
    tried = ", ".join(str(path) for path in candidates)
    raise FileNotFoundError(
        f"real DeBERTa-v3 tokenizer files not found (tried {tried}); "
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
