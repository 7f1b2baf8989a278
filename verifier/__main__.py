"""``python -m verifier``: the command line (implemented in :mod:`verifier.cli`).

Usage::

    python -m verifier verify INPUT [-o OUT.jsonl] [options]
    python -m verifier verify --claim "..." --evidence "..." [--evidence "..."]
    python -m verifier info [--model-dir DIR]

Run ``python -m verifier verify --help`` for every option.
"""

from __future__ import annotations

from .cli import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
