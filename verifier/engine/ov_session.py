"""OpenVINO behind the engine's session seam: the ``bf16`` variant on the CPU's matrix units.

The engine runs a model through one seam (:data:`verifier.engine.loaded.SessionFactory`):
an object with ``run``, ``get_inputs``, ``get_outputs`` and ``get_providers`` as
onnxruntime's ``InferenceSession`` has them. :class:`OpenVinoSession` is the
second implementation, over an OpenVINO ``CompiledModel``; tokenization,
batching, the span graph, the manifest's integrity checks and the decision
layer do not know which one ran (docs/architecture.md).

Two ways in, both from bytes or an open descriptor the model directory has
verified (:meth:`verifier.engine.model_directory.ModelDirectory.verified_file`):

- :func:`compile_onnx`: OpenVINO reads the exported ``model.onnx`` and compiles
  it for the CPU with an inference precision (``bf16``: OpenVINO's CPU plugin
  runs MatMuls and convolutions in bfloat16 on AMX or AVX512-BF16; OpenVINO docs,
  "Precision Control"). A few seconds for DeBERTa-v3-base.
- :func:`import_compiled`: a compiled model OpenVINO exported
  (``CompiledModel.export_model``), recorded in the manifest as the variant's
  file. Valid only for the OpenVINO version and CPU capabilities it was made
  with (:func:`compiled_fingerprint`); the loader falls back to
  :func:`compile_onnx` elsewhere, saying so.

No OpenVINO model cache (``CACHE_DIR``) is used: every file that runs is listed
and hashed in the manifest (docs/security.md).

``openvino`` is imported inside the functions (the ``openvino`` extra):
importing this module is cheap.
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence, Union

import numpy as np

from ..types import ClaimVerificationError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from openvino import CompiledModel, Core  # type: ignore[import-untyped,unused-ignore]

__all__ = [
    "OPENVINO_PROVIDER",
    "INFERENCE_PRECISIONS",
    "CPU_FLAGS",
    "NodeArg",
    "OpenVinoSession",
    "CpuCapabilities",
    "cpu_capabilities",
    "openvino_version",
    "check_precision",
    "compiled_fingerprint",
    "compile_onnx",
    "import_compiled",
    "export_compiled",
    "read_buffer",
    "fp16_weights",
]

#: What :meth:`OpenVinoSession.get_providers` reports (the score store keys and ``info`` show it).
OPENVINO_PROVIDER = "OpenVINO:CPU"
#: Inference precisions a variant may ask OpenVINO's CPU plugin for (``INFERENCE_PRECISION_HINT``).
INFERENCE_PRECISIONS: tuple[str, ...] = ("bf16", "f32")
#: /proc/cpuinfo flags that decide which variant is fastest here (Intel SDM / Linux ``cpufeatures.h`` names):
#: AMX tiles with bf16 and int8 matmuls, AVX512-BF16 dot products, and VNNI int8 dot products.
CPU_FLAGS: tuple[str, ...] = ("amx_tile", "amx_bf16", "amx_int8", "avx512_bf16", "avx512_vnni", "avx_vnni", "avx512f", "avx2")

_INSTALL = "install the openvino extra (pip install -e '.[openvino]' in a checkout, or the built wheel with [openvino])"


def import_openvino() -> Any:
    """``import openvino`` without its telemetry: the ``openvino`` module.

    OpenVINO's ``__init__`` imports its model converter, which sends a usage event through the
    ``openvino_telemetry`` package (a forked process posting to an analytics server, and files
    under ``~/intel``) on every import. This engine runs offline and auditable
    (docs/security.md), so that package is hidden while OpenVINO is first imported; the converter
    then uses its own no-op stub and still works, and a later ``import openvino_telemetry`` of the
    caller's is unaffected. An ``openvino`` imported before is returned as it is.

    Raises:
        ImportError: OpenVINO is not installed.
    """
    if "openvino" in sys.modules:
        import openvino

        return openvino
    hidden = "openvino_telemetry" not in sys.modules
    if hidden:
        sys.modules["openvino_telemetry"] = None  # type: ignore[assignment]  # an import of it raises ImportError
    try:
        import openvino
    finally:
        if hidden and sys.modules.get("openvino_telemetry", False) is None:
            del sys.modules["openvino_telemetry"]
    return openvino


def openvino_version() -> Optional[str]:
    """The installed OpenVINO runtime's version string, or ``None`` when it is not installed."""
    try:
        openvino = import_openvino()
    except ImportError:
        return None
    return str(openvino.get_version())


def _core() -> "Core":
    try:
        openvino = import_openvino()
    except ImportError as exc:
        raise ClaimVerificationError(f"this variant runs on OpenVINO, which is not installed: {_INSTALL}") from exc
    return openvino.Core()


