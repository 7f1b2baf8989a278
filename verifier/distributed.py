"""Claim verification on Ray Data: a :class:`ray.data.Dataset` of input rows in, result rows with ids out.

Install the extra (``pip install 'claim-verifier[ray]'``); :mod:`ray` is
imported only inside these functions, so ``import verifier`` never needs it.

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
evidence rows or bundle rows, each needing a string ``id``. Arrow, which
holds the rows between stages, fills a field a row lacks with null, so a
null field is read as an absent one. Output rows have three string columns:

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

import json
import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Union

from .engine.manifest import MANIFEST_NAME
from .options import RuntimeOptions
from .types import ClaimVerificationConfig, ClaimVerificationError

if TYPE_CHECKING:  # pragma: no cover - typing only
    import pyarrow
    import ray.data

__all__ = ["RayVerificationError", "VerifyBatch", "verify_dataset", "DEFAULT_ROWS_PER_BATCH"]

#: Rows per ``map_batches`` call (one ``verify_many_sync`` call each), as the CLI's chunk.
DEFAULT_ROWS_PER_BATCH = 1024


class RayVerificationError(ClaimVerificationError):
    """A worker could not verify its rows: an invalid row, an unreadable model directory, a model failure."""


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

    Raises:
        RayVerificationError: the worker cannot open or verify the model directory.
    """

    def __init__(
        self,
        model_dir: str,
        config: Optional[ClaimVerificationConfig] = None,
        runtime: Optional[RuntimeOptions] = None,
        threads: int = 1,
        skip_invalid: bool = False,
    ) -> None:
        from .claim_verifier import ClaimVerifier

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
        self.config = self.verifier.config
        self.limits = options.limits
        self.skip_invalid = skip_invalid

    def __call__(self, batch: "pyarrow.Table") -> "pyarrow.Table":
        import pyarrow as pa

        from .rows import InputRow, parse_row

        items = [parse_row(0, _without_nulls(row), self.config, "row", self.limits) for row in batch.to_pylist()]
        ids: list[Optional[str]] = []
        errors: list[Optional[str]] = []
        for item in items:
            if isinstance(item, InputRow):
                ids.append(item.request.id)
                errors.append(None)
                continue
            if not self.skip_invalid:
                raise RayVerificationError(f"invalid row (id {item.id!r}): {item.describe('INPUT').split(': ', 1)[1]}")
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
        results = [next(verified).model_dump_json() if isinstance(item, InputRow) else None for item in items]
        return pa.table(
            {
                "id": pa.array(ids, pa.string()),
                "result": pa.array(results, pa.string()),
                "error": pa.array(errors, pa.string()),
            }
        )


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
) -> "ray.data.Dataset":
    """Verify every row of ``dataset`` on ``workers`` Ray actors; a lazy dataset of ``{id, result, error}`` rows.

    Args:
        dataset: rows in the ``verify`` input format, each with a string ``id``.
        model_dir: exported model directory, present at this path on every worker's node.
        config: decision configuration, used as is (``None``: the defaults, with
            ``model`` and ``revision`` from the directory's manifest, as
            :meth:`~verifier.claim_verifier.ClaimVerifier.from_model_dir`).
        runtime: runtime settings for each worker (threads are ``threads_per_worker``).
        workers: actors (a fixed-size actor pool), each loading the model once. Leave the
            cluster at least one CPU beyond ``workers * threads_per_worker`` for Ray's read
            and write tasks, or the pipeline waits for a CPU that never frees.
        threads_per_worker: CPUs reserved per actor (``num_cpus``) and onnxruntime threads.
        rows_per_batch: rows per ``map_batches`` call.
        skip_invalid: an invalid row becomes an ``error`` row instead of failing the job.

    Returns:
        The mapped dataset (nothing runs until it is consumed, e.g. ``write_json``).

    Example:
        >>> import ray  # doctest: +SKIP
        >>> rows = ray.data.read_json("claims.jsonl", lines=True)  # doctest: +SKIP
        >>> verify_dataset(rows, "models/m", workers=4).write_json("out/")  # doctest: +SKIP
    """
    import ray.data

    return dataset.map_batches(
        VerifyBatch,
        fn_constructor_args=(os.fspath(model_dir), config, runtime, threads_per_worker, skip_invalid),
        batch_size=rows_per_batch,
        batch_format="pyarrow",
        compute=ray.data.ActorPoolStrategy(size=workers),
        num_cpus=threads_per_worker,
    )
