"""Request bodies: read with a byte cap and a deadline, parsed as JSON with bounded memory, off the event loop.

What one body may cost (docs/serving.md, *Errors and limits*):

* a declared ``Content-Length`` over ``max_request_bytes`` is refused (413)
  before a byte is read; a chunked body is refused as soon as it passes the cap;
* the whole body must arrive within ``body_timeout_s`` (408, connection closed);
* a client that disconnects before its body is complete is logged in one line
  and counted as status 499 (nginx's "client closed request"); nothing is answered;
* bodies over :data:`INLINE_PARSE_BYTES` are parsed in a small pool of
  ``parse_workers`` threads, never on the event loop; before parsing, one pass
  over the bytes (numpy, which releases the GIL) counts the JSON values
  (containers and members) and the nesting depth, so a body of more than
  ``max_json_values`` values is refused (413) before Python builds millions of
  objects for it (a 16 MiB ``[{},{},...]`` is 5.6 million dicts, ~450 MB);
  bodies over :data:`~verifier.jsonbody.PROCESS_PARSE_BYTES` are checked and
  parsed in a child process (:func:`verifier.jsonbody.parse_in_child`): one
  ``json.loads`` of a long string holds the GIL, and the event loop with it;
* nesting deeper than :data:`MAX_JSON_DEPTH` is malformed JSON (400), as is
  anything ``json.loads`` refuses (its ``RecursionError`` included).
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional, Union

from starlette.requests import ClientDisconnect, Request

from ..jsonbody import MAX_JSON_DEPTH, PROCESS_PARSE_BYTES, BodyRefused, checked_loads, json_shape, parse_in_child
from .errors import ApiError

__all__ = ["BodyReader", "json_shape", "INLINE_PARSE_BYTES", "MAX_JSON_DEPTH", "CLIENT_CLOSED"]

_LOG = logging.getLogger("verifier.serve")

#: Bodies up to this size are parsed on the event loop (at most ~1 ms of work).
INLINE_PARSE_BYTES = 64 * 1024
#: The status counted for a client that disconnected before its body was complete.
CLIENT_CLOSED = 499

Body = Union[bytes, bytearray]


class BodyReader:
    """Reads and parses the JSON bodies of one server.

    Args:
        max_bytes: ``max_request_bytes``.
        max_values: ``max_json_values``.
        timeout_s: ``body_timeout_s`` (``None``: no deadline).
        parse_workers: threads that parse bodies over :data:`INLINE_PARSE_BYTES`.
    """

    def __init__(self, *, max_bytes: int, max_values: int, timeout_s: Optional[float], parse_workers: int) -> None:
        self.max_bytes = max_bytes
        self.max_values = max_values
        self.timeout_s = timeout_s
        self._pool = ThreadPoolExecutor(max_workers=parse_workers, thread_name_prefix="claim-verifier-json")

    def _too_large(self, message: str) -> ApiError:
        return ApiError(413, "too_large", message, field="body", limit=f"max_request_bytes={self.max_bytes}")

    async def read(self, request: Request) -> bytearray:
        """The raw body: 415 when it is encoded (compressed), 413 over the cap, 408 past the deadline,
        499 when the client went away."""
        coding = request.headers.get("content-encoding")
        if coding is not None and coding.strip().lower() not in ("", "identity"):
            # read as sent: a gzip body would be "not valid JSON", a plain one labelled gzip taken as plain
            raise ApiError(415, "unsupported_content_encoding",
                           f"request bodies are read as sent: content-encoding {coding.strip()!r} is not supported "
                           "(send the JSON uncompressed)", field="content-encoding", limit="content-encoding=identity")
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            raise self._too_large(f"request body of {int(declared):,} bytes exceeds max_request_bytes={self.max_bytes}")
        body = bytearray()

        async def receive() -> None:
            async for chunk in request.stream():
                if len(body) + len(chunk) > self.max_bytes:
                    raise self._too_large(f"request body exceeds max_request_bytes={self.max_bytes}")
                body.extend(chunk)

        try:
            await asyncio.wait_for(receive(), self.timeout_s)
        except asyncio.TimeoutError:
            raise ApiError(
                408, "request_timeout",
                f"the request body did not arrive within body_timeout_s={self.timeout_s:g} ({len(body):,} bytes came)",
                field="body", limit=f"body_timeout_s={self.timeout_s:g}", headers={"Connection": "close"},
            ) from None
        except ClientDisconnect:
            _LOG.info("client disconnected before its request body was complete: %s %s (%d bytes came)",
                      request.method, request.url.path, len(body))
            raise ApiError(CLIENT_CLOSED, "client_disconnected",
                           "the client disconnected before its request body was complete") from None
        return body

    def parse(self, body: Body) -> Any:
        """``json.loads(body)`` after the value and depth checks (400 / 413); over
        :data:`~verifier.jsonbody.PROCESS_PARSE_BYTES` in a child process (this thread waits outside the GIL).

        Raises:
            ApiError: 400 malformed, 413 over ``max_json_values``.
            RuntimeError: the child process failed (a server fault: answered 500).
        """
        try:
            if len(body) > PROCESS_PARSE_BYTES:
                return parse_in_child(body, self.max_values)
            return checked_loads(body, self.max_values, scan=len(body) > INLINE_PARSE_BYTES)
        except BodyRefused as refused:
            raise ApiError(refused.status, refused.kind, refused.message, field="body", limit=refused.limit) from None

    async def json(self, request: Request) -> Any:
        """The decoded JSON body; large bodies are checked and parsed in the parse pool."""
        body = await self.read(request)
        if len(body) <= INLINE_PARSE_BYTES:
            return self.parse(body)
        return await asyncio.get_running_loop().run_in_executor(self._pool, self.parse, body)

    def close(self) -> None:
        """Stop the parse pool (parses not yet started are cancelled)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
