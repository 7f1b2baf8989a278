"""What a packed bundle offers the citation rules, whatever its kind: a context string and candidates.

:func:`verifier.decision.bundle.bundle_evidence` reads every accepted kind of
bundle through :class:`Packed`:

- the project's own :class:`~verifier.decision.bundle.ContextBundle` (and its JSON);
- PRME's ``MemoryBundle`` (``prme.retrieval.models``), as
  ``MemoryEngine.retrieve(...).bundle`` returns it, read **duck-typed** — it
  must have ``sections`` (section name → candidates, each with ``node`` and
  ``rendered_text``), ``context_references`` (reference → memory id),
  ``render()`` and ``ensure_citable()`` — so ``prme`` is never imported;
- a ``MemoryBundle`` dump (``model_dump(mode="json")``, a mapping or JSON text
  with a ``sections`` key), validated as :class:`MemoryBundleRecord`, which
  renders and checks citability exactly as ``MemoryBundle`` does.

The rules read from PRME 0.15.0 (``ClaimVerifier.bundle_evidence``;
docs/compatibility.md): ``ensure_citable()`` first, then ``render()``; a
candidate's reference is its key in ``context_references`` (the last key naming
that memory), else ``str(node.id)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Optional
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from ..types import EpistemicType, LifecycleState, SourceType

__all__ = ["PackedCandidate", "Packed", "MemoryBundleRecord", "is_memory_bundle", "read_memory_bundle"]

#: The attributes that make an object a PRME ``MemoryBundle`` for :func:`read_memory_bundle`.
MEMORY_BUNDLE_ATTRIBUTES = ("sections", "context_references", "render", "ensure_citable")


@dataclass(frozen=True)
class PackedCandidate:
    """One packed candidate: its reference as the bundle names it (unstripped), memory id, rendered text, provenance."""

    reference: str
    memory_id: Any
    rendered_text: Optional[str]
    source_type: Any = None
    epistemic_type: Any = None
    lifecycle_state: Any = None
    event_time: Any = None
    valid_from: Any = None
    valid_to: Any = None


@dataclass(frozen=True)
class Packed:
    """A bundle as the citation rules see it.

    Attributes:
        context: the exact rendered context.
        candidates: in bundle order (sections in order, then candidates).
        require_citations: the project's own rule for :class:`ContextBundle`: a
            bundle whose candidates are all uncited was rendered without
            citations (a ``MemoryBundle`` has ``ensure_citable`` instead).
    """

    context: str
    candidates: tuple[PackedCandidate, ...]
    require_citations: bool


_IGNORE = ConfigDict(frozen=True, extra="ignore")


class _NodeRecord(BaseModel):
    model_config = _IGNORE

    id: UUID
    source_type: Optional[SourceType] = None
    epistemic_type: Optional[EpistemicType] = None
    lifecycle_state: Optional[LifecycleState] = None
    event_time: Optional[datetime] = None
    valid_from: Optional[datetime] = None
    valid_to: Optional[datetime] = None


class _CandidateRecord(BaseModel):
    model_config = _IGNORE

    node: _NodeRecord
    rendered_text: Optional[str] = None


class MemoryBundleRecord(BaseModel):
    """The fields of a PRME ``MemoryBundle`` dump that the citation rules read (other fields are ignored).

    ``render()`` and ``ensure_citable()`` behave as ``MemoryBundle``'s do.
    """

    model_config = _IGNORE

    sections: dict[str, list[_CandidateRecord]] = Field(default_factory=dict)
    rendered_context: str = ""
    context_format: Literal["auditable", "compact", "reader"] = "auditable"
    context_references: dict[str, UUID] = Field(default_factory=dict)

    def render(self) -> str:
        """The rendered context, as packed."""
        return self.rendered_context

    def ensure_citable(self) -> None:
        """Raise when reader-format records carry no citation references (as ``MemoryBundle.ensure_citable``).

        Raises:
            ValueError: reader format, no ``context_references``, and a non-empty section.
        """
        if self.context_format == "reader" and not self.context_references and any(self.sections.values()):
            raise ValueError(
                "This reader-format bundle has no citation references; pack it "
                "with PackingConfig(context_format='reader', context_citations=True)"
            )


def is_memory_bundle(value: object) -> bool:
    """Whether ``value`` has a PRME ``MemoryBundle``'s interface (:data:`MEMORY_BUNDLE_ATTRIBUTES`)."""
    return all(hasattr(value, name) for name in MEMORY_BUNDLE_ATTRIBUTES) and callable(
        getattr(value, "render", None)
    )


def _plain(value: Any) -> Any:
    """An enum member's value (PRME's enums are its own ``str`` enums), anything else unchanged."""
    return getattr(value, "value", value)


def read_memory_bundle(bundle: Any) -> Packed:
    """A ``MemoryBundle`` (or :class:`MemoryBundleRecord`) as :class:`Packed`, read as PRME reads it.

    Raises:
        ValueError: ``ensure_citable()`` refuses the bundle (reader format
            without citation references).
        TypeError: ``sections`` or ``context_references`` is not a mapping, or
            a candidate lacks ``node``.
    """
    bundle.ensure_citable()
    context = bundle.render()
    if not isinstance(context, str):
        raise TypeError(f"MemoryBundle.render() returned {type(context).__name__}, not the rendered context string")
    references = bundle.context_references
    sections = bundle.sections
    if not hasattr(references, "items") or not hasattr(sections, "values"):
        raise TypeError("a MemoryBundle needs mappings sections and context_references")
    reference_by_id = {memory_id: reference for reference, memory_id in references.items()}
    candidates: list[PackedCandidate] = []
    for section in sections.values():
        for candidate in section:
            node = candidate.node
            candidates.append(
                PackedCandidate(
                    reference=reference_by_id.get(node.id, str(node.id)),
                    memory_id=node.id,
                    rendered_text=candidate.rendered_text,
                    source_type=_plain(node.source_type),
                    epistemic_type=_plain(node.epistemic_type),
                    lifecycle_state=_plain(node.lifecycle_state),
                    event_time=node.event_time,
                    valid_from=node.valid_from,
                    valid_to=node.valid_to,
                )
            )
    return Packed(context=context, candidates=tuple(candidates), require_citations=False)
