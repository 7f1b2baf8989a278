"""Claim verification on Ray Data: a :class:`ray.data.Dataset` of input rows in, result rows with ids out.

Install the extra (``bash scripts/setup.sh export,test,ray`` in a checkout, else
``pip install '/path/to/checkout[ray]'``); :mod:`ray` is imported only inside these
functions, so ``import verifier`` never needs it.

:func:`verify_dataset` maps the rows with :meth:`ray.data.Dataset.map_batches`
over a callable class, :class:`VerifyBatch`: each of ``workers`` actors
(``compute=ActorPoolStrategy(size=workers)``, Ray 2.51+'s spelling of
``concurrency=workers``; ``num_cpus=threads_per_worker``) opens the model
directory once, verifies its manifest (:meth:`ClaimVerifier.from_model_dir
<verifier.claim_verifier.ClaimVerifier.from_model_dir>`, then the engine's own
load, which re-hashes every file), runs onnxruntime with
``threads_per_worker`` intra-op threads and verifies one batch of rows per
call with :meth:`~verifier.claim_verifier.ClaimVerifier.verify_many_sync`.

Rows are the ``verify`` input rows (:mod:`verifier.rows`; format: :mod:`verifier.cli.inputs`):
evidence rows or bundle rows, each needing a string ``id``, in one of two forms:

* **lines** (what ``verify --engine ray`` uses): :func:`read_jsonl` reads JSON
  Lines files as ``{path, line, text}`` rows, one per line, and each worker
  parses ``text`` with the local command's own parser
  (:func:`verifier.rows.parse_line`). Nothing is inferred or converted on the
  way, so results equal the local command's, digests included, for every
  field type (a timestamp keeps its UTC offset, a U+2028 inside a string is
  not a line break). A dataset of ``ray.data.read_text`` rows (one ``text``
  column) is read the same way, but ``read_text`` splits lines at U+2028 and
  other Unicode line breaks: prefer :func:`read_jsonl`.
* **structured rows** (``ray.data.from_items``, or ``ray.data.read_json`` for
  simple inputs): Arrow holds them between stages, fills a field a row lacks
  with null (a null field is read as an absent one), and converts what it
  recognises. ``read_json`` reads ``"2026-05-04T09:30:00+02:00"`` as a
  ``timestamp[s]``, dropping the offset, which changes ``evidence_sha256``;
  so a row holding a value Arrow converted (a datetime, date, time, decimal or
  bytes) fails the job with a :class:`RayVerificationError` that says to read
  the input with :func:`read_jsonl`.

Output rows have three string columns:

* ``id`` -- the input row's id (join on it: Ray keeps no input order);
* ``result`` -- the :class:`~verifier.types.ClaimVerification` as JSON text,
  exactly the local CLI's ``model_dump_json()`` (a string, so that no Arrow or
  pandas conversion can round a float and break a digest), or null;
* ``error`` -- for an invalid row with ``skip_invalid=True``: JSON text
  ``{"field": ..., "message": ..., "unit": "row"}``, else null.

Without ``skip_invalid`` an invalid row, a model directory a worker cannot
open, or a model failure fails the whole job with a :class:`RayVerificationError`
naming the row id or the worker's host (no silent gap).

The model directory must exist at the same path on every node that runs a
worker (copied there, or on a shared filesystem); see docs/bulk.md.
"""

from __future__ import annotations

import codecs
import datetime
import decimal
import json
import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional, Union

from .engine.manifest import MANIFEST_NAME
from .engine_identity import EngineIdentity
from .options import InputLimits, RuntimeOptions
from .types import ClaimVerificationConfig, ClaimVerificationError

if TYPE_CHECKING:  # pragma: no cover - typing only
    import pyarrow
    import ray.data

    from .rows import InputRow, InvalidRow

__all__ = ["RayVerificationError", "VerifyBatch", "verify_dataset", "read_jsonl", "json_lines",
           "DEFAULT_ROWS_PER_BATCH", "DRIVER_BLOCK_BYTES"]

