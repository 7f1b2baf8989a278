"""The duck-typed PRME ``MemoryBundle`` adapter (verifier/decision/packed.py; issue 33, findings 4 and 6): ids compared
as UUIDs whatever their type, unresolvable citations refused, every malformed part a TypeError naming it, bytes refused,
and ``max_evidence`` / ``max_bundle_candidates`` counted while the candidates are read."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace
from typing import Any, Iterator
from uuid import UUID

import pydantic
import pytest

from verifier import ClaimVerifier, ScriptedScorer
from verifier.decision.bundle import ContextBundle, bundle_evidence
from verifier.options import InputLimits, RuntimeOptions
from verifier.validation import InputError

ID1 = UUID("11111111-1111-4111-8111-111111111111")
ID2 = UUID("22222222-2222-4222-8222-222222222222")
CONTEXT = "[m1] The launch is Tuesday.\n[m2] The launch moved to Wednesday."
EXPECTED = [("m1", ID1, "The launch is Tuesday."), ("m2", ID2, "The launch moved to Wednesday.")]


def _node(memory_id: Any) -> SimpleNamespace:
    return SimpleNamespace(id=memory_id, source_type=None, epistemic_type=None, lifecycle_state=None,
                           event_time=None, valid_from=None, valid_to=None)


def _bundle(sections: Any, references: Any, context: str = CONTEXT) -> SimpleNamespace:
    """An object with PRME's MemoryBundle interface, built without prme."""
    return SimpleNamespace(sections=sections, context_references=references, render=lambda: context,
                           ensure_citable=lambda: None)


def _candidates(node_ids: tuple[Any, Any]) -> list[SimpleNamespace]:
    return [SimpleNamespace(node=_node(node_ids[0]), rendered_text="The launch is Tuesday."),
            SimpleNamespace(node=_node(node_ids[1]), rendered_text="The launch moved to Wednesday.")]


def _evidence(bundle: Any, **kwargs: Any) -> list[tuple[str, UUID, str]]:
    return [(e.reference, e.memory_id, e.text) for e in bundle_evidence(bundle, **kwargs)]


@pytest.mark.parametrize("node_ids", [(ID1, ID2), (str(ID1), str(ID2)), (str(ID1).upper(), ID2)])
@pytest.mark.parametrize("reference_ids", [(ID1, ID2), (str(ID1), str(ID2))])
def test_ids_are_compared_as_uuids_whatever_their_python_type(node_ids: tuple[Any, Any],
                                                                reference_ids: tuple[Any, Any]) -> None:
    """Regression (issue 33, finding 4): context_references holding UUID strings (what json.load gives) or a node.id
    that is a string while the references are UUIDs dropped every candidate: insufficient, 0 passages, no error."""
    references = {"m1": reference_ids[0], "m2": reference_ids[1]}
    bundle = _bundle({"facts": _candidates(node_ids)}, references)
    assert _evidence(bundle) == EXPECTED
    verifier = ClaimVerifier(scorer=ScriptedScorer(default=(0.1, 0.1)))
    result = verifier.verify_bundle_sync("The launch is on Tuesday.", bundle)
    assert [list(group.references) for group in result.group_scores][:2] == [["m1"], ["m2"]]


def test_a_cited_reference_whose_memory_no_candidate_carries_is_refused() -> None:
    """Regression (issue 33, finding 4): a citation that resolves to no candidate was dropped silently."""
    other = UUID("99999999-9999-4999-8999-999999999999")
    bundle = _bundle({"facts": _candidates((ID1, ID2))}, {"m1": ID1, "m2": other})
    with pytest.raises(ValueError, match=re.escape(f"cites references whose memory no candidate carries: 'm2' -> {other}")):
        bundle_evidence(bundle)
    # an uncited reference to a memory that is not packed is PRME's business as before
    assert _evidence(_bundle({"facts": _candidates((ID1, ID2))}, {"m1": ID1, "m2": ID2, "m9": other})) == EXPECTED


class _Unhashable:
    __hash__ = None  # type: ignore[assignment]


