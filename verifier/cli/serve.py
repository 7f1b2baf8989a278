"""``serve``: the HTTP server (docs/serving.md) on uvicorn; needs the ``server`` extra."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Optional

from ..argtypes import int_range, positive_float
from ..engine.coalesce import DEFAULT_MAX_QUEUE_PAIRS, DEFAULT_MAX_WAIT_MS
from ..messages import install_hint
from ..options import InputLimits, RuntimeOptions
from ..types import DEFAULT_MODEL, DEFAULT_REVISION
from .common import SUMMARIES, Context, add_model_dir, add_sign_key, build_config, load_manifest, missing_model_message, runtime_options, threads
from .errors import EXIT_OK, Failure, UsageError
from .output import check_output_paths
from .reads import command_reads

__all__ = ["add_parser", "run"]

#: ``serve``'s default ``--max-batch-tokens`` (a coalescing pass starts at this many queued tokens).
SERVE_MAX_BATCH_TOKENS = 8192
#: Defaults of ``--log-repeat-limit`` / ``--log-repeat-window-s`` (those of ``verifier.serve.logs``,
#: repeated here because the parser is built without the server extra).
DEFAULT_LOG_REPEAT_LIMIT = 10
DEFAULT_LOG_REPEAT_WINDOW_S = 60.0


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> argparse.ArgumentParser:
    """Register ``serve``."""
    parser = subparsers.add_parser(
        "serve",
        help=SUMMARIES["serve"],
        description="Serve claim verification over HTTP, coalescing concurrent callers into shared passes.",
    )
    add_model_dir(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int_range(0, 65535), default=8080, help="port (default 8080)")
    parser.add_argument("--threads", type=threads, default=None, help="onnxruntime intra-op threads")
    parser.add_argument("--variant", default=None, help="variant recorded in the manifest: optimized, int8, or bf16 / ov-int8 on OpenVINO")
    parser.add_argument("--max-batch-tokens", type=int_range(64, 1 << 22), default=None,
                        help="token budget of one pass and of one padded batch (default 8192)")
    parser.add_argument("--max-wait-ms", type=float, default=DEFAULT_MAX_WAIT_MS,
                        help=f"longest wait for more callers before a pass starts (default {DEFAULT_MAX_WAIT_MS:g})")
    parser.add_argument("--max-queue", type=int_range(1, 1 << 24), default=DEFAULT_MAX_QUEUE_PAIRS,
                        help=f"most pairs waiting for a pass; more get 503 (default {DEFAULT_MAX_QUEUE_PAIRS})")
    parser.add_argument("--padding", choices=["auto", "batched", "none"], default="auto",
                        help="batch layout: batched (padded batches), none (each pair alone: load-independent "
                             "bits for dynamic-int8 graphs); auto: none for a dynamic int8 variant, else batched")
    parser.add_argument("--no-coalesce", action="store_true", help="score each request on its own (for comparison)")
    parser.add_argument("--score-cache", type=Path, default=None, metavar="PATH",
                        help="persistent score store (SQLite, created if missing): pairs already scored are not run "
                             "again; results identical (docs/score-store.md)")
    parser.add_argument("--score-cache-max-rows", type=int_range(1, 1 << 40), default=None, metavar="N",
                        help="bound of --score-cache in rows; the least recently used go first (default 1,000,000)")
    parser.add_argument("--score-cache-key", type=Path, default=None, metavar="FILE",
                        help="secret key the store's rows are authenticated with (must exist; default: PATH.key "
                             "beside --score-cache, created 0600 when missing; docs/score-store.md)")
    add_sign_key(parser)
    parser.add_argument("--score-timeout-s", type=positive_float, default=60.0,
                        help="deadline of one scorer call, queue wait included (default 60)")
    parser.add_argument("--max-batch-claims", type=int_range(1, 1 << 16), default=256,
                        help="most claims in one /v1/verify/batch request (default 256)")
    parser.add_argument("--max-passage-chars", type=int_range(1, 1 << 30), default=None,
                        help=f"longest evidence text (default {InputLimits().max_passage_chars:,})")
    parser.add_argument("--max-request-bytes", type=int_range(1024, 1 << 34), default=None,
                        help=f"largest request body (default {InputLimits().max_request_bytes:,})")
    parser.add_argument("--api-key-file", default=None,
                        help="require Authorization: Bearer <the key in this file> (UTF-8, compared as UTF-8 bytes)")
    parser.add_argument("--shutdown-grace-s", type=positive_float, default=30.0,
                        help="after SIGTERM, how long requests in flight may finish before they get 503 and queued "
                             "model work is cancelled (default 30)")
    parser.add_argument("--header-timeout-s", type=positive_float, default=10.0,
                        help="longest wait for a request's headers; then the connection is closed (default 10)")
    parser.add_argument("--keep-alive-s", type=positive_float, default=5.0,
                        help="an idle keep-alive connection is closed after this (default 5)")
    parser.add_argument("--body-timeout-s", type=positive_float, default=60.0,
                        help="the whole request body must arrive within this, else 408 (default 60)")
    parser.add_argument("--max-connections", type=int_range(1, 1 << 20), default=1024,
                        help="most open connections; more get 503 and are closed (default 1024, lowered to what "
                             "the file-descriptor limit allows)")
    parser.add_argument("--max-json-values", type=int_range(65_536, 1 << 31), default=1_000_000,
                        help="most JSON values (containers and members) in one body; more: 413 before parsing "
                             "(default 1,000,000)")
    parser.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    parser.add_argument("--log-repeat-limit", type=int_range(1, 1 << 20), default=DEFAULT_LOG_REPEAT_LIMIT,
                        help="identical log records let through per window; then one summary line "
                             f"(default {DEFAULT_LOG_REPEAT_LIMIT})")
    parser.add_argument("--log-repeat-window-s", type=positive_float, default=DEFAULT_LOG_REPEAT_WINDOW_S,
                        help=f"the window of --log-repeat-limit (default {DEFAULT_LOG_REPEAT_WINDOW_S:g})")
    parser.set_defaults(func=run, model=None, revision=None, **{name: None for name in _DECISION})
    return parser


_DECISION = ("entailment_threshold", "contradiction_threshold", "max_group_size", "group_candidate_limit",
             "max_evidence", "batch_size", "entailment_policy", "refutation_policy")


def _padding(choice: str, variant: object) -> str:
    """``auto``: ``none`` for a dynamic-int8 variant (it quantizes activations per batch) or an OpenVINO
    bf16 one (its kernels are chosen by batch shape), else ``batched``: either way a request's results are
    bit-identical to the library's for that request alone."""
    if choice != "auto":
        return choice
    description = str(getattr(variant, "description", "")).lower()
    openvino = getattr(variant, "runtime", "onnxruntime") == "openvino"
    return "none" if openvino or "int8" in description or "quantiz" in description else "batched"


