"""Persistent score store: a pair the engine has run is never run again (docs/score-store.md).

Opt-in (``RuntimeOptions(score_cache=PATH)``, ``verify``/``serve --score-cache PATH``). It sits
inside :class:`verifier.engine.scorer.OnnxScorer` between tokenization and onnxruntime
(:class:`StoredLogits`): the distinct pairs of a call are looked up, only the misses run, their
logits are inserted, and the call's logits are assembled in caller order before the one softmax,
so a hit goes through exactly the arithmetic of a miss and results are byte-identical.

Stored: the float32 logits (12 raw bytes, model label order) and whether the pair was truncated
(1 byte), authenticated by an HMAC-SHA256 under a secret key (:mod:`verifier.engine.store_key`), under
``sha256(context ‖ len ‖ premise ‖ len ‖ hypothesis)``; ``context`` digests everything else that
can change the bits (:func:`score_context`). Reused only where a pair's bits do not depend on its
batch (:func:`store_bypass_reason`); otherwise bypassed with a warning.

The file (:class:`ScoreStore`): SQLite, WAL, busy timeout, several processes on one machine; a
``store_format`` table with magic and version rows (anything else: :class:`ScoreStoreError`
naming the path); at most ``max_rows`` rows, least recently used evicted first. A row failing its
MAC (written without this key: edited, or by a verifier before the MAC) is a miss plus a warning;
a database error while running is logged and skipped.
"""

from __future__ import annotations

import hmac
import logging
import os
import sqlite3
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, NamedTuple, Optional, Sequence

import numpy as np

from .batching import BatchedLogits
from .store_context import KEY_FORMAT, context_digest, pair_keys, score_context, store_bypass_reason
from .store_key import MAC_BYTES, ScoreStoreError, default_key_path, load_key, row_mac
from ..options import DEFAULT_SCORE_CACHE_MAX_ROWS

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .loaded import LoadedModel, SessionSettings

__all__ = [
    "FORMAT_MAGIC", "FORMAT_VERSION", "DEFAULT_MAX_ROWS", "DEFAULT_BUSY_TIMEOUT_S", "ScoreStoreError",
    "ScoreStore", "Lookup", "default_key_path", "StoreCall", "StoredLogits", "StoreSettings", "attach_store", "score_context", "context_digest", "pair_keys", "store_bypass_reason",
]

_LOG = logging.getLogger("verifier.engine")

#: Value of the ``magic`` row of the ``store_format`` table.
FORMAT_MAGIC = "onnx-claim-verifier score store"
#: Value of its ``version`` row (the schema below and the key format, :data:`~verifier.engine.store_context.KEY_FORMAT`).
FORMAT_VERSION = KEY_FORMAT
#: Default bound of the store in rows.
DEFAULT_MAX_ROWS = DEFAULT_SCORE_CACHE_MAX_ROWS
#: How long a write waits for another process's write before it is skipped.
DEFAULT_BUSY_TIMEOUT_S = 10.0

_SQLITE_HEADER = b"SQLite format 3\x00"
_WIDTH = 3  # logits per row
_ROW_BYTES = 4 * _WIDTH + 1  # the logits, then 1 byte: 1 if the pair was truncated, else 0
_CHUNK = 500  # keys per SELECT (well under SQLite's variable limit)
_SCHEMA = (
    "CREATE TABLE store_format (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    # seq: renewed on use; rows with seq <= max(seq) - max_rows are evicted. key: sha256 of the pair
    # in its context; logits: 3 float32 little-endian then a truncation byte (0/1); checksum:
    # HMAC-SHA256(secret key, key || logits) (store_key.py; rows of the old sha256(key || logits)[:8] are misses).
    "CREATE TABLE scores (seq INTEGER PRIMARY KEY, key BLOB NOT NULL UNIQUE, logits BLOB NOT NULL, "
    "checksum BLOB NOT NULL)",
)
_COLUMNS = ("seq", "key", "logits", "checksum")


