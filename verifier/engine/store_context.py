"""What a score store key is made of: everything besides the pair that can change its logits (docs/score-store.md).

A pair's key is ``sha256(context ‖ len ‖ premise ‖ len ‖ hypothesis)`` (:func:`pair_keys`), where
``context`` is :func:`context_digest` of :func:`score_context`; :func:`store_bypass_reason` says
where a pair's bits depend on its batch, so its scores may not be reused at all.
"""

from __future__ import annotations

import hashlib
import json
import platform
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Optional, Sequence

from .engine_identity import float32_graph
from .ov_session import OPENVINO_PROVIDER, openvino_version
from .manifest import TOKENIZER_NAME
from .session import effective_config_entries
from .tokenization import TRUNCATION

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .loaded import LoadedModel, SessionSettings

__all__ = ["KEY_FORMAT", "score_context", "context_digest", "pair_keys", "store_bypass_reason"]

#: Version of the key format (``key_format`` in the context; the store's ``version`` row).
KEY_FORMAT = 1


@lru_cache(maxsize=1)
def _cpu() -> str:
    """The CPU model and instruction-set flags (Linux), else ``platform.processor()``: kernels differ by ISA."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            fields: dict[str, str] = {}
            for line in handle:
                if not line.strip():
                    break  # the first processor is enough
                name, _, value = line.partition(":")
                fields[name.strip()] = value.strip()
        flags = " ".join(sorted(fields.get("flags", fields.get("Features", "")).split()))
        return f"{fields.get('model name', '')}; flags sha256 {hashlib.sha256(flags.encode()).hexdigest()[:16]}"
    except OSError:
        return platform.processor()


def _onnxruntime_version() -> Optional[str]:
    try:
        import onnxruntime  # type: ignore[import-untyped,unused-ignore]
    except ImportError:  # pragma: no cover - the engine needs it
        return None
    return str(onnxruntime.__version__)


def _tokenizers_version() -> Optional[str]:
    """The ``tokenizers`` library's version: it turns text into the token ids the model sees."""
    try:
        import tokenizers  # type: ignore[import-untyped,unused-ignore]
    except ImportError:  # pragma: no cover - the engine needs it
        return None
    return str(tokenizers.__version__)


def score_context(loaded: "LoadedModel", *, variant: Optional[str], padding: str, session: "SessionSettings") -> dict[str, Any]:
    """Everything besides the pair that determines a pair's logits, as a JSON-ready dict."""
    manifest = loaded.manifest
    tokenizer = manifest.files.get(TOKENIZER_NAME)
    factory = session.factory
    return {
        "key_format": KEY_FORMAT,
        "model_sha256": manifest.files[loaded.directory.model_file].sha256,
        "model_file": loaded.directory.model_file,
        "variant": variant,
        "tokenizer_sha256": tokenizer.sha256 if tokenizer is not None else None,
        # the same tokenizer.json read by another tokenizers release may give other ids (a fix, a new
        # normalizer): its version joins the key, so such a store misses instead of answering
        "tokenizers": _tokenizers_version(),
        "attention": manifest.attention,
        "max_length": manifest.max_length,
        "truncation": TRUNCATION,
        "padding": padding,
        "pad_token_id": manifest.pad_token_id,
        "inputs": list(loaded.input_names),
        "onnxruntime": _onnxruntime_version(),
        "providers": list(loaded.providers),
        "graph_optimization_level": session.graph_optimization_level,
        "intra_op_num_threads": session.intra_op_num_threads,
        # the entries the session really got (the engine's defaults included): a default that changes
        # the arithmetic (an int8 fusion) must change the key, never reuse rows scored without it
        "session_config_entries": effective_config_entries(session.config_entries),
        "session_factory": f"{getattr(factory, '__module__', '?')}.{getattr(factory, '__qualname__', type(factory).__name__)}",
        "machine": platform.machine(),
        "cpu": _cpu(),
        # an OpenVINO variant's bits are OpenVINO's: its version joins the key (absent for onnxruntime,
        # whose keys stay what they were)
        **({"openvino": openvino_version()} if tuple(loaded.providers) == (OPENVINO_PROVIDER,) else {}),
    }


def context_digest(context: dict[str, Any]) -> bytes:
    """sha256 of the canonical JSON (sorted keys, no spaces, UTF-8) of a :func:`score_context`."""
    text = json.dumps(context, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).digest()


def pair_keys(context: bytes, pairs: Sequence[tuple[str, str]]) -> list[bytes]:
    """The 32-byte key of each pair: ``sha256(context ‖ len ‖ premise ‖ len ‖ hypothesis)`` (UTF-8, 8-byte lengths)."""
    keys = []
    for premise, hypothesis in pairs:
        p = premise.encode("utf-8", "surrogatepass")
        h = hypothesis.encode("utf-8", "surrogatepass")
        keys.append(hashlib.sha256(context + len(p).to_bytes(8, "big") + p + len(h).to_bytes(8, "big") + h).digest())
    return keys


def store_bypass_reason(loaded: "LoadedModel", *, variant: Optional[str], padding: str) -> Optional[str]:
    """Why this engine's scores may not be reused (``None``: they may).

    Reused only where a pair's bits do not depend on the other pairs of its
    call: the CPU execution provider, and either ``padding="none"`` (each pair
    alone, unpadded) or a float32 graph (``model.onnx``, or a variant the
    exporter describes as float32). A dynamic-int8 graph quantizes activations
    per batch (docs/serving.md), and OpenVINO's bf16 kernels are chosen by batch
    shape, so for those only ``padding="none"`` makes them reusable.
    """
    openvino = tuple(loaded.providers) == (OPENVINO_PROVIDER,)
    if tuple(loaded.providers) != ("CPUExecutionProvider",) and not openvino:
        return f"providers {', '.join(loaded.providers)}: bit-identity across batches is measured on the CPU provider only"
    if padding == "none":
        return None
    if openvino:  # bf16 kernels pick their blocking by batch shape: ~1e-3 moves (docs/model-directory.md)
        return (
            f"variant {variant!r} runs on OpenVINO, where a pair's bf16 scores can depend on the other pairs of its "
            'padded batch; reusing them needs padding="none" (verify or serve --padding none)'
        )
    if float32_graph(loaded.manifest, variant):
        return None
    return (
        f"variant {variant!r} is not a float32 graph, so a pair's scores depend on the other pairs of its padded "
        'batch; reusing them needs padding="none" (verify or serve --padding none)'
    )