def run(args: argparse.Namespace, context: Optional[Context] = None) -> int:
    """Run the server until SIGTERM or Ctrl-C (requests in flight get ``--shutdown-grace-s`` to finish)."""
    try:
        from uvicorn.config import STARTUP_FAILURE

        from ..serve import ServerSettings, create_server
        from ..serve.auth import read_api_key
        from ..serve.logs import RepeatFilter, install_repeat_filter
    except ImportError as exc:
        raise Failure(f"error: serve needs the server extra ({install_hint('server')}): {exc}") from exc
    model_dir = RuntimeOptions(model_dir=args.model_dir).resolve_model_dir(DEFAULT_MODEL, DEFAULT_REVISION)
    manifest = load_manifest(model_dir)
    if manifest is None:
        raise Failure(missing_model_message(model_dir, given=args.model_dir is not None))
    # the store and its key are written: never over a key, the API key or a model file
    check_output_paths("-", None, None, args.score_cache, args.score_cache_key, reads=command_reads(args))
    try:
        api_key = read_api_key(args.api_key_file) if args.api_key_file else None
    except ValueError as exc:
        raise UsageError(f"error: {exc}") from exc
    limits = {k: v for k, v in (("max_passage_chars", args.max_passage_chars),
                                ("max_request_bytes", args.max_request_bytes)) if v is not None}
    runtime_values: dict[str, object] = {"model_dir": model_dir, "limits": InputLimits(**limits)}
    # A pass of the coalescing scorer starts at this many queued tokens: the server keeps 8192
    # (docs/serving.md; its load figures were measured so), the engine's batches default smaller.
    max_batch_tokens = args.max_batch_tokens if args.max_batch_tokens is not None else SERVE_MAX_BATCH_TOKENS
    for name, value in (("intra_op_num_threads", args.threads), ("max_batch_tokens", max_batch_tokens),
                        ("variant", args.variant), ("score_cache", args.score_cache),
                        ("score_cache_max_rows", args.score_cache_max_rows), ("score_cache_key", args.score_cache_key),
                        ("sign_key", args.sign_key)):
        if value is not None:
            runtime_values[name] = value
    runtime_values["padding"] = _padding(args.padding, manifest.variants.get(args.variant) if args.variant else None)
    if not 0 <= args.max_wait_ms <= 60_000:
        raise UsageError("error: --max-wait-ms must be between 0 and 60000")
    settings = ServerSettings(
        model_dir=model_dir,
        config=build_config(args, manifest),
        runtime=runtime_options(runtime_values),
        coalesce=not args.no_coalesce,
        max_wait_ms=args.max_wait_ms,
        max_queue_pairs=args.max_queue,
        score_timeout_s=args.score_timeout_s,
        max_batch_claims=args.max_batch_claims,
        api_key=api_key,
        shutdown_grace_s=args.shutdown_grace_s,
        header_timeout_s=args.header_timeout_s,
        keep_alive_s=args.keep_alive_s,
        body_timeout_s=args.body_timeout_s,
        max_connections=args.max_connections,
        max_json_values=args.max_json_values,
    )
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    server = create_server(settings, host=args.host, port=args.port, log_level=args.log_level)
    install_repeat_filter(RepeatFilter(args.log_repeat_limit, args.log_repeat_window_s))  # uvicorn's handlers exist now
    server.run()
    if not server.started:
        raise SystemExit(STARTUP_FAILURE)  # as uvicorn.run: the port is taken, or the lifespan failed
    return EXIT_OK
