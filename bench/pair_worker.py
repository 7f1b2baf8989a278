"""One warm pair scorer in its own process, driven over stdin/stdout by :mod:`bench.peers`.

Sides (``--side``):

* ``ours`` -- :class:`verifier.engine.scorer.OnnxScorer` on an exported directory
  (``--variant int8|bf16`` or float32), every pair in one ``score`` call (it
  sorts by length and cuts token-budgeted batches itself);
* ``st-torch`` -- sentence-transformers ``CrossEncoder`` on PyTorch;
* ``st-openvino`` -- ``CrossEncoder(..., backend="openvino")`` (optimum-intel) at
  OpenVINO's default precision (bf16 on AMX/AVX512-BF16 CPUs);
* ``st-openvino-bf16`` -- the same with ``ov_config={"INFERENCE_PRECISION_HINT": "bf16"}``.

The sentence-transformers sides call ``CrossEncoder.predict(pairs)`` as a user would
(its default ``batch_size`` 32, in the caller's order) with ``activation_fn`` the
softmax, so every side returns (batch, 3) probabilities in the model's label order.
The OpenVINO sides run from their own virtualenv (``bash bench/setup_st_openvino_peer.sh``:
optimum-intel needs another optimum than this project's exporter). The exported OpenVINO
model is saved once under ``--st-openvino-dir`` and reused.

Protocol: one ``{"op": "ready", ...}`` line after load and a warm-up, then one JSON
reply per request line: ``{"op": "run"}`` scores every pair once (seconds; the
probabilities on the first run only, for agreement), ``{"op": "exit"}``.
Imports nothing but the standard library before the side's own library.
"""

from __future__ import annotations

import time

_STARTED = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable, Optional, Sequence  # noqa: E402

__all__ = ["SIDES", "build_parser", "main"]

#: The sides this worker can load.
SIDES = ("ours", "st-torch", "st-openvino", "st-openvino-bf16")


def build_parser() -> argparse.ArgumentParser:
    """The worker's flags."""
    parser = argparse.ArgumentParser(prog="python -m bench.pair_worker", description=__doc__.split("\n\n")[0])
    parser.add_argument("--side", choices=SIDES, required=True)
    parser.add_argument("--model", type=Path, required=True, help="ours: the exported directory; st-*: the Hugging Face directory")
    parser.add_argument("--variant", default=None, help="ours: int8 or bf16 (default float32)")
    parser.add_argument("--st-openvino-dir", type=Path, default=None, help="where the exported OpenVINO model is kept")
    parser.add_argument("--pairs", type=Path, required=True, help="JSON list of [premise, hypothesis]")
    parser.add_argument("--threads", type=int, default=2)
    return parser


def _load(args: argparse.Namespace) -> Callable[[Sequence[tuple[str, str]]], Any]:
    if args.side == "ours":
        from verifier.engine.scorer import OnnxScorer

        scorer = OnnxScorer(args.model, variant=args.variant, intra_op_num_threads=args.threads, inter_op_num_threads=1)
        scorer.load()
        return scorer.score
    import torch
    from sentence_transformers import CrossEncoder

    torch.set_num_threads(args.threads)
    softmax = torch.nn.Softmax(dim=-1)
    if args.side == "st-torch":
        model = CrossEncoder(str(args.model), device="cpu")
    else:
        kwargs: dict[str, Any] = {}
        if args.side == "st-openvino-bf16":
            kwargs["model_kwargs"] = {"ov_config": {"INFERENCE_PRECISION_HINT": "bf16"}}
        saved = args.st_openvino_dir
        if saved is not None and (saved / "openvino" / "openvino_model.xml").is_file():  # CrossEncoder.save_pretrained layout
            model = CrossEncoder(str(saved), backend="openvino", device="cpu", **kwargs)
        else:
            model = CrossEncoder(str(args.model), backend="openvino", device="cpu", **kwargs)
            if saved is not None:
                model.save_pretrained(str(saved))

    def score(pairs: Sequence[tuple[str, str]]) -> Any:
        return model.predict(list(pairs), activation_fn=softmax, show_progress_bar=False)

    return score


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Load the side, warm it up, then answer requests until ``exit``."""
    args = build_parser().parse_args(argv)
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(name, str(args.threads))
    pairs = [tuple(pair) for pair in json.loads(args.pairs.read_text(encoding="utf-8"))]
    reply = sys.stdout
    sys.stdout = sys.stderr  # the libraries' own prints stay off the protocol
    score = _load(args)
    loaded = time.perf_counter() - _STARTED
    score(pairs)  # warm-up, every pair once: OpenVINO prepares kernels per new input shape on first sight
    reply.write(json.dumps({"op": "ready", "load_s": loaded, "pairs": len(pairs)}) + "\n")
    reply.flush()
    first = True
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("op") == "exit":
            reply.write(json.dumps({"op": "bye"}) + "\n")
            reply.flush()
            return 0
        started = time.perf_counter()
        probabilities = score(pairs)
        seconds = time.perf_counter() - started
        answer: dict[str, Any] = {"op": "run", "seconds": seconds}
        if first:
            import numpy as np

            answer["probabilities"] = np.asarray(probabilities, dtype=np.float64).tolist()
            first = False
        reply.write(json.dumps(answer) + "\n")
        reply.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
