"""The HTTP routes (docs/serving.md).

Every request body is read with a size cap (``InputLimits.max_request_bytes``)
and a deadline, parsed as JSON once with bounded memory
(:class:`verifier.serve.body.BodyReader`) and validated once with the library's own models and
:func:`verifier.validation.validate_request`; a refusal is a 4xx JSON error
naming the field and the limit, a model failure a 500 or 503 with a message,
never a traceback and never a verification status.
"""

from __future__ import annotations

import json
import logging
from typing import Annotated, Any, Optional

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .. import __version__
from ..decision.bundle import BundleClaimRequest, bundle_evidence, check_candidate_count
from ..engine.coalesce import ScorerBusy, ScorerClosed, ScorerTimeout
from ..engine.model_directory import OUTPUT_LABELS
from ..engine_identity import EngineIdentity
from ..strictjson import json_type
from ..types import ClaimVerification, ClaimVerificationError, check_text
from ..validation import ValidRequest, validate_request
from .service import Service
from .auth import check_bearer
from .errors import ApiError, error_response, input_problem
from .metrics import CONTENT_TYPE

__all__ = ["ROUTES", "handle_http_error", "handle_unexpected"]

_LOG = logging.getLogger("verifier.serve")


def _service(request: Request) -> Service:
    service: Service = request.app.state.service
    check_bearer(request, service.settings.api_key)
    return service


async def _json_body(request: Request, service: Service) -> Any:
    """The decoded JSON body (413 over the caps, 408 too slow, 400 malformed, 499 client gone)."""
    return await service.body.json(request)


def _model_failure(exc: ClaimVerificationError) -> ApiError:
    if isinstance(exc, ScorerBusy):
        retry = max(1, int(round(exc.retry_after_s)))
        return ApiError(503, "busy", str(exc), headers={"Retry-After": str(retry)})
    if isinstance(exc, ScorerClosed):
        return ApiError(503, "shutting_down", str(exc), headers={"Retry-After": "1"})
    if isinstance(exc, ScorerTimeout):
        return ApiError(503, "timeout", str(exc), headers={"Retry-After": "1"})
    return ApiError(500, "model_failure", f"model failure: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")


def _validate(service: Service, item: Any, *, prefix: str = "") -> ValidRequest:
    verifier = service.require_ready()
    if not isinstance(item, dict):
        raise ApiError(422, "invalid_request", f"a claim request must be a JSON object, got {json_type(item)}",
                       field=prefix.rstrip(".") or None)
    try:
        return validate_request(item, verifier.config, service.runtime.limits)  # counts passages before parsing them
    except ValueError as exc:  # InputError and pydantic's ValidationError
        raise input_problem(exc, prefix=prefix) from None


async def _verify_valid(service: Service, requests: list[ValidRequest]) -> list[ClaimVerification]:
    verifier = service.require_ready()
    try:
        return await service.run(lambda: verifier.verify_many_sync(requests))
    except ClaimVerificationError as exc:
        raise _model_failure(exc) from None


#: The response header naming the engine that scores this server's requests (its identity's digest;
#: docs/serving.md): ``/predict``'s body keeps TEI's shape, and a result also names it in its ``engine``.
ENGINE_HEADER = "X-Engine-Identity"


def _engine_headers(service: Service) -> dict[str, str]:
    """``{ENGINE_HEADER: digest}`` once the engine is loaded (empty before, or for an engine without one)."""
    identity = getattr(service.engine, "engine_identity", None) if service.ready else None
    return {ENGINE_HEADER: identity.digest} if isinstance(identity, EngineIdentity) else {}


def _result(result: ClaimVerification, service: Service) -> Response:
    return Response(result.model_dump_json(), media_type="application/json", headers=_engine_headers(service))


async def verify(request: Request) -> Response:
    """``POST /v1/verify``: one :class:`~verifier.types.ClaimRequest` → its ``ClaimVerification``."""
    service = _service(request)
    valid = _validate(service, await _json_body(request, service))
    return _result((await _verify_valid(service, [valid]))[0], service)


