"""Output files of ``verify INPUT``: ``-o`` and ``--row-map`` move into place together or not at all.

A destination is one of three kinds (:class:`Destination`):

* ``-``: standard output, written as the run goes;
* a character device or FIFO (``/dev/null``, ``/dev/stdout``, a named pipe),
  also through symlinks: written directly as the run goes, never replaced;
* a regular file (new or existing, or a symlink to one): written to a
  temporary file beside the *real* file and moved over it with
  :func:`os.replace` only after every claim succeeded, so a symlink stays a
  symlink and still points at the updated file. An existing file keeps its
  mode and, where the process may set it, its owner and group; a new file
  gets ``0o666 & ~umask``.

``-o`` and ``--row-map`` must name two different destinations, neither of
them ``INPUT`` (:func:`check_output_paths`, exit 2). Both are checked (an
existing directory, a missing parent, an unwritable directory: exit 1) and
their temporary files created (:func:`open_outputs`) before any model work.
:func:`commit_all` moves the files into place together: after any failure —
an error, a full disk, Ctrl-C or SIGTERM — no temporary file remains,
existing files are left as they were, and the message names the destination.
"""

from __future__ import annotations

import io
import os
import secrets
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal, Optional, Sequence

from ..engine.store_key import default_key_path
from .errors import Failure, UsageError

__all__ = [
    "STDOUT",
    "Destination",
    "OutputFile",
    "stdout_text",
    "check_destination",
    "same_file",
    "refuse_overlaps",
    "check_output_paths",
    "open_outputs",
    "commit_all",
]

#: The ``-o``/``--row-map`` value meaning standard output.
STDOUT = "-"


def stdout_text() -> IO[str]:
    """Standard output as UTF-8 text whatever the locale (JSON Lines are UTF-8), over its buffer.

    The caller detaches the wrapper when done (:meth:`OutputFile.finish` /
    :meth:`OutputFile.discard`), so standard output itself stays open.
    """
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # replaced by an embedding with a plain text stream: write to it as it is
        return sys.stdout
    return io.TextIOWrapper(buffer, encoding="utf-8", newline="\n", write_through=True)


@dataclass(frozen=True)
class Destination:
    """Where one output goes.

    Attributes:
        option: ``-o`` or ``--row-map`` (for messages).
        given: the path as given (``Path("-")`` for standard output).
        kind: ``stdout``, ``stream`` (character device or FIFO) or ``file``.
        real: for ``file``, the path the temporary file replaces (symlinks followed).
    """

    option: str
    given: Path
    kind: Literal["stdout", "stream", "file"]
    real: Path

    @classmethod
    def of(cls, option: str, path: Path) -> "Destination":
        """Classify ``path`` (``-`` is standard output; symlinks are followed)."""
        if str(path) == STDOUT:
            return cls(option, path, "stdout", path)
        real = Path(os.path.realpath(path))
        try:
            mode = os.stat(real).st_mode
        except OSError:
            return cls(option, path, "file", real)
        if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
            return cls(option, path, "stream", real)
        return cls(option, path, "file", real)