# ---------------------------------------------------------------- the file


class Lookup(NamedTuple):
    """What :meth:`ScoreStore.get` found for ``n`` keys."""

    found: np.ndarray  #: bool (n,): the key has a valid row
    logits: np.ndarray  #: float32 (n, 3), model label order (zeros where not found)
    truncated: np.ndarray  #: bool (n,): the pair was cut to the maximum length when it was scored
    stale: list[int]  #: indices of found rows in the older half of the window (to renew)
    rejected: int  #: rows that failed their MAC, size, type or finiteness (misses, logged)


class ScoreStore:
    """One SQLite score store file (opened, checked or created at construction).

    Thread-safe (one connection behind a lock, reopened after a fork); several
    processes may share the file. See the module docstring for the format.

    Args:
        path: the store file (created with its schema if missing or empty; its
            directory must exist).
        max_rows: most rows kept (≥ 1; default :data:`DEFAULT_MAX_ROWS`).
        busy_timeout_s: how long an operation waits for another process's write.
        key_file: the secret key rows are authenticated with (must exist); ``None``:
            ``PATH.key`` beside the store, created (0600) when missing
            (:func:`verifier.engine.store_key.load_key`).

    Raises:
        ValueError: an argument out of range.
        ScoreStoreError: the file is not a score store of this version, or cannot be opened;
            the key file is missing (given), unreadable or too short.
    """

    def __init__(self, path: "str | os.PathLike[str]", *, max_rows: int = DEFAULT_MAX_ROWS,
                 busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
                 key_file: "str | os.PathLike[str] | None" = None) -> None:
        if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
            raise ValueError(f"max_rows must be an integer >= 1, got {max_rows!r}")
        if not busy_timeout_s > 0:
            raise ValueError(f"busy_timeout_s must be > 0, got {busy_timeout_s!r}")
        self.path = Path(path)
        self.max_rows = max_rows
        self.busy_timeout_s = float(busy_timeout_s)
        self._lock = threading.Lock()
        self._pid = os.getpid()
        conn = self._open()
        try:
            self._key, self.key_file = load_key(self.path, Path(key_file) if key_file is not None else None)
        except BaseException:
            conn.close()
            raise
        self._conn: Optional[sqlite3.Connection] = conn

    def __repr__(self) -> str:
        return f"ScoreStore({str(self.path)!r}, max_rows={self.max_rows})"

    def _refuse(self, why: str) -> ScoreStoreError:
        return ScoreStoreError(f"score store {self.path}: {why}")

    def _open(self) -> sqlite3.Connection:
        path = self.path
        if path.is_dir():
            raise self._refuse("is a directory; give the path of a store file")
        if path.exists():
            if not stat.S_ISREG(path.stat().st_mode):  # a FIFO would block the read below; a device is no store
                raise self._refuse("is not a regular file (a device, FIFO or socket); give the path of a store file")
            try:
                with open(path, "rb") as handle:
                    head = handle.read(len(_SQLITE_HEADER))
            except OSError as exc:
                raise self._refuse(f"cannot be read: {exc}") from exc
            if head and head != _SQLITE_HEADER:
                raise self._refuse("is not a score store (not an SQLite database); refusing to touch it")
        elif not path.parent.is_dir():
            raise self._refuse(f"its directory {path.parent} does not exist")
        try:
            conn = sqlite3.connect(str(path), timeout=self.busy_timeout_s, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise self._refuse(f"cannot be opened: {exc}") from exc
        try:
            self._check_or_create(conn)
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise self._refuse(f"cannot use the WAL journal (journal mode {mode})")
            conn.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.Error as exc:
            conn.close()
            raise self._refuse(f"cannot be opened: {exc}") from exc
        except ScoreStoreError:
            conn.close()
            raise
        return conn

    def _tables(self, conn: sqlite3.Connection) -> set[str]:
        return {str(row[0]) for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def _check_or_create(self, conn: sqlite3.Connection) -> None:
        """Refuse a foreign or other-version file; create the schema in an empty one (nothing else is written)."""
        tables = self._tables(conn)
        if not tables:
            conn.execute("BEGIN IMMEDIATE")
            try:
                if not self._tables(conn):  # another process may have created it meanwhile
                    for statement in _SCHEMA:
                        conn.execute(statement)
                    conn.executemany(
                        "INSERT INTO store_format (name, value) VALUES (?, ?)",
                        [("magic", FORMAT_MAGIC), ("version", str(FORMAT_VERSION))],
                    )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            tables = self._tables(conn)
        if "store_format" not in tables:
            names = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
            raise self._refuse(f"is an SQLite database but not a score store (tables: {names}); give another path")
        rows = {str(name): str(value) for name, value in conn.execute("SELECT name, value FROM store_format")}
        if rows.get("magic") != FORMAT_MAGIC:
            raise self._refuse(f"is an SQLite database but not a score store (magic {rows.get('magic')!r}); give another path")
        if rows.get("version") != str(FORMAT_VERSION):
            raise self._refuse(
                f"has format version {rows.get('version')!r}; this verifier reads version {FORMAT_VERSION} "
                "(give another path, or delete the file to start afresh)"
            )
        columns = tuple(str(row[1]) for row in conn.execute("PRAGMA table_info(scores)"))
        if columns != _COLUMNS:
            raise self._refuse(f"has a damaged schema (scores columns {columns}, expected {_COLUMNS})")

    def _connection(self) -> sqlite3.Connection:
        if os.getpid() != self._pid:  # forked: never share the parent's connection
            self._pid, self._conn = os.getpid(), self._open()
        elif self._conn is None:  # closed: a later use reopens (and rechecks) the file
            self._conn = self._open()
        return self._conn

    # ------------------------------------------------------------------ rows

    def get(self, keys: Sequence[bytes]) -> "Lookup":
        """Look ``keys`` up.

        Returns:
            A :class:`Lookup`: a bool mask per key, float32 ``(n, 3)`` logits and
            bool truncation flags (rows where ``found``), the indices of found rows
            in the older half of the window (to renew with :meth:`put`), and how
            many rows failed their MAC, size, type or finiteness (not found, logged).

        Raises:
            sqlite3.Error: the database failed (callers treat it as all misses).
        """
        found = np.zeros(len(keys), dtype=bool)
        logits = np.zeros((len(keys), _WIDTH), dtype=np.float32)
        truncated = np.zeros(len(keys), dtype=bool)
        position = {key: index for index, key in enumerate(keys)}
        stale: list[int] = []
        rejected = unreadable = 0
        with self._lock:
            conn = self._connection()
            newest = int(conn.execute("SELECT coalesce(max(seq), 0) FROM scores").fetchone()[0])
            renew_below = newest - self.max_rows // 2
            for start in range(0, len(keys), _CHUNK):
                chunk = keys[start : start + _CHUNK]
                query = f"SELECT key, seq, logits, checksum FROM scores WHERE key IN ({','.join('?' * len(chunk))})"
                for key, seq, blob, checksum in conn.execute(query, chunk):
                    index = position.get(bytes(key))
                    if index is None:  # pragma: no cover - SQLite returns only what was asked
                        continue
                    # A row written without this key (forged, edited, or by a verifier before the MAC),
                    # of another SQLite type or length, or not finite is a miss.
                    typed = isinstance(blob, bytes) and isinstance(checksum, bytes) and type(seq) is int
                    sized = typed and len(blob) == _ROW_BYTES and len(checksum) == MAC_BYTES
                    if not sized or not hmac.compare_digest(checksum, row_mac(self._key, bytes(key), blob)):
                        rejected += 1
                        continue
                    row = np.frombuffer(blob, dtype="<f4", count=_WIDTH)
                    if not np.isfinite(row).all() or blob[-1] not in (0, 1):
                        rejected += 1
                        unreadable += 1
                        continue
                    found[index] = True
                    logits[index] = row
                    truncated[index] = blob[-1] == 1
                    if int(seq) <= renew_below:
                        stale.append(index)
        if rejected - unreadable:
            _LOG.warning(
                "score store %s: %d rows failed their MAC (written without the key %s: edited, forged or from a "
                "verifier before the MAC) or their size; rescored and rewritten", self.path, rejected - unreadable,
                self.key_file,
            )
        if unreadable:  # a valid MAC over logits no engine writes: written with the key, by something else
            _LOG.warning(
                "score store %s: %d rows carry a valid MAC but non-finite logits or a bad truncation flag "
                "(written with the key %s by something other than this engine); rescored and rewritten",
                self.path, unreadable, self.key_file,
            )
        return Lookup(found, logits, truncated, stale, rejected)

    def put(self, keys: Sequence[bytes], logits: np.ndarray, renew: Sequence[bytes] = (),
            truncated: "Sequence[bool] | np.ndarray | None" = None) -> int:
        """Insert (or overwrite) ``keys`` with float32 ``logits`` (n, 3), renew ``renew``, evict beyond ``max_rows``.

        ``truncated``: per key, whether the pair was cut to the model's maximum length (default
        none), read back by :meth:`get` so a warm run reports truncation as a cold one.
        One write transaction. Returns the number of rows evicted.

        Raises:
            sqlite3.Error: the database failed (callers log it and go on).
        """
        values = np.ascontiguousarray(logits, dtype="<f4").reshape(-1, _WIDTH)
        if len(values) != len(keys):
            raise ValueError(f"{len(keys)} keys but {len(values)} logit rows")
        flags = np.zeros(len(keys), dtype=bool) if truncated is None else np.asarray(truncated, dtype=bool).reshape(-1)
        if len(flags) != len(keys):
            raise ValueError(f"{len(keys)} keys but {len(flags)} truncation flags")
        if not len(keys) and not renew:
            return 0
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                seq = int(conn.execute("SELECT coalesce(max(seq), 0) FROM scores").fetchone()[0])
                rows = []
                for key, row, flag in zip(keys, values, flags):
                    blob = row.tobytes() + (b"\x01" if flag else b"\x00")
                    seq += 1
                    rows.append((seq, key, blob, row_mac(self._key, key, blob)))
                conn.executemany(
                    "INSERT INTO scores (seq, key, logits, checksum) VALUES (?, ?, ?, ?) ON CONFLICT(key) DO UPDATE "
                    "SET seq = excluded.seq, logits = excluded.logits, checksum = excluded.checksum",
                    rows,
                )
                renewed = []
                for key in renew:
                    seq += 1
                    renewed.append((seq, key))
                conn.executemany("UPDATE scores SET seq = ? WHERE key = ?", renewed)
                evicted = conn.execute("DELETE FROM scores WHERE seq <= ?", (seq - self.max_rows,)).rowcount
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return max(0, int(evicted))

    def rows(self) -> int:
        """Rows now in the store."""
        with self._lock:
            return int(self._connection().execute("SELECT count(*) FROM scores").fetchone()[0])

    def close(self) -> None:
        """Close the connection; idempotent. The last connection out checkpoints the WAL into the
        file, so the file's bytes are final when this returns. A later :meth:`get`/:meth:`put` reopens."""
        with self._lock:
            if self._conn is not None and os.getpid() == self._pid:
                self._conn.close()
            self._conn = None


# ---------------------------------------------------------------- the engine's seam


#: What a store operation may raise on a damaged or full file: the run goes on without the store.
#: (OverflowError: a ``seq`` edited to 2**63 - 1 leaves no next number. Rows of the wrong type are
#: misses inside :meth:`ScoreStore.get`; anything else is a bug and is raised.)
_STORE_FAILURES = (sqlite3.Error, OverflowError)


@dataclass(frozen=True)
class StoreCall:
    """What the store did for one scorer call (distinct pairs): served, run, rejected, failed operations,
    and how many of the served pairs had been truncated when they were scored."""

    hits: int = 0
    misses: int = 0
    rejected: int = 0
    errors: int = 0
    truncated_hits: int = 0


class StoredLogits:
    """A :class:`ScoreStore` bound to one loaded engine's key context: look up, run the misses, insert, assemble."""

    def __init__(self, store: ScoreStore, context: bytes) -> None:
        self.store = store
        self.context = context

    def close(self) -> None:
        """Close the store's connection (:meth:`ScoreStore.close`); the next lookup reopens it."""
        self.store.close()

    def logits(
        self, pairs: Sequence[tuple[str, str]], run: Callable[[list[int]], BatchedLogits]
    ) -> tuple[np.ndarray, BatchedLogits, StoreCall]:
        """Logits (n, 3) float32 of distinct ``pairs``, ``run(indices)`` scoring only the misses (in that order).

        Returns the logits in the order of ``pairs``, what the run cost, and the store's part.
        """
        keys = pair_keys(self.context, pairs)
        errors = 0
        try:
            found, logits, flags, stale, rejected = self.store.get(keys)
            truncated_hits = int(flags[found].sum())
        except _STORE_FAILURES as exc:
            _LOG.warning("score store %s: lookup failed (%s); scoring without it", self.store.path, exc)
            found, logits, stale, rejected, errors = np.zeros(len(keys), dtype=bool), None, [], 0, 1
            truncated_hits = 0
        misses = [index for index in range(len(keys)) if not found[index]]
        if misses:
            ran = run(misses)
        else:
            ran = BatchedLogits(np.zeros((0, _WIDTH), dtype=np.float32), 0, 0, 0, 0, np.zeros(0, dtype=bool))
        if logits is None:
            logits = ran.logits
        elif misses:
            logits[misses] = ran.logits
        if errors == 0 and (misses or stale):
            try:
                self.store.put([keys[i] for i in misses], ran.logits, renew=[keys[i] for i in stale],
                               truncated=ran.overflowing)
            except _STORE_FAILURES as exc:
                _LOG.warning("score store %s: insert failed (%s); these scores are not stored", self.store.path, exc)
                errors += 1
        call = StoreCall(hits=len(keys) - len(misses), misses=len(misses), rejected=rejected, errors=errors,
                         truncated_hits=truncated_hits)
        return logits, ran, call


@dataclass(frozen=True)
class StoreSettings:
    """Where the score store lives, how big it may grow and its key file (``RuntimeOptions.score_cache``,
    ``score_cache_max_rows``, ``score_cache_key``; ``key_file=None``: ``PATH.key`` beside it)."""

    path: Path
    max_rows: int = DEFAULT_MAX_ROWS
    key_file: Optional[Path] = None


def attach_store(
    settings: StoreSettings, loaded: "LoadedModel", *, variant: Optional[str], padding: str, session: "SessionSettings"
) -> tuple[Optional[StoredLogits], str]:
    """Open (or create) the store for a freshly loaded engine: the seam to use (``None``: bypassed) and its status line.

    The file is checked even when the engine's scores may not be reused.

    Raises:
        ScoreStoreError: the file is not a score store of this version, or cannot be opened.
    """
    store = ScoreStore(settings.path, max_rows=settings.max_rows, key_file=settings.key_file)
    reason = store_bypass_reason(loaded, variant=variant, padding=padding)
    if reason is not None:
        store.close()
        _LOG.warning("score store %s bypassed: %s", settings.path, reason)
        return None, f"bypassed ({reason})"
    context = context_digest(score_context(loaded, variant=variant, padding=padding, session=session))
    return StoredLogits(store, context), str(settings.path)
