"""Packed context bundles (docs/decision.md §7): what a retrieval step showed a reader, and its citations.

A *bundle* is the exact context string a retrieval system rendered for a reader
(an LLM prompt, a report) together with the *candidates* it packed into that
string. Each candidate carries its reference (the citation label used in the
rendered context), its memory id, the text that was actually rendered for it
(``rendered_text``: possibly a summary or a lower-fidelity representation of the
full memory) and the same typed provenance as :class:`verifier.types.ClaimEvidence`.

JSON format (one :class:`ContextBundle`; every field name is fixed and unknown
fields are rejected)::

    {
      "rendered_context": "[M1] The launch moved to Wednesday.\\n[M2] ...",
      "candidates": [
        {
          "reference": "M1",
          "memory_id": "6f1c1f5e-3b57-4a8e-9a55-0d7c59b2f001",
          "rendered_text": "The launch moved to Wednesday.",
          "source_type": "user_stated",          # optional, SourceType value
          "epistemic_type": "asserted",          # optional, EpistemicType value
          "lifecycle_state": "stable",           # optional, LifecycleState value
          "event_time": "2026-03-02T09:30:00Z",  # optional ISO 8601
          "valid_from": null,                    # optional ISO 8601
          "valid_to": null                       # optional ISO 8601
        }
      ]
    }

Citation rules (:func:`bundle_evidence`; exactly PRME 0.15.0's, docs/compatibility.md):

* a candidate is *cited* when its reference, exactly as the bundle names it,
  occurs in ``rendered_context`` as ``"ref"`` (double-quoted, which covers a
  JSON ``"id":"ref"`` field) or ``[ref]`` (bracketed);
* only cited candidates with a ``rendered_text`` become evidence, in bundle
  order, a memory id already taken skipped; the evidence text is
  ``rendered_text`` — never hidden full text — and must be a valid passage
  text (a blank one is refused);
* a :class:`ContextBundle` that has candidates but cites none of them was
  rendered without citations: :class:`ValueError` (a PRME ``MemoryBundle``
  has its own check, ``ensure_citable``);
* ``evidence_refs`` selects evidence **in its own order**; a name that is not
  a cited candidate with rendered text is a :class:`ValueError` ("Unknown
  context reference"); a repeated name yields a repeated passage, which the
  verifier refuses as a duplicate evidence reference.

Besides :class:`ContextBundle`, :func:`bundle_evidence` accepts a mapping or
JSON text of one, PRME's ``MemoryBundle`` (duck-typed, :mod:`verifier.decision.packed`)
and a ``MemoryBundle`` dump.

Exceptions::

    TypeError                      not an accepted kind of bundle, or a malformed
                                   part of a MemoryBundle (BundleTypeError, naming it)
    ValueError
     ├── pydantic.ValidationError  malformed bundle JSON, unknown field,
     │                             repeated candidate reference, blank text,
     │                             rendered_text given as bytes
     └── ValueError                rendered without citations, unknown
                                   evidence_refs entry (both name references),
                                   a cited reference no candidate carries,
                                   over max_evidence or max_candidates

Example:
    >>> from uuid import UUID
    >>> bundle = ContextBundle(
    ...     rendered_context="[M1] The launch is Tuesday.",
    ...     candidates=(
    ...         BundleCandidate(
    ...             reference="M1",
    ...             memory_id=UUID("00000000-0000-4000-8000-000000000001"),
    ...             rendered_text="The launch is Tuesday.",
    ...         ),
    ...     ),
    ... )
    >>> [e.text for e in bundle_evidence(bundle)]
    ['The launch is Tuesday.']
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime
from typing import Annotated, Any, Iterable, Mapping, Optional
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..fields import RawReference
from ..strictjson import loads as strict_loads
from ..types import ClaimEvidence, EpistemicType, LifecycleState, SourceType
from ..validation import InputError
from .citations import CitationIndex, citation_forms, is_cited
from .packed import BundleTypeError, MemoryBundleRecord, Packed, PackedCandidate, is_memory_bundle, read_memory_bundle

__all__ = [
    "BundleCandidate",
    "ContextBundle",
    "BundleClaimRequest",
    "ACCEPTED_BUNDLES",
    "BundleTypeError",
    "packed_bundle",
    "citation_forms",
    "is_cited",
    "CitationIndex",
    "check_candidate_count",
    "bundle_evidence",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class BundleCandidate(BaseModel):
    """One memory packed into a rendered context.

    Attributes:
        reference: the citation label used for this memory in the rendered
            context, e.g. ``M1`` for ``[M1]``, kept exactly as given (the
            citation rules look for it unstripped, as PRME does; the evidence
            reference is stripped); non-blank, no NUL.
        memory_id: the memory's UUID (becomes ``ClaimEvidence.memory_id``).
        rendered_text: the text actually rendered for this memory, or ``None``
            when packing left it out (such a candidate is never evidence).
        source_type, epistemic_type, lifecycle_state: typed provenance, as in
            :class:`verifier.types.ClaimEvidence`.
        event_time, valid_from, valid_to: optional timestamps, as in
            :class:`verifier.types.ClaimEvidence`.
    """

    model_config = _FROZEN

    reference: RawReference
    memory_id: UUID
    rendered_text: Annotated[Optional[str], Field(strict=True)] = None  # strict: bytes are refused, never decoded
    source_type: Optional[SourceType] = None
    epistemic_type: Optional[EpistemicType] = None
    lifecycle_state: Optional[LifecycleState] = None
    event_time: Optional[datetime] = None
    valid_from: Optional[datetime] = None
    valid_to: Optional[datetime] = None


class ContextBundle(BaseModel):
    """A packed context: the exact rendered string and the candidates packed into it.

    Attributes:
        rendered_context: the exact context string shown to the reader; the
            citation rules look for candidate references in it.
        candidates: packed candidates in packing order (this order becomes the
            evidence order). References must be unique.

    Raises:
        pydantic.ValidationError: a malformed field, an unknown field, or a
            reference used by two candidates (the error names it).
    """

    model_config = _FROZEN

    rendered_context: str
    candidates: tuple[BundleCandidate, ...] = ()

    @model_validator(mode="after")
    def _unique_references(self) -> "ContextBundle":
        seen: set[str] = set()
        for candidate in self.candidates:
            key = candidate.reference.strip()  # the evidence reference it would become
            if key in seen:
                raise ValueError(f"candidate reference {key!r} is repeated in the bundle")
            seen.add(key)
        return self


class BundleClaimRequest(BaseModel):
    """One claim to verify against a packed bundle (one JSON Lines input row of the CLI).

    The command line reads a row with a ``bundle`` key as this model and every
    other row as :class:`verifier.types.ClaimRequest`.

    Attributes:
        id: the caller's own label (not digested).
        claim: the claim to verify.
        bundle: the packed context.
        evidence_refs: optional references narrowing the evidence (see
            :func:`bundle_evidence`).
        requires_complete_set: the claim is an exhaustive count or list (docs/decision.md §3
            step 1: ``incomplete`` without a model call).
    """

    model_config = _FROZEN

    id: Optional[str] = None
    claim: str
    bundle: ContextBundle
    evidence_refs: Optional[tuple[str, ...]] = None
    requires_complete_set: Annotated[bool, Field(strict=True)] = False


#: What :func:`bundle_evidence` and ``ClaimVerifier.verify_bundle`` accept, for error messages.
ACCEPTED_BUNDLES = (
    "a verifier ContextBundle, a mapping or JSON text in its format, "
    "a PRME MemoryBundle (MemoryEngine.retrieve(...).bundle) or its model_dump() as a mapping or JSON text"
)


def _over_candidates(max_candidates: int) -> InputError:
    return InputError(
        f"bundle has more than {max_candidates} candidates, more than max_bundle_candidates={max_candidates}",
        field="bundle",
    )


def check_candidate_count(bundle: Any, max_candidates: Optional[int]) -> None:
    """Refuse a bundle mapping (a :class:`ContextBundle`'s, or a ``MemoryBundle`` dump's) with more than
    ``max_candidates`` candidates, counted from its lists before any of them is validated (``None``: no bound).

    Anything else (a model, a live ``MemoryBundle``, a malformed mapping) passes: its candidates are counted
    while they are read (:func:`bundle_evidence`).

    Raises:
        InputError: over the limit ("more than max_bundle_candidates=N", field ``bundle``).
    """
    if max_candidates is None or not isinstance(bundle, Mapping):
        return
    candidates = bundle.get("candidates")
    if isinstance(candidates, (list, tuple)):
        count = len(candidates)
    elif "candidates" not in bundle and isinstance(bundle.get("sections"), Mapping):
        count = sum(len(section) for section in bundle["sections"].values() if isinstance(section, (list, tuple)))
    else:
        return
    if count > max_candidates:
        raise _over_candidates(max_candidates)


def packed_bundle(bundle: Any, *, max_candidates: Optional[int] = None) -> Packed:
    """Any accepted kind of bundle as the context string and candidates the citation rules read.

    ``max_candidates``: a mapping or JSON text with more candidates is refused before they are validated
    (:func:`check_candidate_count`).

    Raises:
        BundleTypeError: not an accepted kind (:data:`ACCEPTED_BUNDLES`); a ``TypeError`` and a ``ValueError``.
        ValueError: malformed JSON text (a repeated key included) or a malformed
            mapping (``pydantic.ValidationError``), or a ``MemoryBundle`` that
            ``ensure_citable()`` refuses; over ``max_candidates`` (:class:`InputError`).
    """
    if isinstance(bundle, (str, bytes, bytearray)):
        try:
            bundle = strict_loads(bundle)
        except RecursionError:
            raise ValueError("bundle JSON is nested too deeply") from None
        except json.JSONDecodeError as exc:  # a repeated key included (strictjson.DuplicateKeyError)
            raise ValueError(f"bundle is not valid JSON: {exc}") from None
    check_candidate_count(bundle, max_candidates)
    if isinstance(bundle, Mapping):
        if "sections" in bundle and "candidates" not in bundle:
            packed = read_memory_bundle(MemoryBundleRecord.model_validate(dict(bundle)))
            return replace(packed, candidates=tuple(packed.candidates))  # lists already, counted above
        bundle = ContextBundle.model_validate(dict(bundle))
    if isinstance(bundle, ContextBundle):
        return Packed(
            context=bundle.rendered_context,
            candidates=tuple(PackedCandidate(**dict(c)) for c in bundle.candidates),  # the same nine fields
            require_citations=True,
        )
    if is_memory_bundle(bundle):
        return read_memory_bundle(bundle)
    raise BundleTypeError(
        f"bundle must be {ACCEPTED_BUNDLES}; got {type(bundle).__module__}.{type(bundle).__qualname__}", field="bundle"
    )


def _too_many(max_evidence: int) -> InputError:
    return InputError(
        f"evidence count exceeds configured maximum {max_evidence}: the bundle yields {max_evidence + 1} or more "
        f"passages, more than max_evidence={max_evidence}", field="bundle",
    )


def bundle_evidence(
    bundle: Any,
    evidence_refs: Optional[Iterable[str]] = None,
    *,
    max_evidence: Optional[int] = None,
    max_candidates: Optional[int] = None,
) -> tuple[ClaimEvidence, ...]:
    """The evidence a bundle supplies for a claim (docs/decision.md §7; PRME 0.15.0's rules).

    Args:
        bundle: a :class:`ContextBundle`; a mapping or JSON text in its format;
            PRME's ``MemoryBundle`` as ``MemoryEngine.retrieve(...).bundle``
            returns it (duck-typed: ``sections``, ``context_references``,
            ``render()``, ``ensure_citable()``; ``prme`` is never imported); or a
            mapping or JSON text of a ``MemoryBundle`` dump (``model_dump(mode="json")``).
        evidence_refs: optional references selecting the evidence, **in this
            order** (PRME follows ``evidence_refs``); ``None`` uses every cited
            candidate in bundle order. A repeated reference yields a repeated
            passage, which the verifier then refuses as a duplicate evidence
            reference.
        max_evidence: refuse more passages than this ("evidence count exceeds
            configured maximum N"; the verifier passes its configuration's limit),
            counted while the candidates are read: no passage past the limit is built
            (nor, with ``evidence_refs``, any reference past it read).
        max_candidates: refuse a bundle with more candidates than this (cited or not;
            ``InputLimits.max_bundle_candidates`` when the verifier calls), counted while
            they are read, so a ``MemoryBundle`` whose sections are generators is never
            read past it. ``None``: no bound.

    Returns:
        One :class:`ClaimEvidence` per candidate, in bundle order (sections in
        order, candidates in order, a memory already taken skipped), that has a
        ``rendered_text`` and whose reference occurs in the rendered context as
        ``"ref"``, ``[ref]`` or ``"id":"ref"``. Its ``text`` is the
        candidate's ``rendered_text`` (never hidden full text); reference,
        memory id and typed provenance are copied.

    Raises:
        TypeError: ``bundle`` is none of the accepted kinds (the message lists them), or a
            part of a ``MemoryBundle`` is malformed (:class:`BundleTypeError`, naming the part:
            a section that is a string, a candidate without ``.node``, an id that is not a
            UUID, a reference key that is not a str, ``rendered_text`` given as bytes, ...), or
            an ``evidence_refs`` entry is unhashable (a list: PRME's ``TypeError`` too).
        ValueError: a ``ContextBundle`` with candidates cites none of them (it
            was rendered without citations); a ``MemoryBundle`` in reader format
            has no citation references (``ensure_citable``), or its context cites a
            reference of ``context_references`` whose memory no candidate carries; an
            ``evidence_refs`` entry is not a cited candidate ("Unknown context
            reference: REF"); a selected candidate's text is blank or has only
            invisible characters or a NUL (``pydantic.ValidationError``); more
            than ``max_evidence`` passages or ``max_candidates`` candidates.

    Example:
        >>> from uuid import UUID
        >>> c = BundleCandidate(reference="M1", memory_id=UUID(int=1), rendered_text="x y")
        >>> bundle_evidence(ContextBundle(rendered_context="x y", candidates=(c,)))
        Traceback (most recent call last):
        ...
        ValueError: bundle was rendered without citations: none of its candidate references ('M1') appears in rendered_context as "ref", [ref] or "id":"ref"
    """
    packed = packed_bundle(bundle, max_candidates=max_candidates)
    candidates: Iterable[PackedCandidate] = packed.candidates
    if isinstance(candidates, (tuple, list)):  # read already: counted before the context is scanned
        if max_candidates is not None and len(candidates) > max_candidates:
            raise _over_candidates(max_candidates)
        known = [candidate.reference for candidate in candidates]
    else:  # read lazily (a live MemoryBundle): found while read, each candidate not in context_references looked up
        known = []
    index = CitationIndex(packed.context, [*known, *packed.references])
    if packed.require_citations and isinstance(candidates, tuple) and candidates and not any(
        index.cites(c.reference) for c in candidates
    ):
        names = ", ".join(repr(candidate.reference) for candidate in candidates[:5])
        more = f" and {len(candidates) - 5} more" if len(candidates) > 5 else ""
        raise ValueError(
            "bundle was rendered without citations: none of its candidate references "
            f'({names}{more}) appears in rendered_context as "ref", [ref] or "id":"ref"'
        )
    passages = max_evidence if evidence_refs is None else None  # with evidence_refs, the selection is bounded
    evidence: list[ClaimEvidence] = []
    seen: set[UUID] = set()
    carried: set[UUID] = set()  # memory ids of every candidate read (for the context_references check)
    for read, candidate in enumerate(candidates, start=1):
        if max_candidates is not None and read > max_candidates:
            raise _over_candidates(max_candidates)
        if packed.references:
            carried.add(candidate.memory_id)
        if candidate.memory_id in seen or candidate.rendered_text is None:
            continue
        if not index.cites(candidate.reference):
            continue
        evidence.append(
            ClaimEvidence(
                reference=candidate.reference,
                memory_id=candidate.memory_id,
                text=candidate.rendered_text,
                source_type=candidate.source_type,
                epistemic_type=candidate.epistemic_type,
                lifecycle_state=candidate.lifecycle_state,
                event_time=candidate.event_time,
                valid_from=candidate.valid_from,
                valid_to=candidate.valid_to,
            )
        )
        seen.add(candidate.memory_id)
        if passages is not None and len(evidence) > passages:
            raise _too_many(passages)
    unresolved = [ref for ref, memory_id in packed.references.items() if memory_id not in carried and index.cites(ref)]
    if unresolved:
        # PRME would drop such citations silently (and with them, when ids are mistyped, every passage)
        names = ", ".join(f"{ref!r} -> {packed.references[ref]}" for ref in unresolved[:5])
        more = f" and {len(unresolved) - 5} more" if len(unresolved) > 5 else ""
        raise InputError(
            f"bundle context cites references whose memory no candidate carries: {names}{more} "
            "(context_references and sections disagree)", field="bundle.context_references",
        )
    if evidence_refs is not None:
        if isinstance(evidence_refs, (str, bytes)):
            raise ValueError("evidence_refs must be a sequence of references, not a single string")
        by_reference = {item.reference: item for item in evidence}
        selected: list[ClaimEvidence] = []
        for reference in evidence_refs:
            if not isinstance(reference, str):
                try:  # PRME looks each entry up in a dict: an unhashable one is a TypeError there too
                    hash(reference)
                except TypeError as exc:
                    raise TypeError(f"evidence_refs entry {reference!r}: {exc} (a reference is a string)") from None
            if not isinstance(reference, str) or reference not in by_reference:
                raise ValueError(
                    f"evidence_refs names no candidate of the bundle: {reference!r} "
                    f"(Unknown context reference: {reference}; only cited candidates with rendered text can be named)"
                )
            selected.append(by_reference[reference])
            if max_evidence is not None and len(selected) > max_evidence:
                raise _too_many(max_evidence)
        evidence = selected
    return tuple(evidence)