@pytest.mark.parametrize(
    ("sections", "references", "where"),
    [
        ({"facts": "[m1] The launch is Tuesday."}, {"m1": ID1}, "sections['facts'] must be a sequence of candidates, got str"),
        ({"facts": [SimpleNamespace(rendered_text="x")]}, {"m1": ID1}, "sections['facts'][0] (SimpleNamespace) has no .node"),
        ({"facts": [SimpleNamespace(node=SimpleNamespace(), rendered_text="x")]}, {}, "sections['facts'][0].node has no .id"),
        ({"facts": [SimpleNamespace(node=_node(["not", "hashable"]), rendered_text="x")]}, {},
         "sections['facts'][0].node.id must be a UUID or the string of one, got list"),
        ({"facts": [SimpleNamespace(node=_node(_Unhashable()), rendered_text="x")]}, {},
         "sections['facts'][0].node.id must be a UUID or the string of one, got _Unhashable"),
        ({"facts": [SimpleNamespace(node=_node("m1-not-a-uuid"), rendered_text="x")]}, {},
         "sections['facts'][0].node.id is not a UUID: 'm1-not-a-uuid'"),
        ({"facts": [SimpleNamespace(node=_node(ID1))]}, {"m1": ID1}, "sections['facts'][0] has no .rendered_text"),
        ({"facts": [SimpleNamespace(node=_node(ID1), rendered_text=b"The launch is Tuesday.")]}, {"m1": ID1},
         "sections['facts'][0].rendered_text must be a str or None, got bytes"),
        ({"facts": _candidates((ID1, ID2))}, {5: ID1}, "context_references key 5 must be a str"),
        ({"facts": _candidates((ID1, ID2))}, {"m1": 5}, "context_references['m1'] must be a UUID or the string of one, got int"),
        (["facts"], {"m1": ID1}, "sections must be a mapping, got list"),
        ({"facts": _candidates((ID1, ID2))}, [("m1", ID1)], "context_references must be a mapping, got list"),
    ],
)
def test_every_malformed_part_is_a_type_error_naming_it(sections: Any, references: Any, where: str) -> None:
    """Regression (issue 33, finding 4): these gave a raw AttributeError, ``unhashable type: 'list'``, ``argument of
    type 'int' is not iterable``, or (bytes) were decoded silently. Each is now a TypeError (and the InputError every
    bad input raises) naming the part."""
    bundle = _bundle(sections, references)
    with pytest.raises(TypeError, match=re.escape(f"MemoryBundle {where}")) as caught:
        bundle_evidence(bundle)
    assert isinstance(caught.value, InputError) and caught.value.field.startswith("bundle.")  # type: ignore[union-attr]
    with pytest.raises(InputError, match=re.escape(where)):
        ClaimVerifier(scorer=ScriptedScorer(default=(0.1, 0.1))).verify_bundle_sync("The launch is Tuesday.", bundle)


def test_rendered_text_as_bytes_is_refused_in_a_dump_and_a_context_bundle_mapping() -> None:
    """A mapping built in Python may carry bytes; pydantic's lax mode decoded them. Now refused, never decoded."""
    dump = {"sections": {"facts": [{"node": {"id": str(ID1)}, "rendered_text": b"The launch is Tuesday."}]},
            "rendered_context": "[m1] The launch is Tuesday.", "context_references": {"m1": str(ID1)}}
    with pytest.raises(pydantic.ValidationError, match="rendered_text"):
        bundle_evidence(dump)
    mapping = {"rendered_context": "[M1] x", "candidates": [{"reference": "M1", "memory_id": str(ID1), "rendered_text": b"x"}]}
    with pytest.raises(pydantic.ValidationError, match="rendered_text"):
        bundle_evidence(mapping)
    assert len(bundle_evidence(json.loads(json.dumps({**dump, "sections": {"facts": [
        {"node": {"id": str(ID1)}, "rendered_text": "The launch is Tuesday."}]}})))) == 1


