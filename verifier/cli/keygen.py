"""``keygen``: a new Ed25519 key pair to sign result records with (docs/audit.md "Signatures"; the ``sign`` extra).

Usage::

    python -m verifier keygen --out signing.key    # writes signing.key (0600) and signing.key.pub

The private key goes to ``verify --sign-key`` / ``serve --sign-key`` /
``RuntimeOptions(sign_key=...)``; the public key to ``check --public-key``.
An existing file is never overwritten.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Optional

from .common import SUMMARIES, Context
from .errors import EXIT_OK, Failure, UsageError, err
from ..messages import install_hint

__all__ = ["add_parser", "run"]


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> argparse.ArgumentParser:
    """Register ``keygen``."""
    parser = subparsers.add_parser(
        "keygen",
        help=SUMMARIES["keygen"],
        description=(
            "Write a new Ed25519 private key (PEM, PKCS#8, mode 0600) to --out and its public key to --out.pub. "
            "Never overwrites a file."
        ),
    )
    parser.add_argument("--out", type=Path, required=True, metavar="FILE", help="the private key file to create")
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace, context: Optional[Context] = None) -> int:
    """Run ``keygen`` (``context`` is unused)."""
    from ..decision.signing import generate_keypair

    try:
        private, public, key_id = generate_keypair(args.out)
    except ImportError as exc:
        raise Failure(f"error: keygen needs the sign extra ({install_hint('sign')}): {exc}") from None
    except FileExistsError as exc:
        raise UsageError(f"error: {exc.filename or args.out} exists: a key is never overwritten; choose another --out") from None
    except OSError as exc:
        raise Failure(f"error: cannot write {args.out}: {exc.strerror or exc}") from None
    err(f"private key: {private} (mode 0600; give it to verify/serve --sign-key)")
    err(f"public key:  {public} (give it to check --public-key)")
    err(f"key id:      {key_id}")
    return EXIT_OK
