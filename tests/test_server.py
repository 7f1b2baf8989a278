"""The HTTP server, for real: uvicorn on a free loopback port, spoken to over HTTP with httpx.

Every route, auth, limits, malformed JSON, backpressure, graceful shutdown with
requests in flight, readiness; results over HTTP equal the library's for the
same input, digests included, alone and under 32 concurrent clients.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Iterator, Optional

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("prometheus_client")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

import httpx  # noqa: E402

from verifier import ClaimVerification, ClaimVerifier  # noqa: E402
from verifier.decision.bundle import ContextBundle  # noqa: E402
from verifier.engine.scorer import OnnxScorer  # noqa: E402
from verifier.options import InputLimits, RuntimeOptions  # noqa: E402
from verifier.serve import ServerSettings, create_app, create_server  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


class Server:
    """A real uvicorn server in a thread on a free loopback port."""

    def __init__(self, settings: ServerSettings) -> None:
        self.server = create_server(settings, host="127.0.0.1", port=0, log_level="warning")
        self.app = self.server.config.app
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("server did not start")
            threading.Event().wait(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"

    def client(self, **kwargs: Any) -> "httpx.Client":
        return httpx.Client(base_url=self.url, timeout=60, **kwargs)

    def wait_ready(self) -> "httpx.Response":
        with self.client() as client:
            while True:
                response = client.get("/health/ready")
                if response.status_code == 200 or response.json()["status"] == "failed":
                    return response
                threading.Event().wait(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join()


@pytest.fixture(scope="module")
def server(tiny_model_dir: Path) -> Iterator[Server]:
    running = Server(ServerSettings(model_dir=tiny_model_dir, max_batch_claims=8, max_predict_pairs=8))
    assert running.wait_ready().status_code == 200
    yield running
    running.stop()


@pytest.fixture(scope="module")
def library(tiny_model_dir: Path) -> ClaimVerifier:
    return ClaimVerifier.from_model_dir(tiny_model_dir)


def _request(k: int, passages: int = 3) -> dict[str, Any]:
    texts = ["The launch moved to Wednesday.", "The launch is on Tuesday.", "The team shipped release 4 on Tuesday.",
             "I want to deploy after the tests pass.", "Nadia leads the Atlas project."]
    return {
        "id": f"c{k}",
        "claim": ["The launch is Tuesday.", "Release 4 shipped.", "Nadia leads Atlas."][k % 3],
        "evidence": [
            {"reference": f"m{j}", "memory_id": f"00000000-0000-0000-0000-{100 * k + j:012d}",
             "text": texts[(k + j) % len(texts)] + f" ({k})"}
            for j in range(passages)
        ],
    }


def _result(response: "httpx.Response") -> ClaimVerification:
    assert response.status_code == 200, response.text
    return ClaimVerification.model_validate_json(response.text)


def _metric(text: str, name: str) -> float:
    match = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    assert match, name
    return float(match.group(1))


# ---------------------------------------------------------------- routes


def test_health_info_and_metrics(server: Server) -> None:
    with server.client() as client:
        assert client.get("/health/live").json() == {"status": "live"}
        assert client.get("/health/ready").json() == {"status": "ready"}
        info = client.get("/info").json()
        assert info["ready"] is True and info["model"] == info["config"]["model"]
        assert info["manifest"]["random_weights"] is True and info["providers"] == ["CPUExecutionProvider"]
        assert info["limits"]["max_evidence"] == 64 and info["limits"]["max_batch_claims"] == 8
        client.post("/v1/verify", json=_request(0))
        metrics = client.get("/metrics")
        assert metrics.status_code == 200
        for name in ("claim_verifier_requests_total", "claim_verifier_queue_wait_seconds_bucket",
                     "claim_verifier_tokenization_seconds_bucket", "claim_verifier_inference_seconds_bucket",
                     "claim_verifier_batch_rows_bucket", "claim_verifier_batch_tokens_bucket",
                     "claim_verifier_padding_overhead_bucket", "claim_verifier_queue_depth", "claim_verifier_ready"):
            assert name in metrics.text
        assert 'route="/v1/verify",status="200"' in metrics.text


def test_every_scoring_response_names_the_engine(server: Server, library: ClaimVerifier) -> None:
    """Issue 47: serve reports the engine that scores it: /info's ``engine``, each result's ``engine`` and the
    X-Engine-Identity header of every scoring route (``/predict`` keeps TEI's body) are the library's for the
    same directory and settings."""
    with server.client() as client:
        info = client.get("/info").json()
        verified = client.post("/v1/verify", json=_request(0))
        batch = client.post("/v1/verify/batch", json=[_request(1)])
        predicted = client.post("/predict", json={"inputs": ["The launch is on Tuesday.", "The launch is Tuesday."]})
        live = client.get("/health/live")
    expected = library.verify_many_sync([_request(0)])[0].engine
    assert expected is not None and info["engine"] == expected.model_dump(mode="json")
    assert _result(verified).engine == expected and batch.json()["results"][0]["result"]["engine"] == info["engine"]
    assert [r.headers.get("X-Engine-Identity") for r in (verified, batch, predicted)] == [expected.digest] * 3
    assert isinstance(predicted.json(), list) and "X-Engine-Identity" not in live.headers


def test_verify_equals_the_library_digests_included(server: Server, library: ClaimVerifier) -> None:
    with server.client() as client:
        for k in range(3):
            over_http = _result(client.post("/v1/verify", json=_request(k)))
            expected = library.verify_many_sync([_request(k)])[0]
            assert over_http == expected and over_http.result_sha256 == expected.result_sha256


def test_batch_keeps_order_and_reports_per_item_errors(server: Server, library: ClaimVerifier) -> None:
    items = [_request(0), {"claim": ""}, _request(1), "not an object"]
    with server.client() as client:
        body = client.post("/v1/verify/batch", json=items).json()
        wrapped = client.post("/v1/verify/batch", json={"requests": items[:1]}).json()
        # a batch-wide option beside "requests" is refused, not dropped (adversarial run)
        stray = client.post("/v1/verify/batch", json={"requests": items[:1], "requires_complete_set": True})
    assert stray.status_code == 422 and stray.json()["error"]["field"] == "requires_complete_set", stray.text
    assert "unknown field 'requires_complete_set'" in stray.json()["error"]["message"]
    results = body["results"]
    assert len(results) == 4
    expected = library.verify_many_sync([_request(0), _request(1)])
    assert ClaimVerification.model_validate(results[0]["result"]) == expected[0]
    assert results[1]["error"]["field"] == "1.claim"
    assert ClaimVerification.model_validate(results[2]["result"]) == expected[1]
    assert results[3]["error"]["field"] == "3"
    assert ClaimVerification.model_validate(wrapped["results"][0]["result"]) == expected[0]


def test_bundle_equals_the_library(server: Server, library: ClaimVerifier) -> None:
    bundle = {
        "rendered_context": "[M1] The launch moved to Wednesday. [M2] The launch is on Tuesday.",
        "candidates": [
            {"reference": "M1", "memory_id": "6f1c1f5e-3b57-4a8e-9a55-0d7c59b2f001",
             "rendered_text": "The launch moved to Wednesday."},
            {"reference": "M2", "memory_id": "6f1c1f5e-3b57-4a8e-9a55-0d7c59b2f002",
             "rendered_text": "The launch is on Tuesday."},
        ],
    }
    with server.client() as client:
        over_http = _result(client.post("/v1/verify/bundle", json={"claim": "The launch is Tuesday.", "bundle": bundle}))
        refused = client.post("/v1/verify/bundle",
                              json={"claim": "x", "bundle": bundle, "evidence_refs": ["nope"]})
    assert over_http == library.verify_bundle_sync("The launch is Tuesday.", ContextBundle.model_validate(bundle))
    assert refused.status_code == 422 and refused.json()["error"]["field"] == "evidence_refs"


def test_predict_follows_the_tei_shape(server: Server, tiny_model_dir: Path) -> None:
    pairs = [("The launch moved to Wednesday.", "The launch is Tuesday."), ("A cat.", "An animal.")]
    expected = OnnxScorer(tiny_model_dir).score(pairs)
    with server.client() as client:
        single = client.post("/predict", json={"inputs": list(pairs[0])}).json()
        batch = client.post("/predict", json={"inputs": [list(p) for p in pairs], "truncate": True}).json()
        raw = client.post("/predict", json={"inputs": list(pairs[0]), "raw_scores": True})
        text = client.post("/predict", json={"inputs": ["just one text"]})
        worded = client.post("/predict", json={"inputs": list(pairs[0]), "raw_scores": "false"})  # not read as True
    labels = ("entailment", "contradiction", "neutral")
    for row, got in zip(expected, [single] + [batch[1]]):
        assert [item["score"] for item in got] == sorted(row.tolist(), reverse=True)
        assert {item["label"]: item["score"] for item in got} == dict(zip(labels, row.tolist()))
    assert batch[0] == single
    assert raw.status_code == 422 and raw.json()["error"]["field"] == "raw_scores"
    assert text.status_code == 422 and text.json()["error"]["field"] == "inputs.0"
    assert worded.status_code == 422 and worded.json()["error"]["field"] == "raw_scores"


def test_32_concurrent_clients_get_the_librarys_results(server: Server, library: ClaimVerifier) -> None:
    requests = [_request(k, passages=1 + k % 4) for k in range(32)]
    expected = library.verify_many_sync(requests)

    async def main() -> list["httpx.Response"]:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            return list(await asyncio.gather(*(client.post("/v1/verify", json=r) for r in requests)))

    results = [_result(response) for response in asyncio.run(main())]
    assert results == expected
    assert [r.result_sha256 for r in results] == [r.result_sha256 for r in expected]


# ---------------------------------------------------------------- refusals


def test_limits_malformed_json_and_unknown_routes(server: Server) -> None:
    with server.client() as client:
        bad = client.post("/v1/verify", content=b"{not json", headers={"content-type": "application/json"})
        assert bad.status_code == 400 and bad.json()["error"]["type"] == "malformed_json"
        many = _request(0, passages=65)
        too_many = client.post("/v1/verify", json=many).json()["error"]
        assert too_many["field"] == "evidence" and too_many["limit"] == "max_evidence=64"
        long = _request(0, passages=1)
        long["evidence"][0]["text"] = "x" * 100_001
        too_long = client.post("/v1/verify", json=long).json()["error"]
        assert too_long["field"] == "evidence.0.text" and too_long["limit"] == "max_passage_chars=100000"
        unknown = client.post("/v1/verify", json={"claim": "x", "colour": "red"})
        assert unknown.status_code == 422 and unknown.json()["error"]["field"] == "colour"
        not_object = client.post("/v1/verify", json=["x"])
        assert not_object.status_code == 422
        batch = client.post("/v1/verify/batch", json=[_request(0)] * 9)
        assert batch.status_code == 413 and batch.json()["error"]["limit"] == "max_batch_claims=8"
        pairs = client.post("/predict", json={"inputs": [["a", "b"]] * 9})
        assert pairs.status_code == 413 and pairs.json()["error"]["limit"] == "max_predict_pairs=8"
        assert client.get("/nope").json()["error"]["type"] == "not_found"
        assert client.get("/v1/verify").json()["error"]["type"] == "method_not_allowed"
    for response in (bad, unknown, batch):
        assert "Traceback" not in response.text


def test_body_size_limit(tiny_model_dir: Path) -> None:
    limits = InputLimits(max_request_bytes=1024)
    running = Server(ServerSettings(model_dir=tiny_model_dir, runtime=RuntimeOptions(limits=limits)))
    try:
        running.wait_ready()
        with running.client() as client:
            response = client.post("/v1/verify", json={"claim": "x" * 2000})
            chunked = client.post("/v1/verify", content=iter([b'{"claim": "', b"x" * 2000, b'"}']))
    finally:
        running.stop()
    assert response.status_code == 413 and response.json()["error"]["limit"] == "max_request_bytes=1024"
    assert chunked.status_code == 413


def test_bearer_key(tiny_model_dir: Path) -> None:
    running = Server(ServerSettings(model_dir=tiny_model_dir, api_key="s3cret"))
    try:
        running.wait_ready()
        with running.client() as client:
            assert client.get("/health/live").status_code == 200
            assert client.get("/health/ready").status_code == 200
            missing = client.get("/info")
            wrong = client.get("/info", headers={"Authorization": "Bearer nope"})
            right = client.get("/info", headers={"Authorization": "Bearer s3cret"})
            verify = client.post("/v1/verify", json=_request(0), headers={"Authorization": "Bearer s3cret"})
    finally:
        running.stop()
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    assert wrong.status_code == 401 and "s3cret" not in wrong.text
    assert right.status_code == 200 and verify.status_code == 200


def test_readiness_before_load_and_for_a_broken_model(tiny_model_copy: Path) -> None:
    # Before the lifespan starts nothing is loaded: not ready, and model routes answer 503.
    app = create_app(ServerSettings(model_dir=tiny_model_copy))

    async def before() -> tuple["httpx.Response", "httpx.Response", "httpx.Response"]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
            return (await client.get("/health/ready"), await client.get("/health/live"),
                    await client.post("/v1/verify", json=_request(0)))

    ready, live, verify = asyncio.run(before())
    assert ready.status_code == 503 and ready.json()["status"] == "loading"
    assert live.status_code == 200
    assert verify.status_code == 503 and verify.json()["error"]["type"] == "not_ready"
    # A tampered model never becomes ready, and says why.
    model = tiny_model_copy / "model.onnx"
    model.write_bytes(model.read_bytes()[:-1] + b"\0")
    running = Server(ServerSettings(model_dir=tiny_model_copy))
    try:
        failed = running.wait_ready()
        with running.client() as client:
            refused = client.post("/v1/verify", json=_request(0))
    finally:
        running.stop()
    assert failed.status_code == 503 and failed.json()["status"] == "failed" and failed.json()["error"]
    assert refused.status_code == 503 and refused.json()["error"]["type"] == "model_unavailable"


# ---------------------------------------------------------------- load


def _queue_depth(client: "httpx.Client") -> float:
    return _metric(client.get("/metrics").text, "claim_verifier_queue_depth")


@pytest.mark.slow
def test_backpressure_refuses_with_503_and_retry_after(tiny_model_dir: Path, library: ClaimVerifier) -> None:
    running = Server(ServerSettings(model_dir=tiny_model_dir, max_queue_pairs=1, max_wait_ms=3000,
                                    runtime=RuntimeOptions(max_batch_tokens=1 << 20)))
    try:
        running.wait_ready()
        first: list["httpx.Response"] = []
        with running.client() as client:
            thread = threading.Thread(target=lambda: first.append(client.post("/v1/verify", json=_request(0, 1))))
            thread.start()
            while _queue_depth(client) < 1 and not first:  # never hangs: the first call ends after max_wait_ms
                threading.Event().wait(0.005)
            refused = client.post("/v1/verify", json=_request(1, 1))
            thread.join()
            refusals = client.get("/metrics").text
    finally:
        running.stop()
    assert refused.status_code == 503 and refused.json()["error"]["type"] == "busy"
    assert refused.headers["retry-after"] == "1"
    assert _result(first[0]) == library.verify_many_sync([_request(0, 1)])[0]
    assert 'claim_verifier_refused_total{reason="busy"} 1.0' in refusals


@pytest.mark.slow
def test_graceful_shutdown_finishes_requests_in_flight(tiny_model_dir: Path, library: ClaimVerifier) -> None:
    running = Server(ServerSettings(model_dir=tiny_model_dir, max_wait_ms=1500,
                                    runtime=RuntimeOptions(max_batch_tokens=1 << 20)))
    running.wait_ready()
    requests = [_request(k) for k in range(8)]
    responses: dict[int, "httpx.Response"] = {}

    def call(k: int) -> None:
        with running.client() as client:
            responses[k] = client.post("/v1/verify", json=requests[k])

    threads = [threading.Thread(target=call, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    with running.client() as client:
        while _queue_depth(client) < 8 * 3 and not responses:  # all queued (or a pass already ran)
            threading.Event().wait(0.005)
    running.stop()  # uvicorn's graceful shutdown, as on SIGTERM
    for thread in threads:
        thread.join()
    assert [_result(responses[k]) for k in range(8)] == library.verify_many_sync(requests)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow
def test_the_serve_subcommand_serves_and_stops_on_sigterm(tiny_model_dir: Path, tmp_path: Path) -> None:
    key = tmp_path / "key"
    key.write_text("k3y\n")
    port = _free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "verifier", "serve", "--model-dir", str(tiny_model_dir), "--port", str(port),
             "--api-key-file", str(key), "--log-level", "warning"],
            cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    status: Optional[int] = None
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            while True:
                try:
                    if client.get("/health/ready").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert process.poll() is None, log.read_text()
                threading.Event().wait(0.05)
            response = client.post("/v1/verify", json=_request(0), headers={"Authorization": "Bearer k3y"})
        assert response.status_code == 200
        process.send_signal(signal.SIGTERM)
        status = process.wait(60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    output = log.read_text()
    assert status in (0, 143), output
    assert "Traceback" not in output


@pytest.mark.slow
def test_the_serve_subcommand_logs_requests_on_stderr_only(tiny_model_dir: Path, tmp_path: Path) -> None:
    """uvicorn's access log goes to stdout by default; ``serve`` keeps stdout free of messages (README)."""
    port = _free_port()
    out, err = tmp_path / "stdout.log", tmp_path / "stderr.log"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "verifier", "serve", "--model-dir", str(tiny_model_dir), "--port", str(port)],
            cwd=ROOT, stdout=stdout, stderr=stderr, env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            while True:
                try:
                    if client.get("/health/ready").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert process.poll() is None, err.read_text()
                threading.Event().wait(0.05)
            assert client.get("/info").status_code == 200
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) in (0, 143), err.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert out.read_text() == ""
    assert re.search(r'"GET /info HTTP/1\.1" 200', err.read_text()), err.read_text()


def test_import_verifier_stays_light() -> None:
    code = ("import sys, verifier, verifier.engine.coalesce; "
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('starlette', 'uvicorn', 'prometheus_client', 'httpx', 'onnxruntime'))))")
    out = subprocess.run([sys.executable, "-c", "import json; " + code], cwd=ROOT, capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert json.loads(out.stdout) == []


def test_metrics_count_padding_and_rows(server: Server) -> None:
    with server.client() as client:
        client.post("/predict", json={"inputs": [["a b c d e f", "g"], ["h", "i"]]})
        text = client.get("/metrics").text
    assert _metric(text, "claim_verifier_batch_rows_count") >= 1
    assert _metric(text, "claim_verifier_padding_overhead_sum") >= _metric(text, "claim_verifier_padding_overhead_count")
    assert np.isfinite(_metric(text, "claim_verifier_inference_seconds_sum"))
