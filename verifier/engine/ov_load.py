"""Loading an OpenVINO variant from a verified model directory: the compiled file, or its graph.

A ``runtime="openvino"`` variant (docs/model-directory.md) records two files,
both hashed in the manifest: ``file``, OpenVINO's exported compiled model, and
``source_file``, the ONNX graph it was compiled from. :func:`open_openvino`
imports ``file`` when it was compiled for this OpenVINO version and CPU
(:func:`verifier.engine.ov_session.compiled_fingerprint`; about 0.2 s for
DeBERTa-v3-base), else compiles ``source_file`` here (a few seconds) and logs
why. Either way the bytes OpenVINO reads are the ones hashed
(:meth:`verifier.engine.model_directory.ModelDirectory.verified_buffer`, ``verified_file``).
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Callable, Optional, TypeVar

from .ov_session import (
    CpuCapabilities,
    OpenVinoSession,
    check_precision,
    compile_onnx,
    compiled_fingerprint,
    cpu_capabilities,
    import_compiled,
)
from ..types import ClaimVerificationError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .manifest import VariantRecord
    from .model_directory import ModelDirectory

__all__ = ["open_openvino", "compiled_mismatch"]

_LOG = logging.getLogger("verifier.engine")
T = TypeVar("T")


def compiled_mismatch(record: "VariantRecord", capabilities: CpuCapabilities) -> Optional[str]:
    """Why ``record``'s compiled file cannot be imported here (``None``: it can), in words."""
    here = compiled_fingerprint(capabilities)
    made = record.compiled_for or {}
    different = [f"{key} {made.get(key) or '?'} (here {here[key] or '?'})" for key in here if made.get(key) != here[key]]
    return "compiled for " + ", ".join(different) if different else None


def open_openvino(
    directory: "ModelDirectory",
    record: "VariantRecord",
    *,
    threads: Optional[int] = None,
    alongside: Optional[Callable[[], T]] = None,
) -> "tuple[OpenVinoSession, Optional[T]]":
    """The OpenVINO session of variant ``record`` of ``directory``: its compiled file, or its graph compiled here.

    Args:
        directory: the opened, verified model directory (its variant is ``record``).
        record: the variant's manifest record (``runtime="openvino"``).
        threads: OpenVINO's ``INFERENCE_NUM_THREADS`` (``None``: one per core).
        alongside: work to run in a thread while OpenVINO imports (which holds no GIL), e.g.
            parsing the tokenizer, which holds the GIL and would otherwise stall the file's read
            and hash (docs/performance.md, "Cold start of the bf16 variant").

    Returns:
        The session, and what ``alongside`` returned (``None`` without it).

    Raises:
        ClaimVerificationError: OpenVINO is not installed; the CPU cannot run the
            variant's precision (:func:`verifier.engine.ov_session.check_precision`);
            a file does not match the manifest; the compiled file does not fit this
            CPU and no graph is recorded; OpenVINO cannot compile the graph.
        Exception: whatever ``alongside`` raised.
    """
    precision = record.precision or "bf16"
    where = str(directory.path / record.file)
    failure: Optional[ClaimVerificationError] = None
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="verifier-openvino") as pool:
        # importing openvino is Python work; the file read below releases the GIL, so they overlap
        pending = pool.submit(cpu_capabilities)
        with directory.verified_buffer(record.file) as buffer:  # read once, hashed beside the import
            capabilities = pending.result()
            check_precision(precision, capabilities)
            why = compiled_mismatch(record, capabilities)
            beside = pool.submit(alongside) if alongside is not None else None
            if why is None:
                try:
                    session = import_compiled(buffer, precision=precision, threads=threads, where=where, capabilities=capabilities)
                except ClaimVerificationError as exc:  # decided after the digest check when the block ends
                    failure = exc
            result = beside.result() if beside is not None else None
    if why is None and failure is None:
        return session, result
    if failure is not None:
        why = str(failure)
    # an import failure names the file itself; a fingerprint mismatch does not
    problem = why if failure is not None else f"{where}: {why}"
    del buffer
    if record.source_file is None:
        raise ClaimVerificationError(f"{where} cannot be used here ({why}) and the manifest records no graph to compile")
    _LOG.warning(
        "%s; compiling %s with OpenVINO here instead (slower start; re-export the variant on this machine "
        "for a fast one: docs/model-directory.md)", problem, record.source_file,
    )
    with directory.verified_file(record.source_file) as graph:
        compiled = compile_onnx(
            graph, precision=precision, threads=threads, where=str(directory.path / record.source_file), capabilities=capabilities
        )
    return compiled, result
