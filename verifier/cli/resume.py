"""``verify --resume``: the output file, locked while a run writes it, and what an earlier run left in it, verified.

The output (a regular file) is appended to one chunk at a time: each chunk's
lines are written together, flushed and fsynced (:class:`AppendFile`). While a
run writes it, it holds an exclusive lock on the file (``fcntl.flock``, not
blocking): a second run on the same output stops at once instead of appending
the same rows again.

On a restart :func:`read_done` reads what is there. A last line without its
newline is a torn write and is dropped (the file is truncated to the last
whole line). Every other line must be exactly the line an uninterrupted run
writes for the *current* input row with its id:

* an envelope of verify, parsed strictly (:mod:`verifier.strictjson`), byte for
  byte as verify renders it;
* a result must carry this run's ``configuration_sha256``, check out
  (:func:`verifier.decision.check.check_result`: its claim, evaluation and
  result digests and its configuration, and a replay of the decision procedure
  over its recorded scores and the current row's passages: an edited status
  whose digests were recomputed is refused), and answer the current row: the same
  line, claim and evidence digests, ``as_of`` and ``requires_complete_set``
  (:func:`~verifier.cli.bulk.row_fingerprint`);
* an error row must report the current row, still invalid with the same error;
* no id may repeat.

Anything else stops the run with exit 2, naming the output line and the id,
before any model work: a line is never silently kept, and never silently
replaced (which would need a rewrite of the file, and would lose the
guarantee that a killed run leaves only whole, verified lines).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Any, Callable, Iterator, Optional, Sequence

import numpy as np

from ..decision.audit import claim_sha256, evidence_sha256
from ..decision.check import check_result, parse_result
from ..decision.signing import PublicKey, load_private_key
from ..options import InputLimits, RuntimeOptions
from ..strictjson import DuplicateKeyError
from ..strictjson import loads as strict_loads
from ..engine_identity import RUN_FIELDS, EngineIdentity
from ..types import SCHEMA_VERSION, ClaimVerificationConfig
from .bulk import (
    DigestSet,
    envelope_text,
    error_fingerprint,
    id_digest,
    result_fingerprint,
    row_fingerprint,
    row_id,
)
from .audit_inputs import RowIndex
from .errors import Failure, UsageError
from .inputs import InputRow, InvalidRow

__all__ = ["AppendFile", "LazyVerifier", "Written", "find_row", "kept", "read_done", "signing_key"]

#: Finds the current input row with an id.
RowFinder = Callable[[str], "Optional[InputRow | InvalidRow]"]


class LazyVerifier:
    """The run's verifier, made by ``make`` at most once: by the first kept strict-policy line's
    :meth:`truncated` query (the model's tokenizer decides it), else when the run needs it.

    ``made`` is called with it once it exists (e.g. to close it when the run ends).
    """

    def __init__(self, make: Callable[[], Any], made: Callable[[Any], object]) -> None:
        self._make, self._made, self._verifier = make, made, None

    def get(self) -> Any:
        if self._verifier is None:
            self._verifier = self._make()
            self._made(self._verifier)
        return self._verifier

    def truncated(self, pairs: list[tuple[str, str]]) -> Sequence[bool]:
        """Which pairs the run's scorer cuts; a scorer without ``truncated`` cuts none (as verify decides)."""
        query = getattr(self.get().scorer, "truncated", None)
        return query(pairs) if callable(query) else [False] * len(pairs)  # type: ignore[no-any-return]


def kept(output: Path, rows: int) -> str:
    """What a stopped ``--resume`` run left in ``output`` (``rows`` lines in all), and how to finish."""
    return f"{output} keeps the {rows} row{'s' if rows != 1 else ''} written so far: run the same command again to finish"


class AppendFile:
    """The ``--resume`` output, opened (created if missing) and locked; truncated, then appended in fsynced chunks.

    Raises:
        Failure: the file cannot be opened, or another run holds its lock.
    """

    def __init__(self, path: Path, option: str = "-o") -> None:
        self.path, self.option = path, option
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
        except OSError as exc:
            raise Failure(f"error: cannot write {option} {path}: {exc.strerror or exc}") from exc
        try:
            _lock(fd)
        except BlockingIOError:
            os.close(fd)
            raise Failure(
                f"error: {option} {path} is being written by another verify --resume run (it holds the file's lock); "
                f"wait for that run to finish (then resume), or write to another {option}"
            ) from None
        # unbuffered: a failed write leaves nothing in a buffer that closing would try to write again
        self.handle: IO[bytes] = os.fdopen(fd, "ab", buffering=0)
        #: Byte offset where this run's lines begin (what :meth:`truncate` kept), and where the last whole chunk ends.
        self.start = self.end = 0
        #: Rows the file held before this run (the kept lines: the caller sets it), for the message of a failed write.
        self.rows_before = 0

    def truncate(self, keep: int) -> None:
        """Drop everything after the first ``keep`` bytes (a torn last line)."""
        try:
            self.handle.truncate(keep)
        except OSError as exc:
            raise Failure(f"error: cannot write {self.option} {self.path}: {exc.strerror or exc}") from exc
        self.start = self.end = keep

    def write_chunk(self, text: str) -> None:
        """Append ``text`` (whole lines), then fsync.

        Raises:
            Failure: the write failed (a full disk, say): the file is cut back to its last whole
                chunk, so it never ends in a torn line, and the message says what it keeps.
        """
        if not text:
            return
        encoded = text.encode("utf-8", "surrogatepass")
        data, fd = memoryview(encoded), self.handle.fileno()
        try:
            while data:
                data = data[os.write(fd, data):]
            os.fsync(fd)
        except OSError as exc:
            try:
                os.ftruncate(fd, self.end)  # shrinking needs no space
            except OSError:  # pragma: no cover - the next --resume drops a torn last line anyway
                pass
            raise Failure(
                f"error: cannot write {self.option} {self.path}: {exc.strerror or exc}; "
                f"{kept(self.path, self.rows_before + self.lines())}"
            ) from exc
        self.end += len(encoded)

    def lines(self) -> int:
        """Lines this run appended, counted in the file (exact even when Ctrl-C came mid-chunk: a
        counter updated after each write could miss the chunk the interrupt cut short of it)."""
        count = 0
        with open(self.path, "rb") as handle:
            handle.seek(self.start)
            for block in iter(lambda: handle.read(1 << 20), b""):
                count += block.count(b"\n")
        return count

    def close(self) -> None:
        """Close the file, which releases its lock (what was written stays)."""
        try:
            self.handle.close()
        except OSError:  # pragma: no cover - every chunk was already fsynced
            pass


def _lock(fd: int) -> None:
    """An exclusive, non-blocking ``flock`` on ``fd`` (raises :class:`BlockingIOError` when held elsewhere)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock (docs/bulk.md)
        return
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _lines(path: Path, option: str) -> Iterator[tuple[int, bytes]]:
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        return
    except OSError as exc:
        raise Failure(f"error: cannot read {option} {path}: {exc.strerror or exc}") from exc
    with handle:
        yield from enumerate(handle, start=1)


class _Done:
    """What :func:`read_done` checks one line against; raises :class:`UsageError` for a line it cannot keep."""

    def __init__(
        self, path: Path, config: ClaimVerificationConfig, configuration_sha256: str, find: RowFinder, source: str,
        public_key: Optional[PublicKey] = None,
        truncated: Optional[Callable[[list[tuple[str, str]]], Sequence[bool]]] = None,
        resolved_revision: Optional[str] = None,
        engine: Optional[EngineIdentity] = None,
    ) -> None:
        self.path, self.config, self.digest, self.find, self.source = path, config, configuration_sha256, find, source
        self.public_key, self.truncated, self.resolved_revision = public_key, truncated, resolved_revision
        self.engine = engine
        self.advice = "remove that line (and any other stale one) from the output, or write to a new -o"

    def refuse(self, number: int, what: str, key: Optional[str] = None) -> UsageError:
        named = f" (id {key!r})" if key is not None else ""
        return UsageError(f"error: {self.path} line {number}{named} {what}; {self.advice}")

    def envelope(self, raw: bytes, number: int) -> dict[str, Any]:
        try:
            value = strict_loads(raw)
        except DuplicateKeyError as exc:
            raise self.refuse(number, f"is not an envelope of verify --resume: {exc.msg}") from None
        except (ValueError, RecursionError):
            value = None
        if not isinstance(value, dict) or not isinstance(value.get("id"), str) or not ("result" in value or "error" in value):
            raise UsageError(
                f"error: {self.path} line {number} is not an envelope of verify --resume; "
                "give a new -o or the output of the interrupted run"
            )
        return value

    def fingerprint(self, value: dict[str, Any], raw: bytes, number: int) -> bytes:
        """The :func:`row_fingerprint` of the row this (verified) line answers."""
        key, line = value["id"], value.get("line")
        if set(value) not in ({"id", "line", "result"}, {"id", "line", "error"}) or not isinstance(line, int) or isinstance(line, bool):
            raise self.refuse(number, 'is not an envelope of verify --resume (it needs exactly "id", "line" and "result" or "error")', key)
        if "error" in value:
            error = value["error"]
            if not (isinstance(error, dict) and set(error) == {"field", "message", "unit"}):
                raise self.refuse(number, "has an error that is not one verify writes", key)
            if envelope_text(key, line, error=error).encode("utf-8", "surrogatepass") != raw:
                raise self.refuse(number, "was edited: it is not the line verify writes for that error", key)
            return error_fingerprint(line, error)
        result = value["result"]
        if not isinstance(result, dict):
            raise self.refuse(number, f"has a result that is not a result record (a {type(result).__name__})", key)
        if result.get("configuration_sha256") != self.digest:
            raise UsageError(
                f"error: {self.path} line {number} was verified under another decision configuration "
                f"(configuration_sha256 {str(result.get('configuration_sha256'))[:12]}..., this run "
                f"{self.digest[:12]}...); resume with the same options or write to a new -o"
            )
        try:
            record = parse_result(result)
        except ValueError as exc:
            raise self.refuse(number, f"holds {exc}", key) from None
        if record.schema_version < SCHEMA_VERSION:  # never written by verify; check_result would not replay it
            raise self.refuse(number, f"holds a schema {record.schema_version} result, which verify does not write", key)
        row = self.find(key)
        answers = isinstance(row, InputRow) and row_fingerprint(row) == result_fingerprint(line, record)
        if answers:  # the whole procedure replayed over the record's scores (a stale line is named below)
            assert isinstance(row, InputRow)
            report = check_result(
                record, config=self.config, evidence=row.request.evidence,
                requires_complete_set=row.request.requires_complete_set, truncated=self.truncated,
            )
        else:
            report = check_result(record, config=self.config)
        if not report.ok:
            raise self.refuse(number, f"holds a result that does not check out: {report.problems[0]}", key)
        if record.resolved_revision is not None and record.resolved_revision != self.resolved_revision:
            raise self.refuse(number, f"names resolved_revision {record.resolved_revision!r}, but this run's model is at "
                                      f"{self.resolved_revision!r}", key)
        if self.engine is not None and record.model_called:
            # an output of one engine only (docs/bulk.md): a kept line of another would be silently mixed in
            if record.engine is None:
                raise self.refuse(number, "names no engine, but this run's records name theirs (written before engine "
                                          "identities, or its engine removed)", key)
            differs = record.engine.differences(self.engine, RUN_FIELDS)
            if differs:
                raise self.refuse(number, f"was scored by another engine than this run's ({'; '.join(differs)}; the line's "
                                          "first): resume with the options that made it (model directory, --variant, "
                                          "--padding)", key)
        if self.public_key is not None:  # this run signs: a kept line must be signed by its key, as the run would sign it
            problems = self.public_key.problems(record)
            if problems:
                raise self.refuse(number, f"is not signed as this run signs (--sign-key): {problems[0]}", key)
        elif record.signature is not None:
            raise self.refuse(number, "is signed, but this run does not sign (give the same --sign-key)", key)
        if envelope_text(key, line, result=record.model_dump_json()).encode("utf-8", "surrogatepass") != raw:
            raise self.refuse(number, "was edited: it is not the line verify writes for that result", key)
        return result_fingerprint(line, record)

    def stale(self, value: dict[str, Any], number: int) -> UsageError:
        """Why the line does not answer the current row with its id (a fresh read of the input finds it)."""
        key, line = value["id"], value["line"]
        item = self.find(key)
        where = f"{self.source} line {item.line}" if item is not None else self.source
        if item is None:  # pragma: no cover - the id is in the input, or read_done would not ask
            why = "answers no current input row"
        elif "error" in value and isinstance(item, InputRow):
            why = f"is an error row, but {where} is valid now"
        elif "result" in value and isinstance(item, InvalidRow):
            why = f"is a result, but {where} is invalid now ({item.describe(self.source).split(': ', 1)[1]})"
        elif item.line != line:
            why = f"is for line {line}, but the row with that id is {where} now"
        elif isinstance(item, InvalidRow):
            why = f"reports another error than {where} has now"
        else:
            record = parse_result(value["result"])
            if result_fingerprint(line, record) == row_fingerprint(item):  # pragma: no cover - not stale after all
                why = "answers another row"
            elif record.claim_sha256 != claim_sha256(item.request.claim):
                why = f"is a result for another claim than {where} has now"
            elif record.evidence_sha256 != evidence_sha256(item.request.evidence):
                why = f"is a result for other evidence than {where} has now"
            else:
                why = f"is a result for another as_of or requires_complete_set than {where} has now"
        return self.refuse(number, f"is stale: it {why}", key)


def run_engine(setup: Any) -> Optional[EngineIdentity]:
    """The engine a run of ``setup`` (:class:`verifier.cli.common.Setup`) loads, named without loading it
    (``None`` without a manifest it can open: the run's own load then says why)."""
    from ..engine.engine_identity import identity_for_options
    from ..types import ClaimVerificationError

    if setup.manifest is None or setup.runtime.model_dir is None:
        return None
    try:
        return identity_for_options(setup.runtime.model_dir, setup.runtime)
    except ClaimVerificationError:
        return None


def read_done(
    path: Path,
    ids: DigestSet,
    config: ClaimVerificationConfig,
    configuration_sha256: str,
    find: RowFinder,
    *,
    source: str,
    option: str = "-o",
    public_key: Optional[PublicKey] = None,
    truncated: Optional[Callable[[list[tuple[str, str]]], Sequence[bool]]] = None,
    resolved_revision: Optional[str] = None,
    engine: Optional[EngineIdentity] = None,
) -> "tuple[DigestSet, int]":
    """What an earlier ``--resume`` run wrote to ``path``, verified: the ids done and the byte length to keep.

    ``ids`` are the input's ids with their :func:`~verifier.cli.bulk.row_fingerprint`;
    ``find`` finds the current row with an id (to replay a kept line, or name what changed in a stale one).
    ``public_key``: this run signs (``--sign-key``), so every kept line must be
    signed by that key; ``None``: a signed line is refused (the run would not sign it).
    ``truncated``: for the strict policy, which pairs the model sees cut (the run's
    scorer's ``truncated``), so that a kept line's ``truncated_pair`` rulings are
    decided, not taken from the line (a forged line that dropped one was kept).
    ``resolved_revision``: the run's model's (its manifest's); a kept line that names
    another commit is refused (no digest covers it: an edited one was kept).
    ``engine``: the run's engine identity; a kept line that names another engine is refused.
    A missing or empty file is nothing done; a last line without its newline is
    a torn write and is not counted (the caller truncates the file).

    Raises:
        UsageError: a line that is not an envelope, or not the line an
            uninterrupted run writes for the current row with its id (see the
            module docstring), an id that is not in the input, or an id twice.
        Failure: the file cannot be read.
    """
    checker = _Done(path, config, configuration_sha256, find, source, public_key, truncated, resolved_revision, engine)
    digests = bytearray()
    keep = unknown = 0
    for number, raw in _lines(path, option):
        if not raw.endswith(b"\n"):
            break  # a torn last line: dropped
        keep += len(raw)
        value = checker.envelope(raw, number)
        digest = id_digest(value["id"])
        expected = ids.value(digest)
        if expected is None:
            unknown += 1
            continue
        if checker.fingerprint(value, raw, number) != expected:
            raise checker.stale(value, number)
        digests += digest
    if unknown:
        raise UsageError(
            f"error: {path} holds {unknown} id(s) that are not in {source}; it is not the output of this input"
        )
    done = DigestSet(digests)
    repeated = done.repeated()
    if repeated:
        raise _repeated(path, repeated, option)
    return done, keep


def _repeated(path: Path, repeated: set[bytes], option: str) -> UsageError:
    """Name the first id that an output holds twice, and its lines."""
    lines: dict[bytes, list[int]] = {}
    names: dict[bytes, str] = {}
    for number, raw in _lines(path, option):
        if not raw.endswith(b"\n"):
            break
        key = strict_loads(raw)["id"]
        digest = id_digest(key)
        if digest in repeated:
            lines.setdefault(digest, []).append(number)
            names[digest] = key
    first = min(repeated, key=lambda digest: lines.get(digest, [0]))
    where = " and ".join(str(line) for line in lines.get(first, [])[:2])
    return UsageError(
        f"error: {path} holds id {names.get(first, '?')!r} twice (lines {where}; {len(repeated)} repeated id(s) in all): "
        f"two runs wrote it at once, or it was edited; keep one line per id, or write to a new {option}"
    )


class Written:
    """Which of the input's ids the output holds, for ``--engine ray --resume`` (Ray may hand back a retried
    batch twice): the input's ids, sorted (16 bytes each), and a flag each.

    Args:
        ids: the input's ids (:func:`~verifier.cli.bulk.check_ids`); only their sorted digests are kept.
        done: the ids already in the output.
    """

    def __init__(self, ids: DigestSet, done: DigestSet) -> None:
        self._ids = ids.array
        self._flags = np.zeros(self._ids.size, dtype=bool)
        if len(done):
            self._flags[np.searchsorted(self._ids, done.array)] = True
        #: Ids marked by :meth:`add` (this run's rows).
        self.added = 0

    def add(self, keys: Sequence[str]) -> list[bool]:
        """Mark ``keys`` written; for each, whether it was not written before (nor earlier in ``keys``).
        An id the input does not hold (it changed since it was read) is new each time."""
        digests = np.array([id_digest(key) for key in keys], dtype="S16")
        places = np.searchsorted(self._ids, digests).tolist() if len(keys) else []
        new = []
        for place, digest in zip(places, digests.tolist()):
            known = place < self._ids.size and self._ids[place] == digest
            fresh = not (known and self._flags[place])
            if known:
                self._flags[place] = True
            new.append(fresh)
        self.added += sum(new)
        return new


def signing_key(runtime: RuntimeOptions) -> Optional[PublicKey]:
    """The public key of the run's ``--sign-key`` (``None``: the run does not sign)."""
    return load_private_key(runtime.sign_key).public_key() if runtime.sign_key is not None else None


def find_row(path: str, config: ClaimVerificationConfig, limits: InputLimits, *, source: str, whole_file: bool) -> RowFinder:
    """A :data:`RowFinder` over the input file ``path`` (:class:`~verifier.cli.audit_inputs.RowIndex`, made on
    the first search: an output in any order is matched in two reads of the input)."""
    return RowIndex(path, config, limits, source=source, whole_file=whole_file, key=row_id).find
