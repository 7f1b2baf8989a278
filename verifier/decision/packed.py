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

Memory ids are compared as UUIDs whatever their Python type (a ``UUID`` or the
string of one: what ``json.load`` gives), so a duck-typed bundle whose ids are
strings on one side and UUIDs on the other loses nothing. Candidates are read
lazily (a section may be any iterable, a generator included), so the reader
can stop at a limit; every malformed part is a :class:`BundleTypeError` naming it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, Iterable, Iterator, Literal, Mapping, Optional
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from ..types import EpistemicType, LifecycleState, SourceType
from ..validation import InputError

__all__ = [
    "PackedCandidate", "Packed", "MemoryBundleRecord", "BundleTypeError", "is_memory_bundle", "read_memory_bundle",
]


class BundleTypeError(InputError, TypeError):
    """A bundle, or a part of one, of the wrong kind; ``field`` names it (``bundle``, ``bundle.sections.facts.0.node``).

    Both a ``TypeError`` (what Python raises for an argument of the wrong type) and an
    :class:`~verifier.validation.InputError`, the ``ValueError`` every other bad input raises
    (docs/decision.md §2), so either ``except`` catches it.
    """

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
        candidates: in bundle order (sections in order, then candidates); a tuple for a
            :class:`ContextBundle`, read lazily (once) for a ``MemoryBundle``.
        require_citations: the project's own rule for :class:`ContextBundle`: a
            bundle whose candidates are all uncited was rendered without
            citations (a ``MemoryBundle`` has ``ensure_citable`` instead).
        references: a ``MemoryBundle``'s ``context_references`` (reference → memory id as a
            UUID); a cited one that no candidate carries is refused by the reader.
    """

    context: str
    candidates: Iterable[PackedCandidate]
    require_citations: bool
    references: Mapping[str, UUID] = field(default_factory=dict)


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
    rendered_text: Annotated[Optional[str], Field(strict=True)] = None  # strict: bytes are refused, never decoded


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


_MISSING = object()


def _malformed(where: str, problem: str) -> BundleTypeError:
    dotted = "bundle." + where.replace("][", ".").replace("[", ".").replace("]", "").replace("'", "")
    return BundleTypeError(f"MemoryBundle {where} {problem}", field=dotted)


def _uuid(value: Any, where: str) -> UUID:
    """``value`` (a UUID, or the string of one) as a UUID; anything else is a :class:`BundleTypeError` naming ``where``."""
    if isinstance(value, UUID):
        return value
    if isinstance(value, str):
        try:
            return UUID(value)
        except ValueError:
            raise _malformed(where, f"is not a UUID: {value[:80]!r}") from None
    raise _malformed(where, f"must be a UUID or the string of one, got {type(value).__name__}")


def _candidates(sections: Any, reference_by_id: Mapping[UUID, str]) -> Iterator[PackedCandidate]:
    """The candidates of ``sections`` in order, read one at a time (so a caller may stop reading)."""
    for name, section in sections.items():
        where = f"sections[{name!r}]"
        if isinstance(section, (str, bytes, bytearray, Mapping)) or not isinstance(section, Iterable):
            raise _malformed(where, f"must be a sequence of candidates, got {type(section).__name__}")
        for position, candidate in enumerate(section):
            at = f"{where}[{position}]"
            node = getattr(candidate, "node", _MISSING)
            if node is _MISSING:
                raise _malformed(at, f"({type(candidate).__name__}) has no .node: a candidate needs .node and .rendered_text")
            raw_id = getattr(node, "id", _MISSING)
            if raw_id is _MISSING:
                raise _malformed(f"{at}.node", "has no .id (the memory's UUID)")
            memory_id = _uuid(raw_id, f"{at}.node.id")
            text = getattr(candidate, "rendered_text", _MISSING)
            if text is _MISSING:
                raise _malformed(at, "has no .rendered_text (a str, or None when packing left it out)")
            if text is not None and not isinstance(text, str):
                raise _malformed(f"{at}.rendered_text", f"must be a str or None, got {type(text).__name__}")
            yield PackedCandidate(
                reference=reference_by_id.get(memory_id, str(raw_id)),
                memory_id=memory_id,
                rendered_text=text,
                source_type=_plain(getattr(node, "source_type", None)),
                epistemic_type=_plain(getattr(node, "epistemic_type", None)),
                lifecycle_state=_plain(getattr(node, "lifecycle_state", None)),
                event_time=getattr(node, "event_time", None),
                valid_from=getattr(node, "valid_from", None),
                valid_to=getattr(node, "valid_to", None),
            )


def read_memory_bundle(bundle: Any) -> Packed:
    """A ``MemoryBundle`` (or :class:`MemoryBundleRecord`) as :class:`Packed`, read as PRME reads it.

    The candidates are read lazily, when :attr:`Packed.candidates` is iterated (once).

    Raises:
        ValueError: ``ensure_citable()`` refuses the bundle (reader format
            without citation references).
        BundleTypeError (a ``TypeError`` and a ``ValueError``) naming the part: ``render()`` gives no
            str, ``sections`` or ``context_references`` is not a mapping, a reference is not a str or
            its memory id not a UUID (or the string of one); while the candidates are read: a section
            that is a string, mapping or not iterable, a candidate without ``.node``, ``.node.id`` or
            ``.rendered_text``, a ``node.id`` that is not a UUID, a ``rendered_text`` that is not a str
            or ``None`` (bytes are never decoded).
    """
    bundle.ensure_citable()
    context = bundle.render()
    if not isinstance(context, str):
        raise BundleTypeError(
            f"MemoryBundle.render() returned {type(context).__name__}, not the rendered context string", field="bundle"
        )
    references = bundle.context_references
    sections = bundle.sections
    for name, value, needs in (("context_references", references, "items"), ("sections", sections, "items")):
        if not callable(getattr(value, needs, None)):
            raise BundleTypeError(f"MemoryBundle {name} must be a mapping, got {type(value).__name__}",
                                  field=f"bundle.{name}")
    by_reference: dict[str, UUID] = {}
    reference_by_id: dict[UUID, str] = {}
    for reference, memory_id in references.items():
        if not isinstance(reference, str):
            raise BundleTypeError(
                f"MemoryBundle context_references key {reference!r} must be a str (the reference the context cites), "
                f"got {type(reference).__name__}", field="bundle.context_references",
            )
        uuid = _uuid(memory_id, f"context_references[{reference!r}]")
        by_reference[reference] = uuid
        reference_by_id[uuid] = reference  # the last key naming a memory wins, as in PRME
    return Packed(context=context, candidates=_candidates(sections, reference_by_id), require_citations=False,
                  references=by_reference)
