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

Citation rules (:func:`bundle_evidence`):

* a candidate is *cited* when its reference occurs in ``rendered_context`` as
  ``"ref"`` (double-quoted, which covers a JSON ``"id":"ref"`` field),
  ``[ref]`` (bracketed), or as its JSON string literal (``json.dumps(ref)``,
  which differs from ``"ref"`` only for references containing quotes,
  backslashes or control characters);
* only cited candidates with a non-blank ``rendered_text`` become evidence, and
  the evidence text is ``rendered_text`` — never hidden full text;
* a bundle that has candidates but cites none of them was rendered without
  citations: :class:`ValueError`;
* ``evidence_refs`` narrows the evidence to the named candidates; a name that
  matches no candidate is a :class:`ValueError`; a named candidate that is not
  cited or has no rendered text is skipped like any other;
* evidence keeps the bundle's candidate order (never ``evidence_refs`` order),
  since caller order is digested (docs/audit.md).

Exceptions::

    ValueError
     ├── pydantic.ValidationError  malformed bundle JSON, unknown field,
     │                             repeated candidate reference
     └── ValueError                rendered without citations, unknown
                                   evidence_refs entry (both name references)

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
import re
from datetime import datetime
from typing import Annotated, Iterable, Optional
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from verifier.types import ClaimEvidence, EpistemicType, LifecycleState, SourceType, has_visible_text