#: Rows per ``map_batches`` call (one ``verify_many_sync`` call each), as the CLI's chunk.
DEFAULT_ROWS_PER_BATCH = 1024

#: Largest block, in bytes, ``verify --engine ray`` asks Ray Data for (its ``DataContext.target_max_block_size``,
#: 128 MiB by default in Ray 2.60; Ray may exceed it by half). The driver holds one block's rows and their JSON
#: at a time, so with this its own memory stays flat as the input grows (docs/bulk.md, "Driver memory").
DRIVER_BLOCK_BYTES = 2 << 20


class RayVerificationError(ClaimVerificationError):
    """A worker could not verify its rows: an invalid row, an unreadable model directory, a model failure."""


#: Lines per block :func:`read_jsonl` yields, and bytes per read from a file.
_LINES_PER_BLOCK = 1024
_READ_BYTES = 1 << 20
#: Python types of values Arrow converted from JSON text (their JSON form, and so a digest, is lost).
_CONVERTED = (datetime.datetime, datetime.date, datetime.time, decimal.Decimal, bytes)


def json_lines(read: Callable[[int], bytes], path: str, limit: int) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of every non-blank line of a JSON Lines stream, as ``verify`` reads a file.

    Lines end at ``\\n`` only (never at U+2028 or another Unicode break), are
    counted from 1 over all lines, are UTF-8 (a byte-order mark on line 1 is
    dropped) and hold at most ``limit`` bytes; ``read(n)`` returns up to ``n``
    bytes, ``b""`` at the end.

    Raises:
        RayVerificationError: a line is longer than ``limit`` bytes, or is not UTF-8.
    """
    buffer = b""
    number = 0

    def decoded(raw: bytes, number: int) -> str:
        if len(raw) - raw.endswith(b"\n") > limit:
            raise RayVerificationError(f"{path} line {number} is longer than max_request_bytes={limit}")
        if number == 1 and raw.startswith(codecs.BOM_UTF8):
            raw = raw[len(codecs.BOM_UTF8):]
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RayVerificationError(f"{path} line {number} is not UTF-8 text: {exc.reason}") from None

    while True:
        chunk = read(_READ_BYTES)
        if not chunk:
            break
        buffer += chunk
        start = 0
        while (end := buffer.find(b"\n", start)) >= 0:
            number += 1
            text = decoded(buffer[start:end + 1], number)
            if text.strip():
                yield number, text
            start = end + 1
        buffer = buffer[start:]
        if len(buffer) > limit:
            raise RayVerificationError(f"{path} line {number + 1} is longer than max_request_bytes={limit}")
    if buffer:
        text = decoded(buffer, number + 1)
        if text.strip():
            yield number + 1, text


def read_jsonl(
    paths: Union[str, "os.PathLike[str]", list[str]], *, limits: InputLimits = InputLimits(), **read_args: Any
) -> "ray.data.Dataset":
    """JSON Lines files (a file, a directory or a list) as a dataset of ``{path, line, text}`` rows, one per line.

    Each file is read as bytes and split by :func:`json_lines` (no JSON parsing,
    no type inference: the workers parse ``text`` as the local command does).
    ``read_args`` go to :func:`ray.data.read_datasource`.

    Example:
        >>> rows = read_jsonl("claims.jsonl")  # doctest: +SKIP
        >>> verify_dataset(rows, "models/m").write_json("out/")  # doctest: +SKIP
    """
    import pyarrow as pa
    import ray.data
    from ray.data.datasource import FileBasedDatasource

    limit = limits.max_request_bytes

    class JsonLinesSource(FileBasedDatasource):  # type: ignore[misc]
        def _read_stream(self, f: "pyarrow.NativeFile", path: str) -> Iterator["pyarrow.Table"]:
            block: list[tuple[int, str]] = []
            for item in json_lines(f.read, path, limit):
                block.append(item)
                if len(block) >= _LINES_PER_BLOCK:
                    yield _block(pa, path, block)
                    block = []
            if block:
                yield _block(pa, path, block)

    source = os.fspath(paths) if not isinstance(paths, list) else paths
    return ray.data.read_datasource(JsonLinesSource(source), **read_args)


def _block(pa: Any, path: str, lines: list[tuple[int, str]]) -> "pyarrow.Table":
    return pa.table(
        {
            "path": pa.array([path] * len(lines), pa.string()),
            "line": pa.array([number for number, _ in lines], pa.int64()),
            "text": pa.array([text for _, text in lines], pa.string()),
        }
    )


def _converted(value: Any, where: str = "") -> Optional[str]:
    """The dotted field of the first value Arrow converted from its JSON text, if any."""
    if isinstance(value, _CONVERTED):
        return where or "(row)"
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = _converted(item, f"{where}.{key}" if where else str(key))
        if found:
            return found
    return None


def _without_nulls(value: Any) -> Any:
    """``value`` with every ``None`` field of every mapping removed (Arrow's null for an absent field)."""
    if isinstance(value, dict):
        return {key: _without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


class VerifyBatch:
    """The ``map_batches`` callable class: one verifier per actor, loaded once in the constructor.

    Args:
        model_dir: the exported model directory, at this path on the worker's node.
        config: decision configuration (``None``: defaults, model and revision from the manifest).
        runtime: runtime settings (``model_dir`` and ``intra_op_num_threads`` are set here).
        threads: onnxruntime intra-op threads (the actor's ``num_cpus``).
        skip_invalid: write an ``error`` row for an invalid row instead of failing the job.
        envelopes: return ``{id, envelope}`` rows, ``envelope`` the line ``verify --output-format
            envelope`` writes for the row (with its newline; ``verify --engine ray --resume``).
        skip_id_digests: rows to leave out (already written): concatenated 16-byte
            :func:`verifier.envelopes.id_digest` values of their ids.
        expected_engine: the driver's engine identity: the loaded engine must be exactly it
            (:mod:`verifier.cluster_identity`), checked here, before any row.

    Raises:
        RayVerificationError: the worker cannot open or verify the model directory, or its
            engine is not ``expected_engine`` (a :class:`~verifier.cluster_identity.ForeignEngineError`).
    """

    def __init__(
        self,
        model_dir: str,
        config: Optional[ClaimVerificationConfig] = None,
        runtime: Optional[RuntimeOptions] = None,
        threads: int = 1,
        skip_invalid: bool = False,
        *,
        envelopes: bool = False,
        skip_id_digests: bytes = b"",
        expected_engine: Optional[EngineIdentity] = None,
    ) -> None:
        from .claim_verifier import ClaimVerifier
        from .envelopes import DigestSet

        host = socket.gethostname()
        path = Path(model_dir)
        if not (path / MANIFEST_NAME).is_file():
            raise RayVerificationError(
                f"worker on {host} cannot open model directory {model_dir}: "
                f"{'no such directory' if not path.is_dir() else f'no {MANIFEST_NAME}'}; "
                "it must exist at this path on every node (copy it there or use a shared filesystem)"
            )
        os.environ.setdefault("OMP_NUM_THREADS", str(threads))
        options = (runtime or RuntimeOptions()).model_copy(
            update={"model_dir": path, "intra_op_num_threads": threads}
        )
        try:
            if config is None:
                self.verifier = ClaimVerifier.from_model_dir(path, runtime=options)
            else:
                self.verifier = ClaimVerifier(config, runtime=options)
            load = getattr(self.verifier.scorer, "load", None)
            if callable(load):
                load()  # the manifest, every file's sha256, the session: now, not on the first batch
        except ClaimVerificationError as exc:
            raise RayVerificationError(f"worker on {host} cannot load model directory {model_dir}: {exc}") from exc
        if expected_engine is not None:
            from .engine_identity import RUN_FIELDS

            found = self.verifier.engine_identity()
            if found is None or found.differences(expected_engine, RUN_FIELDS):
                from .cluster_identity import ForeignEngineError, foreign_engine_message

                where = f"the worker on {host} ({_address()})"
                if found is None:
                    raise ForeignEngineError(f"{where} names no engine identity; nothing was scored")
                raise ForeignEngineError(foreign_engine_message(where, model_dir, expected_engine, found))
        self.config = self.verifier.config
        self.limits = options.limits
        self.skip_invalid = skip_invalid
        self.envelopes = envelopes
        self.skip = DigestSet(skip_id_digests) if skip_id_digests else None

    def _parse(self, row: dict[str, Any]) -> "Optional[InputRow | InvalidRow]":
        """One row: a JSON line parsed as the local command parses it, or a structured row (``None``: a blank line)."""
        from .rows import parse_line, parse_row

        if isinstance(row.get("text"), str) and "claim" not in row and "bundle" not in row:
            line = row.get("line")
            return parse_line(line if isinstance(line, int) else 0, row["text"], self.config, self.limits)
        field = _converted(row)
        if field is not None:
            raise RayVerificationError(
                f"row id {row.get('id')!r}: Arrow converted field {field} to a {type(_value_at(row, field)).__name__}, "
                "which loses its JSON text (a timestamp's UTC offset) and would change the digests; read the input "
                "with verifier.distributed.read_jsonl (as verify --engine ray does), not ray.data.read_json"
            )
        return parse_row(0, _without_nulls(row), self.config, "row", self.limits)

    def _skipped(self, item: "InputRow | InvalidRow") -> bool:
        """Whether the row's id is in ``skip_id_digests`` (already written)."""
        if self.skip is None:
            return False
        from .envelopes import id_digest, row_id

        key = row_id(item)
        return key is not None and id_digest(key) in self.skip

    def __call__(self, batch: "pyarrow.Table") -> "pyarrow.Table":
        import pyarrow as pa

        from .rows import InputRow

        items = [item for item in map(self._parse, batch.to_pylist()) if item is not None and not self._skipped(item)]
        ids: list[Optional[str]] = []
        errors: list[Optional[str]] = []
        for item in items:
            if isinstance(item, InputRow):
                ids.append(item.request.id)
                errors.append(None)
                continue
            if not self.skip_invalid:
                where = f" at line {item.line}" if item.unit == "line" and item.line else ""
                raise RayVerificationError(f"invalid row (id {item.id!r}){where}: {item.describe('INPUT').split(': ', 1)[1]}")
            ids.append(item.id)
            errors.append(json.dumps({"field": item.field, "message": item.message, "unit": "row"}))
        missing = [index for index, row_id in enumerate(ids) if not row_id]
        if missing:
            raise RayVerificationError("every row needs a string id (results are joined by id); a row has none")
        valid = [item.request for item in items if isinstance(item, InputRow)]
        try:
            verified = iter(self.verifier.verify_many_sync(valid))
        except ClaimVerificationError as exc:
            raise RayVerificationError(f"worker on {socket.gethostname()}: model failure: {exc}") from exc
        if self.envelopes:
            from .envelopes import envelope

            lines = [envelope(item, next(verified) if isinstance(item, InputRow) else None) for item in items]
            return pa.table({"id": pa.array(ids, pa.string()), "envelope": pa.array(lines, pa.string())})
        results = [next(verified).model_dump_json() if isinstance(item, InputRow) else None for item in items]
        return pa.table(
            {
                "id": pa.array(ids, pa.string()),
                "result": pa.array(results, pa.string()),
                "error": pa.array(errors, pa.string()),
            }
        )


def _address() -> str:
    """This node's address as Ray knows it (for messages), else ``"address unknown"``."""
    try:
        import ray

        return str(ray.util.get_node_ip_address())
    except Exception:  # outside a Ray worker: the message still names the host
        return "address unknown"


def _value_at(row: Any, field: str) -> Any:
    value = row
    for part in field.split("."):
        value = value[int(part)] if isinstance(value, list) else value.get(part) if isinstance(value, dict) else value
    return value


def verify_dataset(
    dataset: "ray.data.Dataset",
    model_dir: Union[str, "os.PathLike[str]"],
    *,
    config: Optional[ClaimVerificationConfig] = None,
    runtime: Optional[RuntimeOptions] = None,
    workers: int = 1,
    threads_per_worker: int = 1,
    rows_per_batch: int = DEFAULT_ROWS_PER_BATCH,
    skip_invalid: bool = False,
    envelopes: bool = False,
    skip_id_digests: bytes = b"",
    expected_engine: Optional[EngineIdentity] = None,
    check_nodes: bool = True,
) -> "ray.data.Dataset":
    """Verify every row of ``dataset`` on ``workers`` Ray actors; a lazy dataset of ``{id, result, error}`` rows.

    Args:
        dataset: rows in the ``verify`` input format, each with a string ``id``: the
            ``{path, line, text}`` rows of :func:`read_jsonl` (exact), or structured rows
            (see the module docstring for what Arrow may convert).
        model_dir: exported model directory, present at this path on every worker's node.
        config: decision configuration, used as is (``None``: the defaults, with
            ``model`` and ``revision`` from the directory's manifest, as
            :meth:`~verifier.claim_verifier.ClaimVerifier.from_model_dir`).
        runtime: runtime settings for each worker (threads are ``threads_per_worker``).
        workers: actors (a fixed-size actor pool), each loading the model once. The pool
            holds ``workers * threads_per_worker`` CPUs for the whole job: leave the cluster
            what the other stages reserve (a read task 1 CPU by default, a write task 1), or the
            pipeline waits for a CPU that never frees; ``verify --engine ray`` reads with
            ``read_jsonl(..., num_cpus=0)`` and writes on the driver, so its pool may take every CPU.
        threads_per_worker: CPUs reserved per actor (``num_cpus``) and onnxruntime threads.
        rows_per_batch: rows per ``map_batches`` call.
        skip_invalid: an invalid row becomes an ``error`` row instead of failing the job.
        envelopes: ``{id, envelope}`` rows instead: ``envelope`` is the line (with its newline) that
            ``verify --output-format envelope`` writes for the row, byte for byte (for
            ``verify --engine ray --resume``; an invalid row's error keeps its ``unit``).
        skip_id_digests: leave out the rows with these ids (already written): concatenated
            16-byte :func:`verifier.envelopes.id_digest` values, shipped to every actor.
        expected_engine: the engine every node must give (``None``: not checked): the driver's
            :func:`verifier.engine.engine_identity.identity_for_options`. Every alive node with CPUs is
            compared now (:func:`verifier.cluster_identity.check_cluster_engines`), and each actor checks
            its loaded engine before its first row (a failed actor alone leaves its rows to the others).
        check_nodes: compare every node now, its files re-hashed (``False``: the caller already did, as
            ``verify --engine ray``).

    Raises:
        ForeignEngineError: with ``expected_engine``, a node's engine differs or it cannot open the directory.

    Returns:
        The mapped dataset (nothing runs until it is consumed, e.g. ``write_json``).

    Example:
        >>> import ray  # doctest: +SKIP
        >>> rows = read_jsonl("claims.jsonl")  # doctest: +SKIP
        >>> verify_dataset(rows, "models/m", workers=4).write_json("out/")  # doctest: +SKIP
    """
    import ray.data

    if expected_engine is not None and check_nodes:
        from .cluster_identity import check_cluster_engines

        check_cluster_engines(ray, model_dir, runtime if runtime is not None else RuntimeOptions(), expected_engine)
    return dataset.map_batches(
        VerifyBatch,
        fn_constructor_args=(os.fspath(model_dir), config, runtime, threads_per_worker, skip_invalid),
        fn_constructor_kwargs={
            "envelopes": envelopes, "skip_id_digests": bytes(skip_id_digests), "expected_engine": expected_engine,
        },
        batch_size=rows_per_batch,
        batch_format="pyarrow",
        compute=ray.data.ActorPoolStrategy(size=workers),
        num_cpus=threads_per_worker,
    )