@dataclass(frozen=True)
class CpuCapabilities:
    """What this CPU offers for inference.

    Attributes:
        model_name: ``/proc/cpuinfo``'s ``model name`` (``""`` where unreadable).
        flags: the :data:`CPU_FLAGS` this CPU has, in that order.
        openvino: OpenVINO's version, ``None`` when not installed.
        openvino_capabilities: OpenVINO CPU plugin's ``OPTIMIZATION_CAPABILITIES``
            (``"BF16"`` among them where it runs bf16 natively), ``()`` without OpenVINO.
    """

    model_name: str
    flags: tuple[str, ...]
    openvino: Optional[str]
    openvino_capabilities: tuple[str, ...]

    @property
    def bf16(self) -> bool:
        """Whether OpenVINO runs bf16 natively here (AMX-BF16 or AVX512-BF16)."""
        return "BF16" in self.openvino_capabilities

    @property
    def matrix_units(self) -> str:
        """The fastest matrix instructions here, in words (for ``info``)."""
        if "amx_bf16" in self.flags:
            return "AMX (bf16 and int8 tiles)"
        if "avx512_bf16" in self.flags:
            return "AVX512-BF16 (no AMX)"
        if "avx512_vnni" in self.flags or "avx_vnni" in self.flags:
            return "VNNI int8 (no bf16)"
        return "none beyond float32 SIMD"


def cpu_capabilities() -> CpuCapabilities:
    """Read this CPU's capabilities (``/proc/cpuinfo`` and, when installed, OpenVINO's CPU plugin)."""
    model_name = ""
    flags: set[str] = set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and not model_name:
                    model_name = value.strip()
                elif key == "flags" and not flags:
                    flags = set(value.split())
                if model_name and flags:
                    break
    except OSError:  # not Linux: flags stay unknown
        pass
    version = openvino_version()
    capabilities: tuple[str, ...] = ()
    if version is not None:
        try:
            capabilities = tuple(str(c) for c in _core().get_property("CPU", "OPTIMIZATION_CAPABILITIES"))
        except Exception:  # noqa: BLE001 - OpenVINO without a usable CPU plugin: no capabilities
            capabilities = ()
    return CpuCapabilities(
        model_name=model_name,
        flags=tuple(flag for flag in CPU_FLAGS if flag in flags),
        openvino=version,
        openvino_capabilities=capabilities,
    )


def check_precision(precision: str, capabilities: CpuCapabilities) -> None:
    """Refuse an inference precision this CPU cannot run natively.

    OpenVINO would run a ``bf16`` request in float32 on a CPU without
    AVX512-BF16 or AMX: the numbers would not be the gated variant's, so the
    engine refuses instead.

    Raises:
        ValueError: ``precision`` is not one of :data:`INFERENCE_PRECISIONS`.
        ClaimVerificationError: OpenVINO is not installed (``capabilities.openvino`` is
            ``None``), or ``bf16`` on a CPU whose OpenVINO capabilities lack ``BF16``.
    """
    if precision not in INFERENCE_PRECISIONS:
        raise ValueError(f"inference precision must be one of {list(INFERENCE_PRECISIONS)}, got {precision!r}")
    if capabilities.openvino is None:
        raise ClaimVerificationError(f"this variant runs on OpenVINO, which is not installed: {_INSTALL}")
    if precision == "bf16" and not capabilities.bf16:
        raise ClaimVerificationError(
            "the bf16 variant needs a CPU with AMX-BF16 or AVX512-BF16; this one "
            f"({capabilities.model_name or 'unknown CPU'}; OpenVINO capabilities "
            f"{', '.join(capabilities.openvino_capabilities) or 'none'}) has neither: use the float32 model "
            "(no variant) or --variant int8 (docs/performance.md)"
        )


def compiled_fingerprint(capabilities: CpuCapabilities) -> dict[str, str]:
    """What a compiled OpenVINO model is valid for: the OpenVINO version and the CPU's capabilities.

    OpenVINO documents exported compiled models as valid only for the same
    runtime version and device; the CPU plugin picks its kernels by ISA, so
    the ISA flags (not the model name) are part of it.
    """
    return {
        "openvino": capabilities.openvino or "",
        "device": "CPU",
        "optimization_capabilities": ",".join(capabilities.openvino_capabilities),
        "cpu_flags": ",".join(capabilities.flags),
    }


@dataclass(frozen=True)
class NodeArg:
    """A graph input or output as onnxruntime's ``NodeArg`` describes it (name, ``tensor(<type>)``, shape)."""

    name: str
    type: str
    shape: tuple[Union[int, str, None], ...]


_TYPES = {"i64": "tensor(int64)", "i32": "tensor(int32)", "f32": "tensor(float)", "f16": "tensor(float16)", "bf16": "tensor(bfloat16)"}