async def verify_batch(request: Request) -> Response:
    """``POST /v1/verify/batch``: a list of claim requests (or ``{"requests": [...]}``) → results in order.

    Each item is ``{"result": ...}`` or ``{"error": ...}``; an invalid item never fails the others.
    """
    service = _service(request)
    body = await _json_body(request, service)
    items = body.get("requests") if isinstance(body, dict) else body
    unknown = sorted(set(body) - {"requests"}) if isinstance(body, dict) else []
    if unknown:  # as /v1/verify refuses unknown fields: a batch-wide flag here would be dropped unseen
        raise ApiError(422, "invalid_request", f"unknown field {unknown[0]!r}: the body is a JSON array of claim "
                       "requests or {\"requests\": [...]} (options go in each request)", field=unknown[0])
    if not isinstance(items, list):
        raise ApiError(422, "invalid_request", "the body must be a JSON array of claim requests or {\"requests\": [...]}",
                       field="requests")
    limit = service.settings.max_batch_claims
    if len(items) > limit:
        raise ApiError(413, "too_large", f"{len(items)} claims exceed max_batch_claims={limit}",
                       field="requests", limit=f"max_batch_claims={limit}")
    valid: list[ValidRequest] = []
    slots: list[Any] = []
    for index, item in enumerate(items):
        try:
            valid.append(_validate(service, item, prefix=f"{index}."))
            slots.append(len(valid) - 1)
        except ApiError as exc:
            if exc.status != 422:
                raise
            slots.append({"error": exc.body()})
    results = await _verify_valid(service, valid) if valid else []
    out = [
        slot if isinstance(slot, dict) else {"result": results[slot].model_dump(mode="json")} for slot in slots
    ]
    return JSONResponse({"results": out}, headers=_engine_headers(service))


def _bundle_request(service: Service, body: Any) -> ValidRequest:
    """A bundle request body as the claim request it makes (its candidates counted before they are validated,
    citations found in one pass over the context); 422 naming the field and the limit."""
    verifier = service.require_ready()
    if not isinstance(body, dict):
        raise ApiError(422, "invalid_request", f"a bundle request must be a JSON object, got {json_type(body)}")
    limit = service.runtime.limits.max_bundle_candidates
    try:
        check_candidate_count(body.get("bundle"), limit)
        bundled = BundleClaimRequest.model_validate(body)
    except ValidationError as exc:
        raise input_problem(exc) from None
    except ValueError as exc:  # over max_bundle_candidates
        raise ApiError(422, "invalid_request", str(exc), field="bundle", limit=f"max_bundle_candidates={limit}") from None
    try:
        evidence = bundle_evidence(bundled.bundle, bundled.evidence_refs, max_evidence=verifier.config.max_evidence,
                                   max_candidates=limit)
    except ValueError as exc:
        field = "evidence_refs" if "evidence_refs" in str(exc) else "bundle"
        raise ApiError(422, "invalid_request", str(exc), field=field) from None
    item = {
        "id": bundled.id,
        "claim": bundled.claim,
        "evidence": list(evidence),
        "requires_complete_set": bundled.requires_complete_set,
    }
    return _validate(service, item)


async def verify_bundle(request: Request) -> Response:
    """``POST /v1/verify/bundle``: a :class:`~verifier.decision.bundle.BundleClaimRequest` → its ``ClaimVerification``.

    The bundle is read in the worker pool (bounded like model work, ``max_inflight``), never on the event
    loop: a large one takes a while, and every other request, ``/health/live`` included, is answered meanwhile.
    """
    service = _service(request)
    body = await _json_body(request, service)
    service.require_ready()
    valid = await service.run(lambda: _bundle_request(service, body))
    return _result((await _verify_valid(service, [valid]))[0], service)


