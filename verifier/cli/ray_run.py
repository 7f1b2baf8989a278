"""``verify INPUT -o OUTDIR --engine ray``: the input read and verified by Ray Data, written by the driver (docs/bulk.md).

The driver resolves the model directory, its manifest and the decision
configuration exactly as the local command does, then
:func:`verifier.distributed.verify_dataset` runs ``--workers`` actors of
``--threads-per-worker`` CPUs each over
:func:`verifier.distributed.read_jsonl(INPUT) <verifier.distributed.read_jsonl>`:
the input's lines as text, each parsed in the worker by the local command's
own parser, so results equal the local command's, digests included, whatever
the field types (``ray.data.read_json`` would let Arrow turn timestamps into
``timestamp[s]`` and drop their UTC offsets).

``ray.init(address=--address)``: without ``--address`` Ray uses
``$RAY_ADDRESS`` and else starts a private local instance (never a ``ray start``
cluster found on the machine: ``--address auto`` joins that). Before the job the pool is
checked against the cluster's CPUs (:mod:`verifier.cli.ray_cluster`; the read
tasks reserve no CPU), and the driver takes the results batch by batch,
failing after ``--stall-timeout`` seconds without one. Two outputs:

* ``-o OUTDIR`` (new or empty): one JSON Lines file of ``{"id", "result",
  "error"}`` rows per batch (``result`` the result's JSON text), in no
  particular order; join on ``id``. Atomic, as the local command's output: the
  files go to a temporary directory beside ``OUTDIR`` (``.OUTDIR.<random>.tmp``),
  moved into place only when the whole job succeeded and removed on any
  failure, Ctrl-C or SIGTERM.
* ``--resume -o FILE``: the local ``--resume`` output (:mod:`verifier.cli.resume`),
  the same checks before any model work, the same envelopes, appended one batch
  at a time and fsynced, in the order the batches finish. The driver keeps the
  ids of this run's rows and writes each once; a job that fails or stalls
  leaves what was written, and the same command finishes it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import secrets
import signal
import threading
import shutil
import warnings
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Optional

from ..options import InputLimits
from ..types import ClaimVerificationConfig, ClaimVerificationError
from ..validation import ValidRequest
from .bulk import DigestSet, Scan, Shard, check_ids, configuration_digest, id_digest, scan
from .common import Context, missing_model_message, prepare
from ..messages import install_hint
from .errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, Failure, UsageError, err, first_line, say_on_interrupt
from .inputs import is_whole_file, iter_input, refuse_invalid, report_invalid
from .output import Destination, check_destination, check_output_paths
from .reads import command_reads
from .ray_cluster import DEFAULT_STALL_TIMEOUT, HeadWatch, Stalled, await_capacity, capacity, drain, head_lost_after
from .resume import AppendFile, LazyVerifier, Written, find_row, kept, read_done, run_engine
from .check_records import count_records
from .progress import Progress, counted, use_bar

__all__ = ["run_ray", "ray_failure", "ray_cause"]

_NOT_WITH_RAY = ("shard", "row_map", "output_format", "fail_on_skip")


def _check(args: argparse.Namespace) -> Path:
    given = [name for name in _NOT_WITH_RAY if getattr(args, name)]
    if given:
        names = ", ".join("--" + name.replace("_", "-") for name in given)
        verb = "does" if len(given) == 1 else "do"
        raise UsageError(
            f"error: {names} {verb} not apply to --engine ray (it writes id/result/error rows to -o OUTDIR, "
            "or with --resume the envelopes of verify --resume to -o FILE)"
        )
    if args.input == "-":
        raise UsageError("error: --engine ray reads INPUT on the workers; give a file or directory, not -")
    if not os.path.exists(args.input):
        raise UsageError(f"error: input file {args.input} does not exist")
    if is_whole_file(args.input):
        raise UsageError(f"error: --engine ray reads JSON Lines; {args.input} is read as one JSON document (.json)")
    if args.resume:
        if args.output is None or Destination.of("-o", Path(args.output)).kind != "file" or not os.path.isfile(args.input):
            raise UsageError("error: --engine ray --resume needs INPUT a file and -o FILE (a regular file it appends to)")
        check_output_paths(args.input, Path(args.output), None, args.score_cache, args.score_cache_key,
                           reads=command_reads(args))
        check_destination("-o", Path(args.output))
        return Path(args.output)
    if args.output is None or str(args.output) == "-":
        raise UsageError("error: --engine ray needs -o OUTDIR (a new or empty directory), or --resume -o FILE")
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
        found = [_balanced(line.split(marker, 1)[1]) for line in str(exc).splitlines() if marker in line]
        if found:
            return found[-1]
    return None


def _balanced(text: str) -> str:
    """``text`` without the closing parentheses Ray's wrapping added after it (its own are kept)."""
    text = text.strip()
    while text.endswith(")") and text.count(")") > text.count("("):
        text = text[:-1].rstrip()
    return text


