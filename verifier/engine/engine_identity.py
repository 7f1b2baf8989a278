"""Computing an engine's identity from a verified model directory and its settings (docs/audit.md, "Engine identity").

:func:`engine_identity` is called once when a model loads
(:class:`verifier.engine.handle.ModelHandle`) and, without loading anything heavy,
wherever a process must know which engine a directory and settings make before it
runs one: the Ray driver comparing its workers (:mod:`verifier.cluster_identity`),
``check --rescore`` choosing the engine a record names. Both ways give the same
identity: nothing in it comes from the session once built.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

from ..engine_identity import EngineIdentity, GroundingParts
from ..types import ClaimVerificationError
from .manifest import TOKENIZER_NAME, Manifest
from .ov_session import OPENVINO_PROVIDER, openvino_version
from .session import DEFAULT_PROVIDERS

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..options import RuntimeOptions
    from .model_directory import ModelDirectory

__all__ = ["grounding_parts", "float32_graph", "precision_of", "runtime_of", "runtime_version", "engine_identity", "identity_for_options",
           "identity_for_directory"]


def float32_graph(manifest: Manifest, variant: Optional[str]) -> bool:
    """Whether ``variant`` is a float32 onnxruntime graph: the export's own ``model_file`` (``None``), or a
    variant the exporter describes as float32 and not quantised (``optimized``). Its scores do not depend
    on the other pairs of a padded batch (docs/score-store.md); an int8 or OpenVINO graph's may."""
    if variant is None:
        return True
    record = manifest.variants.get(variant)
    if record is None or record.runtime != "onnxruntime":
        return False
    description = record.description.lower()
    return description.startswith("float32") and "int8" not in description and "quantiz" not in description


def precision_of(manifest: Manifest, variant: Optional[str]) -> str:
    """``"float32"``, ``"int8"`` or ``"bf16"``: what ``variant``'s arithmetic runs in, from its manifest record;
    ``"unknown"`` for a variant this package did not build whose description names none (held to no
    exactness: :attr:`~verifier.engine_identity.EngineIdentity.exact_across_batches` is false)."""
    if float32_graph(manifest, variant):
        return "float32"
    record = manifest.variants.get(variant or "")
    description = record.description.lower() if record is not None else ""
    if description.startswith(("int8", "dynamic int8")):
        return "int8"
    if record is not None and record.runtime == "openvino":
        return "bf16" if record.precision in (None, "bf16") else "float32"
    return "unknown"


def runtime_of(manifest: Manifest, variant: Optional[str], *, own_factory: bool = False) -> str:
    """``"openvino"`` for an OpenVINO variant (unless a caller's session factory builds the session), else ``"onnxruntime"``."""
    record = manifest.variants.get(variant or "") if variant is not None else None
    return "openvino" if record is not None and record.runtime == "openvino" and not own_factory else "onnxruntime"


def runtime_version(runtime: str) -> str:
    """The installed version of ``runtime`` (``"onnxruntime"`` or ``"openvino"``).

    Raises:
        ClaimVerificationError: it is not installed.
    """
    if runtime == "openvino":
        version = openvino_version()
        if version is None:
            raise ClaimVerificationError("OpenVINO is not installed: the openvino extra runs this variant")
        return version
    import onnxruntime  # type: ignore[import-untyped,unused-ignore]

    return str(onnxruntime.__version__)


def _tokenizers_version() -> str:
    import tokenizers  # type: ignore[import-untyped,unused-ignore]

    return str(tokenizers.__version__)


def engine_identity(
    directory: "ModelDirectory",
    *,
    padding: str,
    providers: Sequence[str] = DEFAULT_PROVIDERS,
    graph_optimization_level: str = "all",
    own_factory: bool = False,
) -> EngineIdentity:
    """The identity of the engine ``directory`` (opened for its variant) makes with these settings.

    Args:
        directory: a verified model directory (:meth:`verifier.engine.model_directory.ModelDirectory.open`).
        padding: ``"batched"`` or ``"none"``.
        providers: the onnxruntime execution providers asked for (an OpenVINO variant records its own).
        graph_optimization_level: onnxruntime's level (recorded for OpenVINO too: it is a setting asked for).
        own_factory: a caller's session factory builds the session (an OpenVINO variant then runs on
            onnxruntime, as :meth:`verifier.engine.loaded.LoadedModel.load` does).

    Raises:
        ClaimVerificationError: the runtime is not installed.
    """
    manifest = directory.manifest
    variant = directory.variant
    runtime = runtime_of(manifest, variant, own_factory=own_factory)
    tokenizer = manifest.files[TOKENIZER_NAME]
    return EngineIdentity.build(
        model=manifest.model,
        revision=manifest.revision,
        manifest_sha256=directory.manifest_sha256,
        variant=variant,
        graph_file=directory.model_file,
        graph_sha256=manifest.files[directory.model_file].sha256,
        tokenizer_sha256=tokenizer.sha256,
        tokenizers_version=_tokenizers_version(),
        runtime=runtime,
        runtime_version=runtime_version(runtime),
        precision=precision_of(manifest, variant),
        padding=padding,
        graph_optimization_level=graph_optimization_level,
        providers=[OPENVINO_PROVIDER] if runtime == "openvino" else list(providers),
        grounding=grounding_parts(manifest),
    )


def grounding_parts(manifest: Manifest) -> Optional[GroundingParts]:
    """How a grounding directory reads a (document, claim) pair, for its identity; ``None`` for NLI."""
    record = manifest.grounding
    if record is None:
        return None
    return GroundingParts(
        architecture=record.architecture, template=record.template, max_length=manifest.max_length,
        truncation_side=record.truncation_side, labels=manifest.labels, support_column=record.support_column,
        label_token_ids=record.label_token_ids,
    )


def identity_for_options(model_dir: Path, options: "RuntimeOptions") -> EngineIdentity:
    """The identity of the engine ``options`` would load from ``model_dir``, without loading a model.

    Opens and verifies the directory's manifest for ``options.variant`` (either model kind)
    (:meth:`~verifier.engine.model_directory.ModelDirectory.open`); the graph file itself is hashed when
    an engine loads it, which refuses one that does not match the digest named here.

    Raises:
        ClaimVerificationError: the directory cannot be opened for the variant (the message says why).
    """
    from .model_directory import ModelDirectory

    return identity_for_directory(ModelDirectory.open(model_dir, options.variant, kind=None), options)


def identity_for_directory(directory: "ModelDirectory", options: "RuntimeOptions") -> EngineIdentity:
    """:func:`identity_for_options` of a directory already opened for ``options.variant``.

    Raises:
        ClaimVerificationError: the runtime is not installed.
    """
    return engine_identity(
        directory,
        padding=options.padding,
        providers=tuple(options.providers) if options.providers is not None else DEFAULT_PROVIDERS,
        graph_optimization_level=options.graph_optimization_level,
    )