class PredictRequest(BaseModel):
    """TEI's ``/predict`` body: ``inputs`` is one [premise, hypothesis] pair or a list of pairs."""

    model_config = ConfigDict(extra="forbid")

    inputs: list[Any] = Field(min_length=1)
    raw_scores: Annotated[bool, Field(strict=True)] = False  # strict: the string "false" is refused, as TEI does
    truncate: Optional[Annotated[bool, Field(strict=True)]] = None
    truncation_direction: Optional[str] = None


def _pairs(body: PredictRequest, service: Service) -> tuple[list[tuple[str, str]], bool]:
    """The pairs of a TEI body and whether it was a single pair."""
    inputs = body.inputs
    single = len(inputs) == 2 and all(isinstance(text, str) for text in inputs)
    items = [inputs] if single else inputs
    limit, chars = service.settings.max_predict_pairs, service.runtime.limits.max_passage_chars
    if len(items) > limit:
        raise ApiError(413, "too_large", f"{len(items)} pairs exceed max_predict_pairs={limit}",
                       field="inputs", limit=f"max_predict_pairs={limit}")
    pairs = []
    for index, item in enumerate(items):
        where = "inputs" if single else f"inputs.{index}"
        if not (isinstance(item, list) and len(item) == 2 and all(isinstance(text, str) for text in item)):
            raise ApiError(422, "invalid_request",
                           "each input must be a [premise, hypothesis] pair of strings (this model scores pairs)",
                           field=where)
        for position, text in enumerate(item):
            _check_predict_text(text, f"{where}.{position}", chars)
        pairs.append((item[0], item[1]))
    return pairs, single


def _check_predict_text(text: str, field: str, chars: int) -> None:
    """A ``/predict`` text, refused (422, naming the field) as ``/v1/verify`` refuses a claim or an evidence
    text: over ``max_passage_chars``, a NUL, a lone surrogate, or no visible character. Scored as given (not stripped)."""
    if len(text) > chars:
        raise ApiError(422, "invalid_request", f"text has {len(text):,} characters, more than max_passage_chars={chars}",
                       field=field, limit=f"max_passage_chars={chars}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ApiError(422, "invalid_request", f"text is not valid Unicode text ({exc.reason} at position {exc.start})",
                       field=field) from None
    try:
        check_text(text)
    except ValueError as exc:
        raise ApiError(422, "invalid_request", f"text {exc}", field=field) from None


async def predict(request: Request) -> Response:
    """``POST /predict`` (text-embeddings-inference shape): label scores of (premise, hypothesis) pairs.

    Returns, per pair, ``[{"score": p, "label": name}, ...]`` sorted by score
    (highest first); a single pair gives one such list, a list of pairs a list
    of them. ``raw_scores`` is refused (the coalesced engine returns
    probabilities); inputs are always truncated (``longest_first``).
    """
    service = _service(request)
    body = await _json_body(request, service)
    try:
        parsed = PredictRequest.model_validate(body)
    except ValidationError as exc:
        raise input_problem(exc) from None
    if parsed.raw_scores:
        raise ApiError(422, "invalid_request", "raw_scores is not supported: scores are probabilities",
                       field="raw_scores")
    pairs, single = _pairs(parsed, service)
    service.require_ready()
    try:
        probabilities = await service.scorer.score_async(pairs)
    except ClaimVerificationError as exc:
        raise _model_failure(exc) from None
    rows = [
        [{"score": score, "label": label}
         for score, label in sorted(zip(map(float, row), OUTPUT_LABELS), key=lambda item: -item[0])]
        for row in np.asarray(probabilities)
    ]
    return JSONResponse(rows[0] if single else rows, headers=_engine_headers(service))


