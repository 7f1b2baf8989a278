"""Reading a small file a user names (a key, an API key, a pointer): bounded, never blocking.

A path given for a key may be anything: ``/dev/zero`` would be read until memory runs out, and a
FIFO would block the open forever (docs/security.md, "Inputs"). So the file is opened without
blocking, must be a regular file, and is read only up to its limit.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Union

__all__ = ["SMALL_FILE_LIMIT", "SmallFileError", "read_small_file", "read_small_file_with_stat", "key_file_exposure"]

#: Bytes a key, API key or pointer file may hold: far above any real one (an Ed25519 PEM key is
#: ~120 bytes), far below what could exhaust memory.
SMALL_FILE_LIMIT = 64 * 1024


class SmallFileError(ValueError):
    """The file is missing, unreadable, not a regular file, or over its limit (the message says which)."""


def read_small_file(path: Union[str, "os.PathLike[str]"], what: str, limit: int = SMALL_FILE_LIMIT) -> bytes:
    """The whole of a small regular file (:func:`read_small_file_with_stat` without the status)."""
    return read_small_file_with_stat(path, what, limit)[0]


def read_small_file_with_stat(
    path: Union[str, "os.PathLike[str]"], what: str, limit: int = SMALL_FILE_LIMIT
) -> tuple[bytes, os.stat_result]:
    """The whole of a small regular file, and the status of the descriptor it was read from (its mode, for a key).

    Args:
        path: the file.
        what: what it is, for the message ("signing key", "API key file").
        limit: the most bytes it may hold.

    Raises:
        SmallFileError: ``"{what} {path}: ..."`` — does not exist, cannot be read (with the OS
            reason), is not a regular file (a FIFO, device, socket or directory), or is over
            ``limit`` bytes.
    """
    where = f"{what} {path}"
    try:  # O_NONBLOCK: a FIFO must not hang the open; it is refused just below
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise SmallFileError(f"{where}: does not exist") from None
    except OSError as exc:
        raise SmallFileError(f"{where}: cannot be read: {exc.strerror or exc}") from None
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            kind = "a directory" if Path(path).is_dir() else "a FIFO, device or socket"
            raise SmallFileError(f"{where}: is not a regular file ({kind})")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise SmallFileError(f"{where}: cannot be read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if size > limit:
        raise SmallFileError(f"{where}: is over {limit} bytes, too large for a {what}")
    return b"".join(chunks), status


def key_file_exposure(status: os.stat_result, euid: "int | None" = None) -> list[str]:
    """Why a secret key file with this status is not this process's alone (empty: it is).

    A key readable or writable by others, or owned by another user (who can read it, rewrite it or
    replace it with a key of their own), lets someone else forge what it authenticates
    (docs/security.md). ``euid``: the process's effective user id (default :func:`os.geteuid`;
    where there is none, as on Windows, ownership is not compared).
    """
    reasons = []
    if status.st_mode & 0o077:
        reasons.append(f"readable or writable by others (mode {stat.S_IMODE(status.st_mode):o}); chmod 600 it")
    if euid is None and hasattr(os, "geteuid"):
        euid = os.geteuid()
    if euid is not None and status.st_uid != euid:
        reasons.append(f"owned by another user (uid {status.st_uid}; this process runs as uid {euid}), who can "
                       "rewrite or replace it; use a key file of your own")
    return reasons