class OutputFile:
    """One destination being written; file destinations go to a temporary file until :func:`commit_all`.

    Raises:
        Failure: the temporary file (or the stream) cannot be opened; the message
            names the option and the destination.
    """

    def __init__(self, destination: Destination) -> None:
        self.destination = destination
        self.option = destination.option
        self.target = destination.given
        self.committed = False
        self.path: Optional[Path] = None
        if destination.kind == "stdout":
            self.handle: IO[str] = stdout_text()
            return
        if destination.kind == "stream":
            try:
                self.handle = open(destination.real, "w", encoding="utf-8", newline="\n")
            except OSError as exc:
                raise Failure(f"error: cannot write {self.option} {self.target}: {exc.strerror or exc}") from exc
            return
        parent = destination.real.parent
        try:
            handle = tempfile.NamedTemporaryFile(
                "w", encoding="utf-8", newline="\n", dir=parent, prefix=f".{destination.real.name}.",
                suffix=".tmp", delete=False,
            )
        except OSError as exc:
            where = parent if str(parent) != "." else Path.cwd()
            raise Failure(
                f"error: cannot write {self.option} {self.target}: cannot create a file in {where} ({exc.strerror or exc})"
            ) from exc
        self.handle = handle
        self.path = Path(handle.name)

    def write(self, text: str) -> None:
        """Write ``text``; a failed write (a full disk, a closed pipe) names the destination."""
        try:
            self.handle.write(text)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise Failure(f"error: cannot write {self.option} {self.target}: {exc.strerror or exc}") from exc

    def _release_stdout(self) -> None:
        if self.destination.kind == "stdout" and isinstance(self.handle, io.TextIOWrapper) and self.handle is not sys.stdout:
            try:
                self.handle.flush()
            finally:
                self.handle.detach()
                self.handle = sys.stdout

    def finish(self) -> None:
        """Flush (and for a file: sync, close and set the mode and owner it will have)."""
        try:
            self.handle.flush()
            self._release_stdout()
            if self.path is None:
                return
            os.fsync(self.handle.fileno())
            self.handle.close()
            _copy_metadata(self.destination.real, self.path)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise Failure(f"error: cannot write {self.option} {self.target}: {exc.strerror or exc}") from exc

    def discard(self) -> None:
        """Remove the temporary file, even when closing it fails (nothing to do once committed)."""
        if self.destination.kind == "stdout":
            try:
                self._release_stdout()
            except (OSError, ValueError):  # a broken pipe while flushing: nothing more to do
                pass
        if self.destination.kind == "stream" and not self.handle.closed:
            try:
                self.handle.close()
            except OSError:
                pass
        if self.committed or self.path is None:
            return
        try:
            if not self.handle.closed:
                self.handle.close()
        except OSError:  # e.g. ENOSPC while flushing the last buffer: the file goes anyway
            pass
        finally:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass


def _copy_metadata(existing: Path, temporary: Path) -> None:
    """Give ``temporary`` the mode (and owner, where allowed) of ``existing``, else a new file's mode."""
    try:
        info = os.stat(existing)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        return
    os.chmod(temporary, stat.S_IMODE(info.st_mode))
    try:
        os.chown(temporary, info.st_uid, info.st_gid)
    except (PermissionError, AttributeError):  # not ours to give away: the process's owner stays
        pass


def check_destination(option: str, target: Path) -> None:
    """Refuse a destination that can never be written, before any work (exit 1)."""
    destination = Destination.of(option, target)
    if destination.kind != "file":
        return
    if destination.real.is_dir():
        raise Failure(f"error: {option} {target} is a directory; give a file path")
    parent = destination.real.parent
    if not parent.exists():
        raise Failure(f"error: cannot write {option} {target}: directory {parent} does not exist")
    if not parent.is_dir():
        raise Failure(f"error: cannot write {option} {target}: {parent} is not a directory")


def same_file(first: "str | Path", second: "str | Path") -> bool:
    """Whether two paths name the same file: :func:`os.path.samefile` when both exist, else resolved paths.

    ``-`` (standard output) is only the same as ``-``.
    """
    if STDOUT in (str(first), str(second)):
        return str(first) == str(second)
    try:
        return os.path.samefile(first, second)
    except OSError:
        pass
    try:
        return Path(first).resolve() == Path(second).resolve()
    except (OSError, RuntimeError):  # a symlink loop (RuntimeError before Python 3.13): compare as written
        return os.path.abspath(first) == os.path.abspath(second)


#: The files SQLite keeps beside a database while it is open (WAL mode; rollback journal).
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def refuse_overlaps(outputs: Sequence[tuple[str, Optional[Path]]], reads: Sequence[tuple[str, Path]]) -> None:
    """No output (``(option, path)``) may be the same file as one the command reads (``(how named, path)``;
    :mod:`verifier.cli.reads`): exit 2 before any work. Standard output, character devices and FIFOs may.
    """
    for option, path in outputs:
        if path is None or Destination.of(option, path).kind != "file":
            continue
        for named, read in reads:
            if same_file(path, read):
                raise UsageError(f"error: {option} {path} is {named}; it would be replaced, write to another file")