async def info(request: Request) -> Response:
    """``GET /info``: model, revisions, variant, manifest summary, limits."""
    service = _service(request)
    settings, runtime = service.settings, service.runtime
    body: dict[str, Any] = {"version": __version__, "ready": service.ready, "model_dir": str(settings.model_dir)}
    if service.load_error:
        body["load_error"] = service.load_error
    if service.ready and service.verifier is not None:
        engine, config = service.engine, service.verifier.config
        manifest = engine.manifest
        body.update({
            "model": manifest.model,
            "revision": config.revision,
            "requested_revision": manifest.requested_revision,
            "resolved_revision": manifest.resolved_revision,
            "variant": runtime.variant,
            "model_file": engine.model_file,
            "providers": list(engine.providers),
            "manifest": {"labels": list(manifest.labels), "files": len(manifest.files),
                         "max_length": manifest.max_length, "random_weights": manifest.random_weights},
            "config": json.loads(config.model_dump_json()),
            # what every scored result names (docs/audit.md, "Engine identity"); its digest is each scoring
            # response's X-Engine-Identity header
            "engine": engine.engine_identity.model_dump(mode="json"),
        })
    body["limits"] = {
        **runtime.limits.model_dump(),
        "max_evidence": service.verifier.config.max_evidence if service.verifier else None,
        "max_batch_claims": settings.max_batch_claims,
        "max_predict_pairs": settings.max_predict_pairs,
        "max_inflight": settings.max_inflight,
        "max_json_values": settings.max_json_values,
        "max_connections": service.max_connections,
        "header_timeout_s": settings.header_timeout_s,
        "keep_alive_s": settings.keep_alive_s,
        "body_timeout_s": settings.body_timeout_s,
        "shutdown_grace_s": settings.shutdown_grace_s,
    }
    body["coalescing"] = {"enabled": settings.coalesce, "max_batch_tokens": runtime.max_batch_tokens,
                          "max_wait_ms": settings.max_wait_ms, "max_queue_pairs": settings.max_queue_pairs,
                          "score_timeout_s": settings.score_timeout_s}
    return JSONResponse(body)


async def live(request: Request) -> Response:
    """``GET /health/live``: the process answers."""
    return JSONResponse({"status": "live"})


async def ready(request: Request) -> Response:
    """``GET /health/ready``: 200 once the manifest verified and the golden pairs reproduced, else 503."""
    service: Service = request.app.state.service
    if service.ready:
        return JSONResponse({"status": "ready"})
    if service.load_error:
        return JSONResponse({"status": "failed", "error": service.load_error}, status_code=503)
    return JSONResponse({"status": "loading"}, status_code=503, headers={"Retry-After": "1"})


async def metrics(request: Request) -> Response:
    """``GET /metrics``: Prometheus text exposition."""
    service = _service(request)
    return Response(service.metrics.render(), media_type=CONTENT_TYPE)


async def handle_http_error(request: Request, exc: Exception) -> Response:
    """404 / 405 as JSON errors."""
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    kind = {404: "not_found", 405: "method_not_allowed"}.get(status, "http_error")
    detail = exc.detail if isinstance(exc, HTTPException) else "error"
    return error_response(ApiError(status, kind, f"{detail}: {request.method} {request.url.path}"))


async def handle_unexpected(request: Request, exc: Exception) -> Response:
    """Any other exception: a 500 with a one-line message (the traceback goes to the log only)."""
    _LOG.error("unexpected error on %s %s", request.method, request.url.path, exc_info=exc)
    return error_response(ApiError(500, "internal_error", f"internal error ({type(exc).__name__})"))


ROUTES = [
    Route("/v1/verify", verify, methods=["POST"]),
    Route("/v1/verify/batch", verify_batch, methods=["POST"]),
    Route("/v1/verify/bundle", verify_bundle, methods=["POST"]),
    Route("/predict", predict, methods=["POST"]),
    Route("/info", info, methods=["GET"]),
    Route("/health/live", live, methods=["GET"]),
    Route("/health/ready", ready, methods=["GET"]),
    Route("/metrics", metrics, methods=["GET"]),
]
