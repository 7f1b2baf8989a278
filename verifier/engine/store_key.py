"""The score store's secret key: rows are authenticated with HMAC-SHA256 under it (docs/score-store.md).

A row's logits come back into verifications unchecked by the model, so a row anyone could
rewrite (a plain checksum over public data) would let whoever can write the store file decide
results. The MAC makes a row written without the key a miss. The key lives in a file:

- given (``RuntimeOptions.score_cache_key``, ``--score-cache-key FILE``): it must exist;
- else ``STORE.key`` beside the store, created (mode 0600, written to a temporary file, fsynced
  and hard-linked into place, so it is never half-written and two processes creating it at once
  end up with the same key) when missing.

The key is the file's content without surrounding ASCII whitespace, at least
:data:`MIN_KEY_BYTES` bytes (a created file holds 64 hex digits of :func:`secrets.token_hex`).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import tempfile
from pathlib import Path

from ..small_files import SmallFileError, key_file_exposure, read_small_file_with_stat
from ..types import ClaimVerificationError

__all__ = ["MAC_BYTES", "MIN_KEY_BYTES", "MAX_KEY_BYTES", "ScoreStoreError", "default_key_path", "load_key", "row_mac"]

_LOG = logging.getLogger("verifier.engine")

#: Length of a row's MAC (a full HMAC-SHA256 digest).
MAC_BYTES = 32
#: Shortest key accepted (256 bits when random bytes; a created key is 64 hex digits).
MIN_KEY_BYTES = 32
#: Longest key file read (anything longer is not a key file).
MAX_KEY_BYTES = 4096


class ScoreStoreError(ClaimVerificationError):
    """The score store (or its key file) cannot be used: not SQLite, another schema or version,
    unreadable or unwritable, a key file missing (when given), too short or not a regular file."""


def default_key_path(store: Path) -> Path:
    """Where the key of the store at ``store`` lives when none is given: ``STORE.key`` beside it."""
    return store.with_name(store.name + ".key")


def row_mac(key: bytes, row_key: bytes, blob: bytes) -> bytes:
    """HMAC-SHA256 under ``key`` of a row's 32-byte key followed by its stored bytes (32 bytes)."""
    return hmac.new(key, row_key + blob, hashlib.sha256).digest()


def _read(path: Path) -> bytes:
    """The key in ``path``; raises :class:`ScoreStoreError` naming the path and what is wrong."""
    try:  # bounded and never blocking: a FIFO or /dev/zero is refused (verifier/small_files.py)
        data, info = read_small_file_with_stat(path, "score store key", MAX_KEY_BYTES)
    except SmallFileError as exc:
        hint = " (create one: see docs/score-store.md)" if str(exc).endswith(": does not exist") else ""
        raise ScoreStoreError(f"{exc}{hint}") from None
    key = data.strip(b" \t\r\n")
    if len(key) < MIN_KEY_BYTES:
        raise ScoreStoreError(
            f"score store key {path}: holds {len(key)} bytes, at least {MIN_KEY_BYTES} are needed "
            "(e.g. 64 hex digits of python -c 'import secrets; print(secrets.token_hex(32))')"
        )
    for reason in key_file_exposure(info):  # used, as docs/score-store.md says, but never silently
        _LOG.warning("score store key %s is %s", path, reason)
    return key


def _create(path: Path) -> None:
    """Write a fresh random key to ``path`` unless another process did first (never a partial file)."""
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)  # mode 0600
    try:
        try:
            os.write(fd, (secrets.token_hex(MIN_KEY_BYTES) + "\n").encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(temporary, path)  # atomic, and never replaces a key another process linked first
        except FileExistsError:
            pass
        except OSError:  # a filesystem without hard links: rename, still whole (a race may replace a fresh key)
            if not path.exists():
                os.replace(temporary, path)
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
    finally:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass


def load_key(store: Path, key_file: "Path | None") -> tuple[bytes, Path]:
    """The key for the store at ``store`` and the file it came from.

    Args:
        store: the store file's path.
        key_file: the key file given by the caller (must exist), or ``None``: :func:`default_key_path`,
            created when missing.

    Raises:
        ScoreStoreError: the key file is missing (given), unreadable, not a regular file, too short
            or too long, or cannot be created.
    """
    if key_file is not None:
        return _read(Path(key_file)), Path(key_file)
    path = default_key_path(store)
    if not os.path.lexists(path):
        try:
            _create(path)
        except OSError as exc:
            raise ScoreStoreError(f"score store key {path}: cannot be created: {exc}") from exc
    return _read(path), path
