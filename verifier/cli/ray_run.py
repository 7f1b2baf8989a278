"""``verify INPUT -o OUTDIR --engine ray``: the input read, verified and written by Ray Data (docs/bulk.md).

The driver resolves the model directory, its manifest and the decision
configuration exactly as the local command does, then
:func:`verifier.distributed.verify_dataset` runs ``--workers`` actors of
``--threads-per-worker`` CPUs each over
:func:`verifier.distributed.read_jsonl(INPUT) <verifier.distributed.read_jsonl>`:
the input's lines as text, each parsed in the worker by the local command's
own parser, so results equal the local command's, digests included, whatever
the field types (``ray.data.read_json`` would let Arrow turn timestamps into
``timestamp[s]`` and drop their UTC offsets). :meth:`ray.data.Dataset.write_json`
writes JSON Lines files of ``{"id", "result", "error"}`` rows (``result`` the
result's JSON text), in no particular order; join on ``id``.

``ray.init(address=--address)``: without ``--address`` Ray uses
``$RAY_ADDRESS`` and else starts a local instance. ``OUTDIR`` must not exist
or be empty. The output is atomic, as the local command's: Ray writes into a
temporary directory beside ``OUTDIR`` (``.OUTDIR.<random>.tmp``), which is
moved into place only when the whole job succeeded and removed on any failure,
Ctrl-C or SIGTERM. ``--resume`` does not apply (a job is all or nothing; rerun
it to retry).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shutil
import time
from pathlib import Path
from typing import Any, Optional

from ..options import InputLimits
from ..types import ClaimVerificationConfig, ClaimVerificationError
from ..validation import ValidRequest
from .common import Context, missing_model_message, prepare
from ..messages import install_hint
from .errors import Failure, UsageError, err, first_line

__all__ = ["run_ray", "ray_failure"]

_NOT_WITH_RAY = ("resume", "shard", "row_map", "output_format", "fail_on_skip")


def _check(args: argparse.Namespace) -> Path:
    given = [name for name in _NOT_WITH_RAY if getattr(args, name)]
    if given:
        names = ", ".join("--" + name.replace("_", "-") for name in given)
        verb = "does" if len(given) == 1 else "do"
        why = (
            ": a Ray job writes -o OUTDIR all at once (a failed job leaves nothing there), so rerun it to retry; "
            "for a restartable job on one machine use --resume without --engine ray"
            if "resume" in given else " (it writes id/result/error rows to -o OUTDIR)"
        )
        raise UsageError(f"error: {names} {verb} not apply to --engine ray{why}")
    if args.input == "-":
        raise UsageError("error: --engine ray reads INPUT on the workers; give a file or directory, not -")
    if not os.path.exists(args.input):
        raise UsageError(f"error: input file {args.input} does not exist")
    if args.output is None or str(args.output) == "-":
        raise UsageError("error: --engine ray needs -o OUTDIR (a new or empty directory)")
    outdir = Path(args.output)
    if outdir.exists() and (not outdir.is_dir() or any(outdir.iterdir())):
        raise UsageError(f"error: -o {outdir} must be a new or empty directory with --engine ray")
    return outdir


def _first(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else ""


def ray_failure(exc: BaseException) -> Optional[str]:
    """The message of the verifier error at the root of a Ray failure, if there is one."""
    seen: set[int] = set()
    todo: list[Any] = [exc]
    while todo:
        current = todo.pop(0)
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, ClaimVerificationError):
            text = str(current.args[0]) if current.args else str(current)
            return _first(text) or type(current).__name__
        todo += [getattr(current, "cause", None), current.__cause__, current.__context__]
    # An actor that died in its constructor comes back as text: find the verifier's own error line in it.
    for marker in ("verifier.distributed.RayVerificationError: ", "verifier.types.ClaimVerificationError: "):
        found = [line.split(marker, 1)[1].rstrip(")") for line in str(exc).splitlines() if marker in line]
        if found:
            return found[-1].strip()
    return None


def _init_args(args: argparse.Namespace) -> dict[str, Any]:
    """``ray.init`` arguments: the cluster at ``--address``/``$RAY_ADDRESS``, else a local instance with
    one CPU more than the actors reserve (Ray's read and write tasks need one)."""
    values: dict[str, Any] = {"log_to_driver": not args.quiet, "include_dashboard": False}
    if args.address or os.environ.get("RAY_ADDRESS"):
        values["address"] = args.address or os.environ["RAY_ADDRESS"]
        return values
    reserved = (args.workers or 1) * (args.threads_per_worker or 1)
    values["num_cpus"] = max(os.cpu_count() or 1, reserved + 1)
    return values


def _commit(staging: Path, outdir: Path) -> None:
    """Move the finished ``staging`` directory to ``outdir`` (new, or an empty directory it replaces).

    Raises:
        Failure: ``outdir`` is not empty any more, or cannot be replaced.
    """
    if not staging.is_dir():  # an empty dataset writes nothing: still an (empty) output
        staging.mkdir()
    try:
        os.replace(staging, outdir)
    except OSError as exc:
        raise Failure(f"error: cannot write -o {outdir}: {exc.strerror or exc} (it must be a new or empty directory)") from exc


def run_ray(args: argparse.Namespace, context: Context) -> int:
    """Run ``verify`` on Ray Data; exit 0 when every row was written to ``OUTDIR``."""
    outdir = _check(args)

    def no_rows(config: ClaimVerificationConfig, limits: InputLimits) -> list[ValidRequest]:
        return []  # the workers read and validate the rows

    setup = prepare(args, no_rows)
    model_dir = setup.runtime.model_dir
    if setup.manifest is None or model_dir is None:
        raise Failure(missing_model_message(Path(model_dir or ".")))
    try:
        import ray
        import ray.data
    except ImportError:
        raise Failure(f"error: --engine ray needs Ray Data: {install_hint('ray')}") from None
    from ..distributed import DEFAULT_ROWS_PER_BATCH, read_jsonl, verify_dataset

    started = not ray.is_initialized()
    start = time.perf_counter()
    staging = outdir.resolve().parent / f".{outdir.name}.{secrets.token_hex(6)}.tmp"
    try:
        if started:
            ray.init(**_init_args(args))
        ray.data.DataContext.get_current().enable_progress_bars = not args.quiet
        rows = read_jsonl(args.input, limits=setup.runtime.limits)  # lines as text: no type inference
        results = verify_dataset(
            rows,
            model_dir.resolve(),
            config=setup.config,
            runtime=setup.runtime,
            workers=args.workers or 1,
            threads_per_worker=args.threads_per_worker or 1,
            rows_per_batch=args.rows_per_batch or DEFAULT_ROWS_PER_BATCH,
            skip_invalid=args.skip_invalid,
        )
        results.write_json(str(staging))
        _commit(staging, outdir)
    except (KeyboardInterrupt, UsageError, Failure):
        raise
    except Exception as exc:
        message = ray_failure(exc) or first_line(exc)
        raise Failure(f"error: the Ray job failed: {message}; nothing was written to {outdir}") from exc
    finally:
        with contextlib.suppress(OSError):
            shutil.rmtree(staging)  # gone already after a commit
        if started and ray.is_initialized():
            ray.shutdown()
    if not args.quiet:
        err(f"ray: wrote {outdir} in {time.perf_counter() - start:.2f} s "
            f"({args.workers or 1} worker(s) x {args.threads_per_worker or 1} thread(s))")
    return 0