def _node(port: Any) -> NodeArg:
    shape = tuple(None if dim.is_dynamic else dim.get_length() for dim in port.get_partial_shape())
    element = port.get_element_type().get_type_name()
    return NodeArg(name=port.get_any_name(), type=_TYPES.get(element, f"tensor({element})"), shape=shape)


class OpenVinoSession:
    """An OpenVINO ``CompiledModel`` behind onnxruntime's ``InferenceSession`` interface.

    ``run`` is thread-safe: each call takes an infer request from a pool (made
    on demand) and copies the outputs out before returning it.

    Attributes:
        compiled: the OpenVINO ``CompiledModel`` (read-only use).

    Args:
        compiled: the compiled model.
        precision: the inference precision it was compiled with (for messages and ``info``).
        origin: ``"compiled"`` (imported from the variant's compiled file) or
            ``"onnx"`` (compiled here from the ONNX graph).
    """

    def __init__(self, compiled: "CompiledModel", *, precision: str, origin: str) -> None:
        self.compiled = compiled
        self.precision = precision
        self.origin = origin
        self._inputs = [_node(port) for port in compiled.inputs]
        self._outputs = [_node(port) for port in compiled.outputs]
        self._pool: list[Any] = []
        self._pool_lock = threading.Lock()
        #: Memory the compiled model points into (an imported compiled file's buffer), kept with it.
        self.keep_alive: Optional[np.ndarray] = None

    def get_inputs(self) -> list[NodeArg]:
        """The graph inputs (name, type, shape), in graph order."""
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        """The graph outputs (name, type, shape)."""
        return list(self._outputs)

    def get_providers(self) -> list[str]:
        """``[OPENVINO_PROVIDER]``."""
        return [OPENVINO_PROVIDER]

    @property
    def threads(self) -> int:
        """OpenVINO's ``INFERENCE_NUM_THREADS`` for this model."""
        return int(self.compiled.get_property("INFERENCE_NUM_THREADS"))

    def run(self, output_names: Optional[Sequence[str]], feed: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """Run one batch; return the requested outputs (all when ``output_names`` is ``None``) as arrays.

        Args:
            output_names: output names, in the order wanted.
            feed: input name -> C-contiguous array of the graph's dtype, shape (batch, length).

        Raises:
            KeyError: an unknown output name.
            RuntimeError: OpenVINO failed (the engine wraps it in ClaimVerificationError).
        """
        with self._pool_lock:
            request = self._pool.pop() if self._pool else self.compiled.create_infer_request()
        try:
            results = request.infer({name: np.ascontiguousarray(value) for name, value in feed.items()}, share_inputs=True)
            by_name = {port.get_any_name(): np.array(value, copy=True) for port, value in results.items()}
        finally:
            with self._pool_lock:
                self._pool.append(request)
        names = list(output_names) if output_names else [node.name for node in self._outputs]
        return [by_name[name] for name in names]


def _properties(precision: str, threads: Optional[int]) -> dict[str, Any]:
    # One stream over every thread: the engine runs one padded batch at a time (latency, not
    # throughput streams); no CACHE_DIR (an unverified cache).
    properties: dict[str, Any] = {"INFERENCE_PRECISION_HINT": precision, "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1}
    if threads is not None:
        properties["INFERENCE_NUM_THREADS"] = int(threads)
    return properties


def read_buffer(model: Union[bytes, "str | os.PathLike[str]"]) -> np.ndarray:
    """A file's bytes in a private, writable uint8 buffer (one copy), for :func:`import_compiled`.

    ``model`` is a path (the ``/proc/self/fd/N`` name of a verified descriptor) or bytes. The
    buffer is anonymous memory with ordinary pages (asking for transparent huge pages can make the
    read much slower where the kernel compacts memory on the fault: docs/performance.md). Never a mapping of the file itself:
    a later write to the file would change a running model. The engine reads a variant's file
    with :meth:`verifier.engine.model_directory.ModelDirectory.verified_buffer` instead, which
    hashes the buffer it reads.

    Raises:
        ClaimVerificationError: the file shrank while it was read.
    """
    import mmap

    if isinstance(model, bytes):
        return np.frombuffer(bytearray(model), dtype=np.uint8)
    with open(model, "rb", buffering=0) as handle:
        size = os.fstat(handle.fileno()).st_size
        region = mmap.mmap(-1, max(size, 1), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        buffer = np.frombuffer(region, dtype=np.uint8, count=size)
        view = memoryview(region)[:size]
        done = 0
        while done < size:
            read = handle.readinto(view[done:])
            if not read:
                raise ClaimVerificationError(f"{model}: file shrank while it was read ({done} of {size} bytes)")
            done += read
    return buffer


def fp16_weights(core: "Core", graph: Any) -> Any:
    """``graph`` with its float32 weights stored as float16 (OpenVINO's ``save_model(compress_to_fp16=True)``).

    The bf16 kernels round the weights to 8 mantissa bits anyway; float16 keeps 11, so the
    compiled file halves (775 -> 408 MB for DeBERTa-v3-base) and imports twice as fast at the
    same parity (docs/performance.md). The export and the runtime's fallback compile both do
    this, so both run the same numbers.
    """
    import tempfile

    openvino = import_openvino()
    with tempfile.TemporaryDirectory(prefix="claim-verifier-ov-") as folder:
        path = os.path.join(folder, "model.xml")
        openvino.save_model(graph, path, compress_to_fp16=True)
        core.set_property({"ENABLE_MMAP": False})  # read the weights into memory: nothing points into the folder
        return core.read_model(path)


def compile_onnx(
    model: Union[bytes, "str | os.PathLike[str]"],
    *,
    precision: str = "bf16",
    threads: Optional[int] = None,
    where: str = "<model bytes>",
    capabilities: Optional[CpuCapabilities] = None,
) -> OpenVinoSession:
    """Read an ONNX graph with OpenVINO and compile it for the CPU at ``precision``.

    Args:
        model: the verified ONNX file (a path or ``/proc/self/fd/N`` name) or its bytes.
        precision: ``"bf16"`` or ``"f32"`` (:data:`INFERENCE_PRECISIONS`).
        threads: ``INFERENCE_NUM_THREADS`` (``None``: OpenVINO's default, one per core).
        where: how to name the model in messages.
        capabilities: this CPU's (default: :func:`cpu_capabilities`).

    Raises:
        ClaimVerificationError: OpenVINO is not installed, the CPU cannot run ``precision``
            (:func:`check_precision`), or OpenVINO cannot read or compile the graph.
    """
    core = _core()
    check_precision(precision, capabilities if capabilities is not None else cpu_capabilities())
    try:
        graph = core.read_model(model if isinstance(model, bytes) else os.fspath(model))
        if precision == "bf16":
            graph = fp16_weights(core, graph)
        compiled = core.compile_model(graph, "CPU", _properties(precision, threads))
    except Exception as exc:  # OpenVINO raises RuntimeError and its own subclasses
        raise ClaimVerificationError(f"OpenVINO cannot compile {where}: {' '.join(str(exc).split())[:2000]}") from exc
    return OpenVinoSession(compiled, precision=precision, origin="onnx")


def import_compiled(
    model: Union[bytes, np.ndarray, "str | os.PathLike[str]"],
    *,
    precision: str = "bf16",
    threads: Optional[int] = None,
    where: str = "<compiled model>",
    capabilities: Optional[CpuCapabilities] = None,
) -> OpenVinoSession:
    """Import a compiled model that :func:`export_compiled` wrote (same OpenVINO version and CPU only).

    Args:
        model: the compiled file: a path, its bytes, or a writable uint8 buffer from
            :func:`read_buffer` (used in place and kept with the session).
        precision: the precision it must have been compiled for.
        threads: ``INFERENCE_NUM_THREADS`` (``None``: as compiled).
        where: how to name the file in messages.
        capabilities: this CPU's (default: :func:`cpu_capabilities`).

    Raises:
        ClaimVerificationError: OpenVINO is not installed, the CPU cannot run ``precision``,
            OpenVINO cannot import the file, or the imported model runs at another precision.
    """
    core = _core()
    check_precision(precision, capabilities if capabilities is not None else cpu_capabilities())
    openvino = import_openvino()

    properties = {} if threads is None else {"INFERENCE_NUM_THREADS": int(threads)}
    # OpenVINO imports from a tensor over our private buffer without copying it again and keeps
    # pointing into it, so the buffer lives as long as the session (never a file mapping: a later
    # write to the file would change a running model).
    buffer = model if isinstance(model, np.ndarray) else read_buffer(model)
    try:
        compiled = core.import_model(openvino.Tensor(buffer, shared_memory=True), "CPU", properties)
        hint = compiled.get_property("INFERENCE_PRECISION_HINT")
        actual = str(hint.get_type_name() if hasattr(hint, "get_type_name") else hint)
    except Exception as exc:  # OpenVINO raises RuntimeError and its own subclasses
        raise ClaimVerificationError(f"OpenVINO cannot import {where}: {' '.join(str(exc).split())[:500]}") from exc
    if actual != precision:
        raise ClaimVerificationError(f"{where} was compiled for inference precision {actual}, not {precision}")
    session = OpenVinoSession(compiled, precision=precision, origin="compiled")
    session.keep_alive = buffer
    return session


def export_compiled(session: OpenVinoSession) -> bytes:
    """The compiled model as OpenVINO exports it (``CompiledModel.export_model``), for the variant file."""
    exported = session.compiled.export_model()
    return bytes(exported.getvalue() if hasattr(exported, "getvalue") else exported)