#: A terminal's colour and cursor sequences, which Ray puts in a task's name.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


def ray_cause(exc: BaseException) -> str:
    """What made a Ray job fail, for one line: the first exception under Ray's wrappers (a failed task's
    own error, as ``Type: text``), else the first line of ``exc``; without terminal escape sequences."""
    seen: set[int] = set()
    todo: list[Any] = [exc] if type(exc).__module__.startswith("ray") else []
    while todo:
        current = todo.pop(0)
        if not isinstance(current, BaseException) or id(current) in seen:
            continue
        seen.add(id(current))
        if not type(current).__module__.startswith("ray") and not isinstance(current, StopIteration):
            return _ESCAPES.sub("", f"{type(current).__name__}: {first_line(current)}")
        todo += [getattr(current, "cause", None), current.__cause__, current.__context__]
    return _ESCAPES.sub("", first_line(exc))


def _absolute(runtime: Any) -> Any:
    """``runtime`` with each of its paths absolute (the workers get them, in other working directories)."""
    paths = {name: Path(os.path.abspath(value)) for name in ("model_dir", "score_cache", "score_cache_key", "sign_key")
             if (value := getattr(runtime, name, None)) is not None}
    return runtime.model_copy(update=paths)


def _keep_sigterm(handler: Any) -> None:
    """Put back the SIGTERM handler ``ray.init`` replaced with its own (which ends the process without a word
    on what the output keeps, nor exit 143): the command's unwinds, removes the staging directory and says it."""
    if callable(handler) and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)


def _watch_head(ray: Any, stack: contextlib.ExitStack, staging: Path, left: Callable[[], str],
                write: Callable[[Any], None]) -> Callable[[Any], None]:
    """``write``, each batch under a lock, while a :class:`~verifier.cli.ray_cluster.HeadWatch` watches the
    cluster's head (until ``stack`` closes). A head lost for :func:`~verifier.cli.ray_cluster.head_lost_after`
    seconds ends the process at once with the command's own words: the staging directory removed, what -o
    keeps, exit 1 (Ray's core would end it within a minute, saying neither)."""
    address = str(ray.get_runtime_context().gcs_address)
    lock = threading.Lock()

    def give_up(seconds: float) -> None:
        lock.acquire()  # never released: no batch is written after this
        with contextlib.suppress(OSError):
            shutil.rmtree(staging)
        err(f"error: lost the Ray cluster's head at {address}: no answer for {seconds:.0f} s; {_once_fixed(left())}")
        os._exit(EXIT_FAILURE)

    def locked(batch: Any) -> None:
        with lock:
            write(batch)

    stack.enter_context(HeadWatch(address, give_up, head_lost_after()))
    return locked


def _once_fixed(left: str) -> str:
    """What the output keeps after a failure the same command alone cannot get past."""
    return left.replace("run the same command again to finish", "run the same command again once that is fixed")


def _init_args(args: argparse.Namespace) -> dict[str, Any]:
    """``ray.init`` arguments: the cluster at ``--address``/``$RAY_ADDRESS``, else a private local instance
    (``address="local"``: not a ``ray start`` cluster running on the machine, which Ray would join) with
    at least the CPUs the actors reserve, and one more for the driver's own work."""
    values: dict[str, Any] = {"log_to_driver": not args.quiet, "include_dashboard": False}
    if args.quiet:
        values["logging_level"] = logging.ERROR  # Ray's own INFO and WARNING lines (the "ray" logger)
    if args.address or os.environ.get("RAY_ADDRESS"):
        values["address"] = args.address or os.environ["RAY_ADDRESS"]
        return values
    reserved = (args.workers or 1) * (args.threads_per_worker or 1)
    values["address"] = "local"
    values["num_cpus"] = max(os.cpu_count() or 1, reserved + 1)
    return values


