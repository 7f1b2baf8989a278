"""The engine identity: which engine scored a record (docs/audit.md, "Engine identity").

One model and revision can be scored by many engines here: the export's float32
graph, an offline-optimised float32 graph, dynamic int8, OpenVINO bf16 or int8,
each on a runtime at some version, padded in batches or run one pair at a time.
Their scores differ, so a record names the one that made it. An
:class:`EngineIdentity` is computed once when a model loads
(:func:`verifier.engine.engine_identity.engine_identity`) from what decides a
pair's scores: the model directory (its ``manifest.json`` digest, which binds
every file), the graph file the variant runs and the tokenizer (their
digests), the runtime and its version, the precision, the padding layout, the
graph optimisation level and the execution providers. ``digest`` is the sha256
of the canonical JSON of every other field, so one string names the engine and
the readable parts say how two engines differ.

It is carried beside PRME's fields (``ClaimVerification.engine``), left out of
every digest PRME computes (a result's ``result_sha256`` is unchanged) and
covered by a record's signature. It is the statement of whoever wrote the
record: ``check`` recomputes ``digest`` from the parts, a signature ties it to a
key, and only ``check --rescore`` ties the scores to the files.

This module imports nothing heavy: :mod:`verifier.types` uses it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any, Literal, Mapping, Optional, Sequence

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, StringConstraints, model_serializer

__all__ = ["ENGINE_IDENTITY_FORMAT", "SCORE_FIELDS", "RUN_FIELDS", "GroundingParts", "EngineIdentity", "identity_digest"]

#: Version of the identity's field set (``format``); a new field means a new format.
ENGINE_IDENTITY_FORMAT: Literal[1] = 1

_Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
#: Any non-empty string: a local export's ``model`` is the directory as given (any length, any script).
_Name = Annotated[str, StringConstraints(min_length=1)]

#: The parts that decide a pair's scores wherever the engine runs: two engines that agree on these
#: give the same scores on one CPU (exactly, for a float32 graph or ``padding="none"``), whatever
#: else of their directories differs (a variant added later rewrites ``manifest.json``, not a score).
#: ``runtime_version``, ``tokenizers_version`` and ``padding`` are compared separately (``check --rescore``:
#: docs/audit.md).
SCORE_FIELDS: tuple[str, ...] = (
    "model", "revision", "variant", "graph_file", "graph_sha256", "tokenizer_sha256",
    "runtime", "precision", "graph_optimization_level", "providers", "grounding",
)


#: The parts two runs must share for their outputs to be one engine's: the score-deciding parts, the padding
#: layout and the libraries' versions. Not the manifest's digest: a variant added to the directory since, or
#: parity figures re-recorded, change it and no score (``verify --resume``, a Ray job's nodes).
RUN_FIELDS: tuple[str, ...] = (*SCORE_FIELDS, "padding", "runtime_version", "tokenizers_version")


def identity_digest(parts: Mapping[str, Any]) -> str:
    """sha256 (hex) of the canonical JSON (sorted keys, no spaces, UTF-8) of ``parts`` without ``digest``.

    Raises:
        ValueError: a part is NaN or infinite (never, for the fields of :class:`EngineIdentity`).
    """
    body = {key: value for key, value in parts.items() if key != "digest"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class GroundingParts(BaseModel):
    """What makes a grounding engine read a (document, claim) pair as it does (docs/grounding.md).

    Attributes:
        kind: ``"grounding"``.
        architecture: ``"sequence-classification"`` or ``"label-tokens"`` (MiniCheck-Flan-T5).
        template: the text the model reads, ``{document}`` and ``{claim}`` filled in.
        max_length: truncation length of the rendered text in tokens, special tokens included.
        truncation_side: ``"right"``.
        labels: the logit columns' names; ``support_column`` is ``"supported"``.
        support_column: the column P(support) is read from.
        label_token_ids: the two vocabulary ids read by a ``label-tokens`` graph, else ``None``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["grounding"] = "grounding"
    architecture: Literal["sequence-classification", "label-tokens"]
    template: _Name
    max_length: int
    truncation_side: Literal["right"]
    labels: tuple[_Name, ...]
    support_column: int
    label_token_ids: Optional[tuple[int, int]] = None