class _Counted:
    """A generator of candidates that counts how many were taken from it."""

    def __init__(self, count: int, *, cited: bool) -> None:
        self.count, self.cited, self.taken = count, cited, 0

    def __iter__(self) -> Iterator[SimpleNamespace]:
        for number in range(self.count):
            self.taken += 1
            yield SimpleNamespace(node=_node(UUID(int=number + 1)), rendered_text=f"passage {number}")

    def references(self) -> dict[str, UUID]:
        return {f"r{n}": UUID(int=n + 1) for n in range(min(self.count, 200))} if self.cited else {}

    def context(self) -> str:
        return " ".join(f"[r{n}]" for n in range(min(self.count, 200))) if self.cited else "nothing cited here"


def test_a_generator_of_3_million_uncited_candidates_stops_at_the_candidate_limit() -> None:
    """Regression (issue 33, finding 6): a caller's generator of 3 million uncited candidates was read to its end
    (23 s). The verifier reads at most ``InputLimits.max_bundle_candidates`` (default 10,000) candidates + 1."""
    section = _Counted(3_000_000, cited=False)
    bundle = _bundle({"facts": section}, {})
    verifier = ClaimVerifier(scorer=ScriptedScorer(default=(0.1, 0.1)))
    with pytest.raises(InputError, match=re.escape("more than max_bundle_candidates=10000")):
        verifier.verify_bundle_sync("The launch is Tuesday.", bundle)
    assert section.taken == InputLimits().max_bundle_candidates + 1
    small = ClaimVerifier(scorer=ScriptedScorer(default=(0.1, 0.1)),
                          runtime=RuntimeOptions(limits=InputLimits(max_bundle_candidates=50)))
    again = _Counted(3_000_000, cited=False)
    with pytest.raises(InputError, match=re.escape("more than max_bundle_candidates=50")):
        small.verify_bundle_sync("The launch is Tuesday.", _bundle({"facts": again}, {}))
    assert again.taken == 51


def test_max_evidence_is_counted_while_candidates_are_read() -> None:
    """Regression (issue 33, finding 6): every passage was built before a max_evidence refusal. Passages are now
    counted as they are built: the refusal comes at passage max_evidence + 1, the rest is never read."""
    section = _Counted(200, cited=True)
    bundle = _bundle({"facts": section}, section.references(), context=section.context())
    with pytest.raises(ValueError, match=re.escape("evidence count exceeds configured maximum 3: the bundle yields 4 or more")):
        bundle_evidence(bundle, max_evidence=3)
    assert section.taken == 4
    # evidence_refs select: the limit applies to the selection, as PRME's; all 200 are read, 2 selected
    section = _Counted(200, cited=True)
    bundle = _bundle({"facts": section}, section.references(), context=section.context())
    assert [e.reference for e in bundle_evidence(bundle, ["r7", "r3"], max_evidence=3)] == ["r7", "r3"]
    refs = iter(["r1", "r2", "r3", "r4", "r5"] + ["never read"] * 10)
    section = _Counted(200, cited=True)
    bundle = _bundle({"facts": section}, section.references(), context=section.context())
    with pytest.raises(ValueError, match=re.escape("evidence count exceeds configured maximum 3")):
        bundle_evidence(bundle, refs, max_evidence=3)
    assert next(refs) == "r5"  # the selection stopped at the fourth reference


def test_a_context_bundle_over_max_evidence_is_refused_with_the_limit() -> None:
    """The general path (a ContextBundle): the refusal names the limit the server reports (``max_evidence=N``)."""
    from verifier.decision.bundle import BundleCandidate

    candidates = tuple(BundleCandidate(reference=f"M{i}", memory_id=UUID(int=i + 1), rendered_text=f"text {i}")
                       for i in range(300))
    bundle = ContextBundle(rendered_context=" ".join(f"[M{i}]" for i in range(300)), candidates=candidates)
    with pytest.raises(InputError, match=re.escape("yields 65 or more passages, more than max_evidence=64")):
        bundle_evidence(bundle, max_evidence=64)
    assert len(bundle_evidence(bundle)) == 300