@contextlib.contextmanager
def _job_settings(ray: Any, quiet: bool) -> Any:
    """Ray settings for one job, restored after (the caller's process may go on).

    * ``-q``: Ray's and Ray Data's Python loggers at ERROR, their Python warnings (``warnings``) off, and
      no progress bars. Ray's C++ core still prints its own lines (docs/bulk.md).
    * Blocks of at most :data:`~verifier.distributed.DRIVER_BLOCK_BYTES` (``target_max_block_size``):
      Ray Data's default (128 MiB) let a block grow with the input, and the driver holds
      a whole block's rows and JSON at once.
    * Ray Data's own no-progress timeout off (``DataContext.execution_no_progress_timeout_s``,
      1,800 s by default in Ray 2.60, absent before): ``--stall-timeout`` is this job's, and
      Ray's would fail a job ``--stall-timeout 0`` (or above 1,800) tells to wait.
    """
    loggers = [logging.getLogger(name) for name in ("ray", "ray.data")] if quiet else []
    levels = [logger.level for logger in loggers]
    context = ray.data.DataContext.get_current()
    from ..distributed import DRIVER_BLOCK_BYTES

    settings: dict[str, Any] = {"enable_progress_bars": not quiet, "target_max_block_size": DRIVER_BLOCK_BYTES}
    if hasattr(context, "execution_no_progress_timeout_s"):
        settings["execution_no_progress_timeout_s"] = -1
    before = {name: getattr(context, name) for name in settings}
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    for name, value in settings.items():
        setattr(context, name, value)
    try:
        with warnings.catch_warnings():
            if quiet:  # e.g. Ray Data's UserWarning that an empty input gave its actors nothing to do
                warnings.filterwarnings("ignore", module=r"ray(\.|$)")
            yield
    finally:
        for name, value in before.items():
            setattr(context, name, value)
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


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


class _Directory:
    """``-o OUTDIR``: each batch one JSON Lines file of ``{id, result, error}`` rows in the staging directory."""

    def __init__(self, staging: Path) -> None:
        self.staging, self.files, self.rows = staging, 0, 0

    def write(self, table: Any) -> None:
        rows = table.to_pylist()
        if not rows:
            return
        self.staging.mkdir(exist_ok=True)
        text = "".join(json.dumps({"id": r["id"], "result": r["result"], "error": r["error"]}) + "\n" for r in rows)
        (self.staging / f"part-{self.files:06d}.jsonl").write_text(text, encoding="utf-8")
        self.files += 1
        self.rows += len(rows)

    def left(self, outdir: Path) -> str:
        return f"nothing was written to {outdir} (with --resume -o FILE a failed job keeps its finished rows)"


class _Resume:
    """``--resume -o FILE``: the local resume checks, then envelopes appended one batch at a time, each id once."""

    def __init__(self, args: argparse.Namespace, output: Path, stack: contextlib.ExitStack) -> None:
        source = args.input
        found = Scan()

        def rows(config: ClaimVerificationConfig, limits: InputLimits) -> Any:
            return iter_input(source, config, limits, source=source, whole_file=False)

        def load(config: ClaimVerificationConfig, limits: InputLimits) -> list[ValidRequest]:
            nonlocal found
            found = scan(rows(config, limits), Shard(), need_ids=True, source=source)
            return found.sample

        self.setup = prepare(args, load)
        self.output, self.exit, self.found = output, None, found
        config, limits = self.setup.config, self.setup.runtime.limits
        if found.invalid and not args.skip_invalid:
            refuse_invalid(source, found.reported, found.invalid)
            self.exit = EXIT_USAGE
            return
        ids = check_ids(found, rows(config, limits), Shard(), source)
        self.appender = AppendFile(output)  # locked until the run ends: a second run on this output stops at once
        stack.callback(self.appender.close)
        from ..claim_verifier import ClaimVerifier

        # the strict policy's truncation of kept lines is the model's to decide: the driver loads it only then
        lazy = LazyVerifier(lambda: ClaimVerifier(config, runtime=self.setup.runtime), lambda made: stack.callback(made.close))
        self.done, keep = read_done(
            output, ids, config, configuration_digest(config), find_row(source, config, limits, source=source, whole_file=False), source=source,
            truncated=lazy.truncated,
            resolved_revision=self.setup.manifest.resolved_revision if self.setup.manifest is not None else None,
            engine=run_engine(self.setup),
        )
        self.appender.truncate(keep)
        self.appender.rows_before = len(self.done)
        self.todo = len(ids) - len(self.done)
        self.written = Written(ids, self.done)  # each id written once (Ray may hand back a retried batch twice)
        if not args.quiet:
            kept = len(self.done)
            err(f"resume: {kept} row{'s' if kept != 1 else ''} already in {output}, kept; {self.todo} to verify")
        if found.invalid:
            report_invalid(source, found.reported, "skipped", total=found.invalid)
            err(f"skipped: {found.invalid} invalid row{'s' if found.invalid != 1 else ''} of {source}")

    def write(self, table: Any) -> None:
        keys, lines = table.column("id").to_pylist(), table.column("envelope").to_pylist()
        self.appender.write_chunk("".join(line for line, new in zip(lines, self.written.add(keys)) if new))

    def finish(self) -> None:
        if self.written.added != self.todo:  # Ray lost rows without an error: never a silent gap
            raise Failure(f"error: the Ray job returned {self.written.added} of the {self.todo} rows left; {self.left()}")

    def left(self) -> str:
        return kept(self.output, len(self.done) + self.appender.lines())