__all__ = [
    "BundleCandidate",
    "ContextBundle",
    "BundleClaimRequest",
    "citation_forms",
    "is_cited",
    "CitationIndex",
    "bundle_evidence",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid")
_StrippedNonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class BundleCandidate(BaseModel):
    """One memory packed into a rendered context.

    Attributes:
        reference: the citation label used for this memory in the rendered
            context (stripped, non-empty), e.g. ``M1`` for ``[M1]``.
        memory_id: the memory's UUID (becomes ``ClaimEvidence.memory_id``).
        rendered_text: the text actually rendered for this memory, or ``None``
            when packing left it out (such a candidate is never evidence).
        source_type, epistemic_type, lifecycle_state: typed provenance, as in
            :class:`verifier.types.ClaimEvidence`.
        event_time, valid_from, valid_to: optional timestamps, as in
            :class:`verifier.types.ClaimEvidence`.
    """

    model_config = _FROZEN

    reference: _StrippedNonEmpty
    memory_id: UUID
    rendered_text: Optional[str] = None
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
            if candidate.reference in seen:
                raise ValueError(f"candidate reference {candidate.reference!r} is repeated in the bundle")
            seen.add(candidate.reference)
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


def citation_forms(reference: str) -> tuple[str, ...]:
    """The strings whose presence in a rendered context cites ``reference``.

    Args:
        reference: a candidate reference (already stripped).

    Returns:
        ``('"ref"', '[ref]')`` plus the JSON string literal of ``ref`` when it
        differs from ``"ref"`` (references with quotes, backslashes or control
        characters). ``"id":"ref"`` contains ``"ref"`` and needs no form of its own.
    """
    forms = [f'"{reference}"', f"[{reference}]"]
    literal = json.dumps(reference, ensure_ascii=False)
    if literal not in forms:
        forms.append(literal)
    return tuple(forms)


def is_cited(reference: str, rendered_context: str) -> bool:
    """Whether ``rendered_context`` cites ``reference`` (docs/decision.md §7).

    Args:
        reference: a candidate reference.
        rendered_context: the exact rendered context string.

    Returns:
        ``True`` when the context contains ``"ref"``, ``[ref]`` or
        ``"id":"ref"`` (see :func:`citation_forms`). Matching is exact and
        case-sensitive; a bare ``ref`` without quotes or brackets is not a citation.

    Example:
        >>> is_cited("M1", '[{"id":"M1","text":"..."}]')
        True
        >>> is_cited("M1", "[M10] text")
        False
    """
    reference = reference.strip()
    if not reference:
        return False
    return any(form in rendered_context for form in citation_forms(reference))


class CitationIndex:
    """Every citation of one rendered context, found in one pass; :meth:`cites` is :func:`is_cited`.

    A ``"ref"`` form of a reference without a double quote occurs exactly when
    ``ref`` is the text between two consecutive double quotes; a ``[ref]`` form
    of a reference without brackets occurs exactly when ``ref`` is the text of
    an innermost bracket pair. Both sets are built by one scan of the context,
    so checking thousands of candidates costs one pass over it. References with
    quotes or brackets, and those whose JSON literal differs, fall back to a
    substring search of their forms (same answer, slower).
    """

    _INNERMOST = re.compile(r"\[([^\[\]]*)\]")

    def __init__(self, rendered_context: str) -> None:
        self._context = rendered_context
        self._quoted = frozenset(rendered_context.split('"')[1:-1])
        self._bracketed = frozenset(match.group(1) for match in self._INNERMOST.finditer(rendered_context))

    def cites(self, reference: str) -> bool:
        """Whether the context cites ``reference`` (exactly :func:`is_cited`)."""
        reference = reference.strip()
        if not reference:
            return False
        plain = not any(char in reference for char in '"[]')
        if plain and json.dumps(reference, ensure_ascii=False) == f'"{reference}"':
            return reference in self._quoted or reference in self._bracketed
        return any(form in self._context for form in citation_forms(reference))


def bundle_evidence(
    bundle: ContextBundle,
    evidence_refs: Optional[Iterable[str]] = None,
    *,
    max_evidence: Optional[int] = None,
) -> tuple[ClaimEvidence, ...]:
    """The evidence a bundle supplies for a claim (docs/decision.md §7).

    Args:
        bundle: the packed context.
        evidence_refs: optional candidate references to restrict the evidence
            to (any order, repeats ignored); ``None`` uses every cited candidate.
        max_evidence: refuse more passages than this (checked before any
            passage is built; the verifier passes its configuration's limit).

    Returns:
        One :class:`ClaimEvidence` per candidate that is cited in
        ``bundle.rendered_context``, has a ``rendered_text`` with a visible
        character (:func:`verifier.types.has_visible_text`) and (if
        ``evidence_refs`` is given) is named there, in bundle order. Its
        ``text`` is the candidate's ``rendered_text``; reference, memory id and
        typed provenance are copied unchanged.

    Raises:
        ValueError: the bundle has candidates but its rendered context cites
            none of them (it was rendered without citations); an
            ``evidence_refs`` entry names no candidate of the bundle; or a
            selected candidate's ``rendered_text`` contains a NUL character; or
            more than ``max_evidence`` passages would result. The message names
            the reference(s) or the limit.

    Example:
        >>> from uuid import UUID
        >>> c = BundleCandidate(reference="M1", memory_id=UUID(int=1), rendered_text="x y")
        >>> bundle_evidence(ContextBundle(rendered_context="x y", candidates=(c,)))
        Traceback (most recent call last):
        ...
        ValueError: bundle was rendered without citations: none of its candidate references ('M1') appears in rendered_context as "ref", [ref] or "id":"ref"
    """
    candidates = bundle.candidates
    index = CitationIndex(bundle.rendered_context)
    cited = [index.cites(candidate.reference) for candidate in candidates]
    if candidates and not any(cited):
        names = ", ".join(repr(candidate.reference) for candidate in candidates[:5])
        more = f" and {len(candidates) - 5} more" if len(candidates) > 5 else ""
        raise ValueError(
            "bundle was rendered without citations: none of its candidate references "
            f'({names}{more}) appears in rendered_context as "ref", [ref] or "id":"ref"'
        )

    selected: Optional[set[str]] = None
    if evidence_refs is not None:
        if isinstance(evidence_refs, str):
            raise ValueError("evidence_refs must be a sequence of references, not a single string")
        requested = [str(ref).strip() for ref in evidence_refs]
        known = {candidate.reference for candidate in candidates}
        unknown = [ref for ref in dict.fromkeys(requested) if ref not in known]
        if unknown:
            names = ", ".join(repr(ref) for ref in unknown)
            raise ValueError(f"evidence_refs names no candidate of the bundle: {names}")
        selected = set(requested)

    chosen = [
        candidate
        for candidate, is_cited_here in zip(candidates, cited)
        if is_cited_here
        and candidate.rendered_text is not None
        and has_visible_text(candidate.rendered_text)
        and (selected is None or candidate.reference in selected)
    ]
    if max_evidence is not None and len(chosen) > max_evidence:
        raise ValueError(f"bundle yields {len(chosen)} passages, more than max_evidence={max_evidence}")
    evidence: list[ClaimEvidence] = []
    for candidate in chosen:
        text = candidate.rendered_text
        assert text is not None
        if "\x00" in text:
            raise ValueError(f"candidate {candidate.reference!r}: rendered_text must not contain a NUL character")
        evidence.append(
            ClaimEvidence(
                reference=candidate.reference,
                memory_id=candidate.memory_id,
                text=text,
                source_type=candidate.source_type,
                epistemic_type=candidate.epistemic_type,
                lifecycle_state=candidate.lifecycle_state,
                event_time=candidate.event_time,
                valid_from=candidate.valid_from,
                valid_to=candidate.valid_to,
            )
        )
    return tuple(evidence)
