"""Atomic output files of ``verify INPUT``: ``-o`` and ``--row-map`` move into place together or not at all.

``-o`` and ``--row-map`` must name two different files, neither of them
``INPUT`` (:func:`check_output_paths`, exit 2). Both destinations are checked
(an existing directory, a missing parent, an unwritable directory: exit 1)
and their temporary files created (:func:`open_outputs`: beside each target,
so :func:`os.replace` is atomic) before any model work. :func:`commit_all`
moves them into place only after every claim succeeded: after any failure no
temporary file remains and existing files are left as they were.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path
from typing import IO, Optional, Sequence

from .errors import Failure, UsageError

__all__ = [
    "AtomicWriter",
    "check_destination",
    "same_file",
    "check_output_paths",
    "open_outputs",
    "commit_all",
]


class AtomicWriter:
    """A text file written beside its target and moved into place by :func:`commit_all`.

    ``option`` (``-o`` or ``--row-map``) names the destination in messages; the
    temporary file's own name never appears in one.

    Raises:
        Failure: the temporary file cannot be created in the target's directory.
    """

    def __init__(self, option: str, target: Path) -> None:
        self.option = option
        self.target = target
        self.committed = False
        try:
            handle = tempfile.NamedTemporaryFile(
                "w", encoding="utf-8", dir=target.parent, prefix=f".{target.name}.", suffix=".tmp", delete=False
            )
        except OSError as exc:
            where = target.parent if str(target.parent) != "." else Path.cwd()
            raise Failure(
                f"error: cannot write {option} {target}: cannot create a file in {where} ({exc.strerror or exc})"
            ) from exc
        self.handle: IO[str] = handle
        self.path = Path(handle.name)

    def finish(self) -> None:
        """Flush, sync and close the temporary file; give it the mode a new file would get."""
        self.handle.flush()
        os.fsync(self.handle.fileno())
        self.handle.close()
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(self.path, 0o666 & ~umask)

    def discard(self) -> None:
        """Remove the temporary file (nothing to do once committed)."""
        if self.committed:
            return
        if not self.handle.closed:
            self.handle.close()
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass


def check_destination(option: str, target: Path) -> None:
    """Refuse a destination that can never be written, before any work (exit 1)."""
    if target.is_dir():
        raise Failure(f"error: {option} {target} is a directory; give a file path")
    parent = target.parent
    if not parent.exists():
        raise Failure(f"error: cannot write {option} {target}: directory {parent} does not exist")
    if not parent.is_dir():
        raise Failure(f"error: cannot write {option} {target}: {parent} is not a directory")


def same_file(first: "str | Path", second: "str | Path") -> bool:
    """Whether two paths name the same file: :func:`os.path.samefile` when both exist, else resolved paths."""
    try:
        return os.path.samefile(first, second)
    except OSError:
        return Path(first).resolve() == Path(second).resolve()


def check_output_paths(source: str, output: Optional[Path], row_map: Optional[Path]) -> None:
    """``-o``, ``--row-map`` and ``INPUT`` (``source``; ``-`` is stdin) must be three different files (exit 2)."""
    named = [("-o", output), ("--row-map", row_map)]
    if source != "-":
        for option, path in named:
            if path is not None and same_file(path, source):
                raise UsageError(
                    f"error: {option} {path} is the INPUT file; it would be replaced, write to another file"
                )
    if output is not None and row_map is not None and same_file(output, row_map):
        raise UsageError(f"error: -o and --row-map name the same file {output}; give two different files")


def open_outputs(output: Optional[Path], row_map: Optional[Path]) -> list[AtomicWriter]:
    """Check both destinations, then create both temporary files (none is left when one fails).

    Returns one :class:`AtomicWriter` per destination given, ``-o`` first.
    """
    named = [(option, path) for option, path in (("-o", output), ("--row-map", row_map)) if path is not None]
    for option, path in named:
        check_destination(option, path)
    writers: list[AtomicWriter] = []
    try:
        for option, path in named:
            writers.append(AtomicWriter(option, path))
    except BaseException:
        for writer in writers:
            writer.discard()
        raise
    return writers


def _backup(target: Path) -> "tuple[bool, Optional[Path]]":
    """Before replacing ``target``: whether it existed, and a hard link keeping its old content (if one could be made)."""
    if not os.path.lexists(target):
        return False, None
    backup = target.with_name(f".{target.name}.{secrets.token_hex(6)}.bak")
    try:
        os.link(target, backup, follow_symlinks=False)
    except OSError:
        return True, None
    return True, backup


def commit_all(writers: Sequence[AtomicWriter]) -> None:
    """Move every temporary file into place, or none.

    Each existing target is kept as a hard link until all moves succeeded; when
    a move fails, targets already replaced get their old content back (or are
    removed again when they did not exist) and the error names the option.
    """
    for writer in writers:
        writer.finish()
    done: list[tuple[AtomicWriter, bool, Optional[Path]]] = []
    try:
        for writer in writers:
            existed, backup = _backup(writer.target)
            try:
                os.replace(writer.path, writer.target)
            except OSError as exc:
                if backup is not None:
                    backup.unlink(missing_ok=True)
                raise Failure(f"error: cannot write {writer.option} {writer.target}: {exc.strerror or exc}") from exc
            writer.committed = True
            done.append((writer, existed, backup))
    except BaseException:
        for writer, existed, backup in reversed(done):
            try:
                if backup is not None:
                    os.replace(backup, writer.target)
                elif not existed:
                    writer.target.unlink(missing_ok=True)
            except OSError:  # pragma: no cover - the original error is the one to report
                pass
        raise
    for _, _, backup in done:
        if backup is not None:
            backup.unlink(missing_ok=True)