def _connect(ray: Any, args: argparse.Namespace) -> None:
    """``ray.init``; a cluster that refuses the driver is named, with what token authentication needs.

    Raises:
        Failure: the cluster at ``--address``/``$RAY_ADDRESS`` cannot be joined.
    """
    values = _init_args(args)
    if values["address"] == "local":
        ray.init(**values)
        return
    try:
        ray.init(**values)
    except Exception as exc:  # ConnectionError, AuthenticationError, TimeoutError: Ray's word for it
        token = os.environ.get("RAY_AUTH_MODE", "").lower() == "token"
        hint = (
            "check that the token here is the head's (RAY_AUTH_TOKEN_PATH, RAY_AUTH_TOKEN or ~/.ray/auth_token)"
            if token else
            "if the head uses token authentication (Ray 2.60 turns it on for a new head), set RAY_AUTH_MODE=token "
            "here and give its token (~/.ray/auth_token, RAY_AUTH_TOKEN_PATH or RAY_AUTH_TOKEN)"
        )
        raise Failure(
            f"error: cannot connect to the Ray cluster at {values['address']}: {first_line(exc)}; {hint} "
            "(docs/bulk.md); nothing was written"
        ) from exc


def _progress(args: argparse.Namespace, resume: Optional[_Resume]) -> Any:
    """Plain progress lines in a log (a terminal has Ray Data's own bars): rows written, of the rows to verify."""
    if args.quiet or use_bar():
        return None
    total = resume.todo if resume is not None else (count_records(args.input) if os.path.isfile(args.input) else None)
    return Progress("verify", "rows", total)


def _where(args: argparse.Namespace) -> str:
    address = args.address or os.environ.get("RAY_ADDRESS")
    return f"at {address}" if address else "started here"


def _one_engine(ray: Any, model_dir: Path, runtime: Any, left: Callable[[], str]) -> Any:
    """The driver's engine identity, once every node's copy of ``model_dir`` was found to give the same
    (docs/bulk.md, "One engine per job"); a node that does not stops the job before any row is scored.

    Raises:
        Failure: the driver's own directory cannot be opened, or a node's engine differs (named).
    """
    from ..cluster_identity import ForeignEngineError, check_cluster_engines
    from ..engine.engine_identity import identity_for_options

    try:
        engine = identity_for_options(model_dir, runtime)
        check_cluster_engines(ray, model_dir, runtime, engine)
    except ForeignEngineError as exc:
        raise Failure(f"error: {exc}") from None
    except ClaimVerificationError as exc:
        raise Failure(f"error: the driver's model directory {model_dir}: {exc}; {left()}") from None
    return engine