def check_output_paths(
    source: str, output: Optional[Path], row_map: Optional[Path], score_cache: Optional[Path] = None,
    score_cache_key: Optional[Path] = None, reads: Sequence[tuple[str, Path]] = (),
) -> None:
    """``-o``, ``--row-map`` and ``INPUT`` (``source``; ``-`` is stdin) must be three different files (exit 2),
    and ``--score-cache`` and its key (``--score-cache-key``, else the default ``STORE.key``) none of them
    (the results would replace the store or its key, or the store the input), nor SQLite's ``STORE-wal``,
    ``STORE-shm`` or ``STORE-journal``, which SQLite deletes when the store closes (docs/score-store.md).
    None of them may be one of ``reads`` either, the other files the command reads (model directory files,
    keys: :mod:`verifier.cli.reads`).

    Character devices and FIFOs may be shared (``-o /dev/null --row-map /dev/null``).
    """
    refuse_overlaps([("-o", output), ("--row-map", row_map)], reads)
    others: list[tuple[str, "Optional[str | Path]"]] = [
        ("INPUT", None if source == "-" else source), ("-o", output), ("--row-map", row_map), *reads,
    ]
    owned: list[tuple[str, Path, str]] = []  # (how to name it, path, what goes wrong)
    if score_cache is not None:
        owned.append((f"--score-cache {score_cache}", score_cache, "the store needs a file of its own"))
        for suffix in SQLITE_SIDE_FILES:
            side = score_cache.with_name(score_cache.name + suffix)
            owned.append((str(side), side, f"it is the store's SQLite {suffix} file, which SQLite deletes when "
                                           "the store closes; name another file"))
        if score_cache_key is None:
            key = default_key_path(score_cache)
            owned.append((str(key), key, "it is the store's key (the default of --score-cache-key), which needs "
                                         "a file of its own; name another file"))
    if score_cache_key is not None:
        owned.append((f"--score-cache-key {score_cache_key}", score_cache_key, "the key needs a file of its own"))
    for named_as, own, why in owned:
        against = others + [("--score-cache", score_cache)] if own is score_cache_key else others
        for option, path in against:
            if path is not None and str(path) != STDOUT and same_file(path, own):
                if named_as.startswith("--"):
                    raise UsageError(f"error: {named_as} is also {option}; {why}")
                raise UsageError(f"error: {option} {path}: {why}")
    named = [("-o", output), ("--row-map", row_map)]
    if source != "-":
        for option, path in named:
            if path is not None and str(path) != STDOUT and same_file(path, source):
                raise UsageError(
                    f"error: {option} {path} is the INPUT file; it would be replaced, write to another file"
                )
    if output is not None and row_map is not None and same_file(output, row_map):
        if Destination.of("-o", output).kind != "stream":
            raise UsageError(f"error: -o and --row-map name the same file {output}; give two different files")


def open_outputs(output: Optional[Path], row_map: Optional[Path]) -> list[OutputFile]:
    """Check both destinations, then open both (none is left when one fails).

    Returns one :class:`OutputFile` per destination given, ``-o`` first.
    """
    named = [(option, path) for option, path in (("-o", output), ("--row-map", row_map)) if path is not None]
    for option, path in named:
        check_destination(option, path)
    writers: list[OutputFile] = []
    try:
        for option, path in named:
            writers.append(OutputFile(Destination.of(option, path)))
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


def commit_all(writers: Sequence[OutputFile]) -> None:
    """Flush every destination and move every temporary file into place, or none.

    Each existing target is kept as a hard link until all moves succeeded; when
    a move fails, targets already replaced get their old content back (or are
    removed again when they did not exist) and the error names the option.
    """
    for writer in writers:
        writer.finish()
    done: list[tuple[OutputFile, bool, Optional[Path]]] = []
    try:
        for writer in writers:
            if writer.path is None:  # stdout or a stream: already written
                writer.committed = True
                continue
            real = writer.destination.real
            existed, backup = _backup(real)
            try:
                os.replace(writer.path, real)
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
                    os.replace(backup, writer.destination.real)
                elif not existed:
                    writer.destination.real.unlink(missing_ok=True)
            except OSError:  # pragma: no cover - the original error is the one to report
                pass
        raise
    for _, _, backup in done:
        if backup is not None:
            backup.unlink(missing_ok=True)