class EngineIdentity(BaseModel):
    """Which engine scored a record: readable parts and one digest over them (docs/audit.md, "Engine identity").

    Attributes:
        format: :data:`ENGINE_IDENTITY_FORMAT`.
        digest: :func:`identity_digest` of every other field (64 lower-case hex).
        model: the hub id the model directory's manifest names.
        revision: the manifest's revision (requested, else resolved, else ``sha256:<model file>``).
        manifest_sha256: sha256 of the directory's ``manifest.json`` as loaded (it records every
            file's sha256 and size, so it binds the whole directory).
        variant: the manifest variant that ran (``None``: the export's own float32 ``model_file``).
        graph_file: the file that ran (an ONNX graph, or OpenVINO's compiled model).
        graph_sha256: its sha256, as the manifest records it and the load verified it.
        tokenizer_sha256: ``tokenizer.json``'s sha256.
        tokenizers_version: the version of the ``tokenizers`` library that reads it.
        runtime: the kernel library: ``"onnxruntime"`` or ``"openvino"``.
        runtime_version: that library's version string.
        precision: ``"float32"``, ``"int8"`` or ``"bf16"`` (what the arithmetic runs in); ``"unknown"``
            for a variant this package did not build whose manifest description names none.
        padding: ``"batched"`` (length-sorted padded batches) or ``"none"`` (each pair alone).
        graph_optimization_level: onnxruntime's graph optimisation level the session was built with.
        providers: the execution providers asked for, in priority order (``["OpenVINO:CPU"]`` for
            an OpenVINO variant).
        grounding: for a grounding model: how it reads a (document, claim) pair
            (:class:`GroundingParts`); ``None`` -- and absent from the JSON, so every NLI identity and
            its digest are as before -- for the three-label NLI model.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", protected_namespaces=())

    format: Literal[1] = ENGINE_IDENTITY_FORMAT
    digest: _Sha256
    model: _Name
    revision: _Name
    manifest_sha256: _Sha256
    variant: Optional[_Name] = None
    graph_file: _Name
    graph_sha256: _Sha256
    tokenizer_sha256: _Sha256
    tokenizers_version: _Name
    runtime: Literal["onnxruntime", "openvino"]
    runtime_version: _Name
    precision: Literal["float32", "int8", "bf16", "unknown"]
    padding: Literal["batched", "none"]
    graph_optimization_level: _Name
    providers: tuple[_Name, ...]
    grounding: Optional[GroundingParts] = None

    @model_serializer(mode="wrap")
    def _nli_as_before(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # An NLI identity's JSON and digest stay what they were before grounding models existed.
        data: dict[str, Any] = handler(self)
        if self.grounding is None:
            data.pop("grounding", None)
        return data

    @classmethod
    def build(cls, **parts: Any) -> "EngineIdentity":
        """The identity of ``parts`` (every field but ``digest``), with its digest computed.

        Raises:
            pydantic.ValidationError: a part is missing or out of its limits (names the field).
        """
        shaped = cls.model_validate({**parts, "digest": "0" * 64}).model_dump(mode="json")
        return cls.model_validate({**shaped, "digest": identity_digest(shaped)})

    @property
    def digest_matches(self) -> bool:
        """Whether ``digest`` is the digest of the parts as they stand (an edited part without it is not)."""
        return identity_digest(self.model_dump(mode="json")) == self.digest

    @property
    def exact_across_batches(self) -> bool:
        """Whether a pair's scores do not depend on the other pairs of its call: a float32
        onnxruntime graph (but MiniCheck-Flan-T5's label-token graph), or any graph run one pair at a time
        (``padding="none"``; docs/serving.md, docs/grounding.md)."""
        if self.padding == "none":
            return True
        # MiniCheck-Flan-T5's label-token graph moved a pair by ~1e-6 between a padded batch and alone (measured).
        label_tokens = self.grounding is not None and self.grounding.architecture == "label-tokens"
        return self.runtime == "onnxruntime" and self.precision == "float32" and not label_tokens

    def describe(self) -> str:
        """One line for people: ``variant int8 (model.int8.onnx, int8) on onnxruntime 1.22.0, batched, engine 1a2b3c4d5e6f``."""
        variant = f"variant {self.variant}" if self.variant else "the float32 export"
        kind = "grounding model, " if self.grounding is not None else ""
        return (
            f"{kind}{variant} ({self.graph_file}, {self.precision}) on {self.runtime} {self.runtime_version}, "
            f"padding {self.padding}, engine {self.digest[:12]}"
        )

    def differences(self, other: "EngineIdentity", fields: Optional[Sequence[str]] = None) -> list[str]:
        """``"name: mine != other's"`` for each part of ``fields`` (default: every part) that differs."""
        names = fields if fields is not None else [name for name in type(self).model_fields if name != "digest"]
        found = []
        for name in names:
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine != theirs:
                shown = [list(value) if isinstance(value, tuple) else value for value in (mine, theirs)]
                found.append(f"{name} {shown[0]!r} != {shown[1]!r}")
        return found