def run_ray(args: argparse.Namespace, context: Context) -> int:
    """Run ``verify`` on Ray Data; exit 0 when every row was written to ``OUTDIR`` (or ``--resume``'s FILE)."""
    target = _check(args)
    workers, threads = args.workers or 1, args.threads_per_worker or 1
    with contextlib.ExitStack() as stack:
        resume = _Resume(args, target, stack) if args.resume else None
        if resume is not None and resume.exit is not None:
            return resume.exit

        def no_rows(config: ClaimVerificationConfig, limits: InputLimits) -> list[ValidRequest]:
            return []  # the workers read and validate the rows

        setup = resume.setup if resume is not None else prepare(args, no_rows)
        setup = replace(setup, runtime=_absolute(setup.runtime))
        model_dir = setup.runtime.model_dir
        if setup.manifest is None or model_dir is None:
            raise Failure(missing_model_message(Path(model_dir or "."), given=args.model_dir is not None))
        try:
            import ray
            import ray.data
        except ImportError:
            raise Failure(f"error: --engine ray needs Ray Data: {install_hint('ray')}") from None
        from ..distributed import DEFAULT_ROWS_PER_BATCH, read_jsonl, verify_dataset

        stack.enter_context(_job_settings(ray, args.quiet))  # after importing ray.data, which sets its logger up

        started = not ray.is_initialized()
        start = time.perf_counter()
        staging = target.resolve().parent / f".{target.name}.{secrets.token_hex(6)}.tmp"
        directory = _Directory(staging) if resume is None else None
        left: Callable[[], str] = resume.left if resume is not None else (lambda: directory.left(target))  # type: ignore[union-attr]
        say_on_interrupt(stack, left)
        try:
            if started:
                handler = signal.getsignal(signal.SIGTERM)
                _connect(ray, args)
                _keep_sigterm(handler)
            await_capacity(lambda: capacity(ray), workers, threads, _where(args))
            engine = _one_engine(ray, model_dir.resolve(), setup.runtime, left)
            # Reading reserves no CPU: a read task only splits lines, and a reserved CPU is one the
            # actors cannot have (issue 36: the pool took every CPU and the read task waited forever).
            # absolute, as every path a task sees: a worker on another node does not run in this directory
            rows = read_jsonl(os.path.abspath(args.input), limits=setup.runtime.limits, num_cpus=0)
            results = verify_dataset(
                rows,
                model_dir.resolve(),
                config=setup.config,
                runtime=setup.runtime,
                workers=workers,
                threads_per_worker=threads,
                rows_per_batch=args.rows_per_batch or DEFAULT_ROWS_PER_BATCH,
                skip_invalid=args.skip_invalid,
                envelopes=resume is not None,
                skip_id_digests=bytes(resume.done.array.tobytes()) if resume is not None else b"",
                expected_engine=engine, check_nodes=False,  # _one_engine compared every node, naming a foreign one
            )
            if resume is None or resume.todo:
                # prefetch_batches=0: with 1, a finished block reached the driver only once the next one was
                # done, so with few blocks (a 1-CPU cluster reads 2) nothing was written until the end (docs/bulk.md)
                batches = results.iter_batches(batch_size=None, batch_format="pyarrow", prefetch_batches=0)
                write = resume.write if resume is not None else directory.write  # type: ignore[union-attr]
                if started and (args.address or os.environ.get("RAY_ADDRESS")):
                    write = _watch_head(ray, stack, staging, left, write)
                drain(counted(batches, _progress(args, resume), lambda table: int(table.num_rows)), DEFAULT_STALL_TIMEOUT if args.stall_timeout is None else args.stall_timeout, write)
            if resume is not None:
                resume.finish()
            else:
                _commit(staging, target)
        except (KeyboardInterrupt, UsageError, Failure):
            raise
        except Stalled as exc:
            free = ""
            with contextlib.suppress(Exception):
                free = f"; the cluster has {capacity(ray).describe()} now"
            raise Failure(
                f"error: the Ray job made no progress for {exc.seconds:g} s (--stall-timeout): no batch of results "
                f"came back from {workers} worker(s) of {threads} CPU(s) (a worker may wait for a CPU, e.g. after "
                f"a node was lost){free}; {left()}"
            ) from None
        except Exception as exc:
            message = ray_failure(exc)
            after = left() if message is None else _once_fixed(left())  # a worker's own error: rerunning alone cannot help
            raise Failure(f"error: the Ray job failed: {message or ray_cause(exc)}; {after}") from exc
        finally:
            with contextlib.suppress(OSError):
                shutil.rmtree(staging)  # gone already after a commit
            if started and ray.is_initialized():
                ray.shutdown()
    if not args.quiet:
        wrote = f"{resume.written.added} row(s) to {target}" if resume is not None else f"{directory.rows} row(s) to {target}"  # type: ignore[union-attr]
        err(f"ray: wrote {wrote} in {time.perf_counter() - start:.2f} s ({workers} worker(s) x {threads} thread(s)); "
            f"every node's engine: {engine.describe()}")
    return EXIT_OK
