"""Packed context bundles (docs/decision.md §7): the model, the citation rules and JSON round trips."""

from __future__ import annotations

import doctest
import re
from datetime import datetime, timezone
from unittest.mock import MagicMock, Mock
from uuid import UUID

import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

import verifier.decision.bundle
from verifier.decision.bundle import (
    CitationIndex,
    BundleCandidate,
    BundleClaimRequest,
    ContextBundle,
    bundle_evidence,
    citation_forms,
    is_cited,
)
from verifier import ClaimVerificationError, ClaimVerifier, ScriptedScorer
from verifier.types import ClaimEvidence, EpistemicType, LifecycleState, SourceType, has_visible_text
from verifier.validation import InputError

ID1 = UUID("11111111-1111-4111-8111-111111111111")
ID2 = UUID("22222222-2222-4222-8222-222222222222")
ID3 = UUID("33333333-3333-4333-8333-333333333333")
ID4 = UUID("44444444-4444-4444-8444-444444444444")


def candidate(reference: str, memory_id: UUID, text: str | None, **provenance: object) -> BundleCandidate:
    return BundleCandidate(reference=reference, memory_id=memory_id, rendered_text=text, **provenance)  # type: ignore[arg-type]


# ---------------------------------------------------------------- is_cited


@pytest.mark.parametrize(
    ("reference", "context", "expected"),
    [
        ("M1", "[M1] The launch is Tuesday.", True),
        ("M1", 'Sources: "M1" says the launch is Tuesday.', True),
        ("M1", '[{"id":"M1","text":"The launch is Tuesday."}]', True),
        ("M1", '[{"id": "M1", "text": "The launch is Tuesday."}]', True),
        ("mem-7", "see [mem-7] and [mem-8]", True),
        # Not citations: bare, different case, a longer label, single quotes, parentheses.
        ("M1", "M1: The launch is Tuesday.", False),
        ("M1", "[m1] The launch is Tuesday.", False),
        ("M1", "[M10] The launch is Tuesday.", False),
        ("M1", '"M10" says so', False),
        ("M1", "'M1' says so", False),
        ("M1", "(M1) says so", False),
        ("M1", "", False),
    ],
)
def test_is_cited_forms(reference: str, context: str, expected: bool) -> None:
    assert is_cited(reference, context) is expected


def test_citation_forms_are_the_references_three() -> None:
    """Issue 22: PRME 0.15.0 cites by ``"ref"``, ``[ref]`` or ``"id":"ref"`` only, the reference exactly as the
    bundle names it: no JSON-escaped form (it cited where PRME does not) and no stripping."""
    assert citation_forms('a"b') == ('"a"b"', '[a"b]', '"id":"a"b"')
    assert not is_cited('a"b', '{"id":"a\\"b"}')
    assert citation_forms("M1") == ('"M1"', "[M1]", '"id":"M1"')
    assert is_cited("  ", "[  ]") and not is_cited(" M1", "[M1]")


# ---------------------------------------------------------------- bundle_evidence rules


def test_uses_rendered_text_and_copies_provenance_in_bundle_order() -> None:
    when = datetime(2026, 3, 2, 9, 30, tzinfo=timezone.utc)
    bundle = ContextBundle(
        rendered_context="[M2] Launch moved to Wednesday.\n[M1] The launch is Tuesday.",
        candidates=(
            candidate(
                "M1",
                ID1,
                "The launch is Tuesday.",
                source_type=SourceType.USER_STATED,
                epistemic_type=EpistemicType.ASSERTED,
                lifecycle_state=LifecycleState.SUPERSEDED,
                event_time=when,
                valid_from=when,
                valid_to=None,
            ),
            candidate("M2", ID2, "  Launch moved to Wednesday.  "),
        ),
    )
    assert bundle_evidence(bundle) == (
        ClaimEvidence(
            reference="M1",
            memory_id=ID1,
            text="The launch is Tuesday.",
            source_type=SourceType.USER_STATED,
            epistemic_type=EpistemicType.ASSERTED,
            lifecycle_state=LifecycleState.SUPERSEDED,
            event_time=when,
            valid_from=when,
        ),
        ClaimEvidence(reference="M2", memory_id=ID2, text="Launch moved to Wednesday."),
    )


def test_rendered_text_not_full_text() -> None:
    """The evidence text is the rendered (possibly shortened) text, whatever the context says around it."""
    bundle = ContextBundle(
        rendered_context="[M1] Launch: Tuesday (summary)",
        candidates=(candidate("M1", ID1, "Launch: Tuesday (summary)"),),
    )
    (evidence,) = bundle_evidence(bundle)
    assert evidence.text == "Launch: Tuesday (summary)"


def test_skips_candidate_without_rendered_text() -> None:
    bundle = ContextBundle(
        rendered_context="[M1] [M2] The launch is Tuesday.",
        candidates=(candidate("M1", ID1, None), candidate("M2", ID2, "The launch is Tuesday.")),
    )
    assert [e.reference for e in bundle_evidence(bundle)] == ["M2"]


@pytest.mark.parametrize("blank", ["", "   ", "\n\t", "\x1f"])
def test_a_blank_rendered_text_is_refused_as_prme_refuses_it(blank: str) -> None:
    """Issue 22: a cited candidate with a blank ``rendered_text`` was skipped; PRME 0.15.0 builds its
    ``ClaimEvidence`` and refuses it (``text`` must be non-empty once stripped), so the project refuses too."""
    bundle = ContextBundle(
        rendered_context="[M1] [M2] The launch is Tuesday.",
        candidates=(candidate("M1", ID1, blank), candidate("M2", ID2, "The launch is Tuesday.")),
    )
    with pytest.raises(pydantic.ValidationError, match="text"):
        bundle_evidence(bundle)


def test_skips_uncited_candidate() -> None:
    bundle = ContextBundle(
        rendered_context='[{"id":"M1","text":"The launch is Tuesday."}]',
        candidates=(
            candidate("M1", ID1, "The launch is Tuesday."),
            candidate("M2", ID2, "Packed but cut from the rendered context."),
            candidate("M3", ID3, "Mentioned bare as M3 only."),
        ),
    )
    assert [e.reference for e in bundle_evidence(bundle)] == ["M1"]


def test_all_cited_without_text_gives_no_evidence() -> None:
    bundle = ContextBundle(rendered_context="[M1]", candidates=(candidate("M1", ID1, None),))
    assert bundle_evidence(bundle) == ()


def test_empty_bundle_gives_no_evidence() -> None:
    assert bundle_evidence(ContextBundle(rendered_context="")) == ()
    assert bundle_evidence(ContextBundle(rendered_context="anything", candidates=())) == ()


def test_rendered_without_citations_raises_naming_references() -> None:
    bundle = ContextBundle(
        rendered_context="The launch is Tuesday. The launch moved to Wednesday.",
        candidates=(candidate("M1", ID1, "The launch is Tuesday."), candidate("M2", ID2, "Moved to Wednesday.")),
    )
    with pytest.raises(
        ValueError,
        match=re.escape(
            "bundle was rendered without citations: none of its candidate references ('M1', 'M2') "
            'appears in rendered_context as "ref", [ref] or "id":"ref"'
        ),
    ):
        bundle_evidence(bundle)


def test_rendered_without_citations_message_is_bounded() -> None:
    candidates = tuple(candidate(f"M{i}", UUID(int=i + 1), "text") for i in range(8))
    with pytest.raises(ValueError, match=re.escape("('M0', 'M1', 'M2', 'M3', 'M4' and 3 more)")):
        bundle_evidence(ContextBundle(rendered_context="no labels", candidates=candidates))


def test_rendered_without_citations_raises_even_with_evidence_refs() -> None:
    bundle = ContextBundle(rendered_context="plain", candidates=(candidate("M1", ID1, "plain"),))
    with pytest.raises(ValueError, match="rendered without citations"):
        bundle_evidence(bundle, ["M1"])


def test_evidence_refs_select_in_their_own_order() -> None:
    """Issue 22: PRME follows ``evidence_refs`` order (the project kept bundle order, which changed pair
    premises and digests); a repeated reference is a repeated passage; references are matched exactly."""
    bundle = ContextBundle(
        rendered_context="[M1] a b [M2] c d [M3] e f",
        candidates=(candidate("M1", ID1, "a b"), candidate("M2", ID2, "c d"), candidate("M3", ID3, "e f")),
    )
    assert [e.reference for e in bundle_evidence(bundle, ["M3", "M1"])] == ["M3", "M1"]
    assert [e.reference for e in bundle_evidence(bundle, ["M3", "M1", "M3"])] == ["M3", "M1", "M3"]
    assert bundle_evidence(bundle, []) == ()
    with pytest.raises(ValueError, match=re.escape("Unknown context reference:  M2 ")):
        bundle_evidence(bundle, (" M2 ",))


@pytest.mark.parametrize("entry", [["M1"], {"M1": 1}, {"M1"}])
def test_an_unhashable_evidence_ref_is_a_type_error_as_in_prme(entry: object) -> None:
    """Regression (differential hunt): PRME looks each entry up in a dict, so ``[["M1"]]`` raises its
    ``TypeError: unhashable type``; the project answered ``ValueError`` (unknown reference)."""
    bundle = ContextBundle(rendered_context="[M1] a b", candidates=(candidate("M1", ID1, "a b"),))
    with pytest.raises(TypeError, match=re.escape(f"evidence_refs entry {entry!r}: unhashable type")):
        bundle_evidence(bundle, [entry])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="Unknown context reference: 1"):  # hashable, not a str: unknown, as in PRME
        bundle_evidence(bundle, [1])  # type: ignore[list-item]


def test_a_repeated_evidence_ref_is_refused_by_the_verifier_as_a_duplicate_reference() -> None:
    bundle = ContextBundle(rendered_context="[M1] a b", candidates=(candidate("M1", ID1, "a b"),))
    verifier = ClaimVerifier(scorer=ScriptedScorer(default=(0.1, 0.1)))
    with pytest.raises(ValueError, match=re.escape("duplicate evidence reference: M1")):
        verifier.verify_bundle_sync("a b", bundle, evidence_refs=["M1", "M1"])


def test_evidence_refs_naming_an_uncited_or_textless_candidate_is_unknown() -> None:
    """Issue 22: PRME looks ``evidence_refs`` up among the evidence (cited candidates with rendered text),
    so naming a packed but uncited candidate is an unknown context reference, not a silent skip."""
    bundle = ContextBundle(
        rendered_context="[M1] a b",
        candidates=(candidate("M1", ID1, "a b"), candidate("M2", ID2, "uncited"), candidate("M3", ID3, None)),
    )
    assert [e.reference for e in bundle_evidence(bundle, ["M1"])] == ["M1"]
    for name in ("M2", "M3"):
        with pytest.raises(ValueError, match=re.escape(f"Unknown context reference: {name}")):
            bundle_evidence(bundle, ["M1", name])


def test_unknown_evidence_ref_raises_naming_the_first() -> None:
    bundle = ContextBundle(rendered_context="[M1] a b", candidates=(candidate("M1", ID1, "a b"),))
    with pytest.raises(ValueError, match=re.escape("Unknown context reference: M9;")):
        bundle_evidence(bundle, ["M1", "M9", "X", "M9"])


def test_unknown_evidence_ref_on_empty_bundle() -> None:
    with pytest.raises(ValueError, match=re.escape("Unknown context reference: M1")):
        bundle_evidence(ContextBundle(rendered_context=""), ["M1"])


def test_evidence_refs_as_plain_string_is_a_value_error() -> None:
    """Bad caller input is a ValueError naming the field (docs/decision.md §2), not a TypeError."""
    bundle = ContextBundle(rendered_context="[M1] a b", candidates=(candidate("M1", ID1, "a b"),))
    with pytest.raises(ValueError, match="evidence_refs must be a sequence of references, not a single string"):
        bundle_evidence(bundle, "M1")


# ---------------------------------------------------------------- the model


def test_repeated_reference_rejected_naming_it() -> None:
    with pytest.raises(pydantic.ValidationError, match=re.escape("candidate reference 'M1' is repeated in the bundle")):
        ContextBundle(
            rendered_context="[M1]",
            candidates=(candidate("M1", ID1, "a"), candidate(" M1 ", ID2, "b")),
        )


def test_models_are_frozen_and_forbid_extra_fields() -> None:
    c = candidate("M1", ID1, "a b")
    with pytest.raises(pydantic.ValidationError):
        c.reference = "M2"  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError, match="full_text"):
        BundleCandidate.model_validate(
            {"reference": "M1", "memory_id": str(ID1), "rendered_text": "a", "full_text": "hidden"}
        )
    with pytest.raises(pydantic.ValidationError, match="rendered_contex"):
        ContextBundle.model_validate({"rendered_contex": "", "candidates": []})
    with pytest.raises(pydantic.ValidationError, match="reference"):
        BundleCandidate.model_validate({"reference": "  ", "memory_id": str(ID1)})
    with pytest.raises(pydantic.ValidationError, match="lifecycle_state"):
        BundleCandidate.model_validate({"reference": "M1", "memory_id": str(ID1), "lifecycle_state": "retired"})


def _full_bundle() -> ContextBundle:
    when = datetime(2026, 3, 2, 9, 30, tzinfo=timezone.utc)
    return ContextBundle(
        rendered_context='[{"id":"M1","text":"Ünïcode — launch “Tuesday”"}]\n[M2] second\n',
        candidates=(
            candidate(
                "M1",
                ID1,
                "Ünïcode — launch “Tuesday”",
                source_type=SourceType.TOOL_OUTPUT,
                epistemic_type=EpistemicType.HYPOTHETICAL,
                lifecycle_state=LifecycleState.TENTATIVE,
                event_time=when,
                valid_from=datetime(2026, 1, 1),
                valid_to=when,
            ),
            candidate("M2", ID2, "second"),
            candidate("M3", ID3, None),
        ),
    )


def test_json_round_trip_unchanged() -> None:
    bundle = _full_bundle()
    text = bundle.model_dump_json()
    again = ContextBundle.model_validate_json(text)
    assert again == bundle
    assert again.model_dump_json() == text
    assert bundle_evidence(again) == bundle_evidence(bundle)


def test_request_round_trip_unchanged() -> None:
    request = BundleClaimRequest(id="row-1", claim="The launch is Tuesday.", bundle=_full_bundle(), evidence_refs=("M1",))
    assert BundleClaimRequest.model_validate_json(request.model_dump_json()) == request
    with pytest.raises(pydantic.ValidationError, match="evidence"):
        BundleClaimRequest.model_validate({"claim": "x", "bundle": {"rendered_context": ""}, "evidence": []})


_refs = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="\x00"), min_size=1, max_size=8).filter(
    lambda s: s.strip() == s and s != ""
)


@given(
    st.lists(
        st.tuples(_refs, st.one_of(st.none(), st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=20)), st.booleans()),
        max_size=6,
        unique_by=lambda t: t[0],
    ),
    st.text(max_size=30),
)
def test_round_trip_and_rules_property(rows: list[tuple[str, str | None, bool]], noise: str) -> None:
    """Any bundle round-trips through JSON, and evidence is exactly the cited, non-blank candidates in order."""
    candidates = tuple(candidate(ref, UUID(int=i + 1), text) for i, (ref, text, _) in enumerate(rows))
    context = noise + "".join(f"[{ref}]" for ref, _, cite in rows if cite)
    bundle = ContextBundle(rendered_context=context, candidates=candidates)
    assert ContextBundle.model_validate_json(bundle.model_dump_json()) == bundle
    cited = [is_cited(c.reference, context) for c in candidates]
    if candidates and not any(cited):
        with pytest.raises(ValueError, match="rendered without citations"):
            bundle_evidence(bundle)
        return
    taken = [c for c, is_c in zip(candidates, cited) if is_c and c.rendered_text is not None]
    if any(not has_visible_text(c.rendered_text or "") for c in taken):
        with pytest.raises(pydantic.ValidationError):
            bundle_evidence(bundle)
        return
    expected = [c.reference for c in taken]
    assert [e.reference for e in bundle_evidence(bundle)] == expected
    for e in bundle_evidence(bundle):
        rendered = next(c.rendered_text for c in candidates if c.reference == e.reference)
        assert rendered is not None
        # ClaimEvidence strips what str.strip() strips, as PRME does.
        assert e.text == rendered.strip()


def test_a_nul_in_a_selected_rendered_text_is_refused() -> None:
    """Regression: NUL characters passed into evidence texts."""
    bundle = ContextBundle(rendered_context="[M1]", candidates=(candidate("M1", ID1, "The launch\x00 is Tuesday."),))
    with pytest.raises(pydantic.ValidationError, match=re.escape("must not contain a NUL character")):
        bundle_evidence(bundle)


def test_an_invisible_rendered_text_is_refused_like_an_invisible_passage() -> None:
    """Issue 22: an invisible-only rendered text was skipped, which made the evidence differ from PRME's
    (which scores it); the project refuses it, as it refuses such a passage given to ``verify``."""
    bundle = ContextBundle(
        rendered_context="[M1] [M2]",
        candidates=(candidate("M1", ID1, "\u200b\u200d"), candidate("M2", ID2, "The launch is Tuesday.")),
    )
    with pytest.raises(pydantic.ValidationError, match="visible character"):
        bundle_evidence(bundle)


def test_module_doctests() -> None:
    results = doctest.testmod(verifier.decision.bundle)
    assert results.attempted >= 5
    assert results.failed == 0


_citation_text = st.text(alphabet=st.sampled_from(list('ab"[]:{} M1\\')), max_size=40)


@given(st.lists(st.text(alphabet=st.sampled_from(list('ab"[]M1\\ ')), min_size=1, max_size=5), max_size=8), _citation_text)
def test_citation_index_agrees_with_is_cited(references: list[str], context: str) -> None:
    """The one-pass index answers exactly what the substring rule answers, quotes and brackets included."""
    index = CitationIndex(context)
    for reference in references:
        assert index.cites(reference) == is_cited(reference, context), (reference, context)


def test_many_candidates_over_a_large_context_is_one_pass_and_checks_the_limit() -> None:
    """Regression: 10,000 candidates over a 10 MB context took 83 s and max_evidence was checked only afterwards."""
    context = "lorem ipsum dolor " * 550_000 + " ".join(f"[M{i}]" for i in range(100))
    candidates = tuple(candidate(f"M{i}", UUID(int=i + 1), f"text {i}") for i in range(10_000))
    bundle = ContextBundle(rendered_context=context, candidates=candidates)
    with pytest.raises(ValueError, match=re.escape("bundle yields 65 or more passages, more than max_evidence=64")):
        bundle_evidence(bundle, max_evidence=64)
    assert [e.reference for e in bundle_evidence(bundle)] == [f"M{i}" for i in range(100)]


# ---------------------------------------------------------------- PRME drop-in (issue 22)


def _memory_bundle(context_format: str = "reader", cite: bool = True) -> object:
    """An object with PRME's ``MemoryBundle`` interface (sections of candidates with ``node`` and
    ``rendered_text``, ``context_references``, ``render()``, ``ensure_citable()``), built without prme."""
    from types import SimpleNamespace

    from verifier.decision.packed import MemoryBundleRecord

    record = MemoryBundleRecord.model_validate(
        {
            "sections": {
                "stable_facts": [
                    {"node": {"id": str(ID2), "source_type": "user_stated", "epistemic_type": "asserted",
                              "lifecycle_state": "stable", "valid_from": "2026-01-01T00:00:00+00:00"},
                     "rendered_text": "The launch is not Tuesday; it is Wednesday."},
                    {"node": {"id": str(ID1)}, "rendered_text": "The launch is Tuesday."},
                    {"node": {"id": str(ID1)}, "rendered_text": "A second copy of m1 is skipped."},
                ],
                "other": [{"node": {"id": str(ID3)}, "rendered_text": None}],
            },
            "rendered_context": '[stable_facts]\n- [m2] "The launch is not Tuesday; it is Wednesday."\n- [m1] "The launch is Tuesday."'
            if cite else "- The launch is Tuesday.",
            "context_format": context_format,
            "context_references": {"m1": str(ID1), "m2": str(ID2), "m3": str(ID3)} if cite else {},
        }
    )
    # a plain object: the verifier must not care about the class, only the interface
    return SimpleNamespace(
        sections={name: [SimpleNamespace(node=SimpleNamespace(**c.node.model_dump()), rendered_text=c.rendered_text)
                         for c in cands] for name, cands in record.sections.items()},
        context_references=dict(record.context_references),
        render=record.render,
        ensure_citable=record.ensure_citable,
    )


def test_a_memory_bundle_is_read_as_prme_reads_it() -> None:
    """Issue 22: PRME's MemoryBundle raised AttributeError ('no attribute candidates'). Now: references from
    context_references, sections in order, a memory taken once, no rendered text skipped, provenance copied."""
    evidence = bundle_evidence(_memory_bundle())
    assert [(e.reference, e.memory_id, e.text) for e in evidence] == [
        ("m2", ID2, "The launch is not Tuesday; it is Wednesday."),
        ("m1", ID1, "The launch is Tuesday."),
    ]
    assert evidence[0].lifecycle_state is LifecycleState.STABLE
    assert evidence[0].valid_from == datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert [e.reference for e in bundle_evidence(_memory_bundle(), ["m1", "m2"])] == ["m1", "m2"]


def test_a_memory_bundle_dump_as_dict_or_json_gives_the_same_evidence() -> None:
    bundle = _memory_bundle()
    dump = {
        "sections": {name: [{"node": vars(c.node), "rendered_text": c.rendered_text} for c in cands]
                     for name, cands in bundle.sections.items()},  # type: ignore[attr-defined]
        "rendered_context": bundle.render(),  # type: ignore[attr-defined]
        "context_format": "reader",
        "context_references": {k: str(v) for k, v in bundle.context_references.items()},  # type: ignore[attr-defined]
        "tokens_used": 12,  # other MemoryBundle fields are ignored
    }
    assert bundle_evidence(dump) == bundle_evidence(bundle)
    assert bundle_evidence(pydantic.TypeAdapter(dict).dump_json(dump).decode()) == bundle_evidence(bundle)


def test_a_reader_bundle_without_citation_references_is_refused_in_prmes_words() -> None:
    with pytest.raises(ValueError, match=re.escape("This reader-format bundle has no citation references")):
        bundle_evidence(_memory_bundle(cite=False))
    # an auditable-format bundle without references is citable (its records carry "id":"<uuid>"): no evidence
    assert bundle_evidence(_memory_bundle("auditable", cite=False)) == ()


def test_a_context_bundle_as_a_mapping_or_json_text() -> None:
    bundle = ContextBundle(rendered_context="[M1] a b", candidates=(candidate("M1", ID1, "a b"),))
    assert bundle_evidence(bundle.model_dump(mode="json")) == bundle_evidence(bundle)
    assert bundle_evidence(bundle.model_dump_json()) == bundle_evidence(bundle)
    with pytest.raises(ValueError, match=re.escape("duplicate key 'rendered_context' in a JSON object")):
        bundle_evidence('{"rendered_context": "[M1]", "rendered_context": "x", "candidates": []}')


@pytest.mark.parametrize("bad", [None, 3, ["[M1]"], object()])
def test_anything_else_is_a_type_error_naming_what_is_accepted(bad: object) -> None:
    with pytest.raises(TypeError, match=re.escape("bundle must be a verifier ContextBundle, a mapping or JSON text")):
        bundle_evidence(bad)
    with pytest.raises(TypeError, match="PRME MemoryBundle"):
        ClaimVerifier(scorer=ScriptedScorer(default=(0.1, 0.1))).verify_bundle_sync("a b", bad)  # type: ignore[arg-type]
    # and the ValueError of every other bad input, naming the field (the README's error table)
    with pytest.raises(InputError, match="bundle must be") as caught:
        ClaimVerifier(scorer=ScriptedScorer(default=(0.1, 0.1))).verify_bundle_sync("a b", bad)  # type: ignore[arg-type]
    assert isinstance(caught.value, ValueError) and caught.value.field == "bundle"


def test_prmes_own_test_seam_replacing_predict_sync_drives_the_verifier() -> None:
    """PRME's tests replace ``ClaimVerifier._predict_sync`` on the instance; the same test runs here."""
    verifier = ClaimVerifier()  # no model directory needed: the seam replaces the model
    seen: list[list[tuple[str, str]]] = []

    def fake(pairs: list[tuple[str, str]]) -> list[tuple[float, float, float]]:
        seen.append(list(pairs))
        return [(0.95, 0.01, 0.04) if "is Tuesday" in premise else (0.02, 0.93, 0.05) for premise, _ in pairs]

    verifier._predict_sync = fake  # type: ignore[method-assign]
    result = verifier.verify_bundle_sync("The launch is Tuesday.", _memory_bundle())
    assert result.status.value == "contested"
    assert result.supporting_group == (ID1,) and result.refuting_group == (ID2,)
    assert result.resolved_revision is None  # nobody resolved a commit
    assert seen == [[("The launch is not Tuesday; it is Wednesday.", "The launch is Tuesday."),
                     ("The launch is Tuesday.", "The launch is Tuesday.")]]


def test_prmes_predict_sync_returns_a_list_of_tuples_like_prmes() -> None:
    """Regression (issue 34): ``_predict_sync`` returned a numpy array; PRME 0.15.0's returns a list of
    ``(entailment, contradiction, neutral)`` float tuples (``[]`` for no pairs), and PRME users' tests
    compare it with ``==``."""
    verifier = ClaimVerifier(scorer=ScriptedScorer({"a premise": (0.7, 0.2)}, default=(0.1, 0.3)))
    out = verifier._predict_sync([("a premise", "h"), ("other", "h")])
    assert type(out) is list and all(type(row) is tuple and all(type(v) is float for v in row) for row in out)
    assert out == [(0.7, 0.2, pytest.approx(0.1)), (0.1, 0.3, pytest.approx(0.6))]
    assert verifier._predict_sync([]) == []


def test_prmes_ensure_model_and_model_seams_drive_the_verifier() -> None:
    """Regression (issue 34): ``_ensure_model`` and ``_model`` did not exist, so a PRME test suite that
    replaces them (a fake cross-encoder, no download) failed with AttributeError. Run as PRME's tests do."""

    class FakeCrossEncoder:  # rows in the model's label order: contradiction, entailment, neutral
        def __init__(self) -> None:
            self.calls: list[dict[str, object]] = []

        def predict(self, pairs: list[tuple[str, str]], **kwargs: object) -> list[list[float]]:
            self.calls.append(kwargs)
            return [[0.01, 0.95, 0.04] if "is Tuesday" in premise else [0.93, 0.02, 0.05] for premise, _ in pairs]

    verifier = ClaimVerifier()  # no model directory needed: the seams replace the model
    assert verifier._model is None
    fake = FakeCrossEncoder()
    verifier._ensure_model = lambda: None  # type: ignore[method-assign]
    verifier._model = fake
    verifier._label_indexes = {"contradiction": 0, "entailment": 1, "neutral": 2}
    result = verifier.verify_bundle_sync("The launch is Tuesday.", _memory_bundle())
    assert result.status.value == "contested"
    assert result.supporting_group == (ID1,) and result.refuting_group == (ID2,)
    assert fake.calls == [{"batch_size": verifier.config.batch_size, "apply_softmax": True, "show_progress_bar": False}]
    # and without replacing anything, _ensure_model makes _model this verifier's scorer, once
    scripted = ClaimVerifier(scorer=ScriptedScorer(default=(0.1, 0.1)))
    scripted._ensure_model()
    assert scripted._model is scripted.scorer


@pytest.mark.parametrize("mock_class", [Mock, MagicMock])
def test_a_mock_set_as_model_is_called_through_predict_as_prme_calls_it(mock_class: type[Mock]) -> None:
    """Regression: a ``unittest.mock.Mock`` makes up a callable ``score`` too, so ``_predict_sync`` took it
    for a Scorer, never called ``predict`` and refused the Mock it got back. PRME 0.15.0 calls ``predict``
    (rows in ``_label_indexes`` order) and raises its own error for unnormalized rows."""
    verifier = ClaimVerifier()
    verifier._model = mock_class()
    verifier._model.predict.return_value = [[0.1, 0.8, 0.1]]
    verifier._label_indexes = {"contradiction": 0, "entailment": 1, "neutral": 2}
    assert verifier._predict_sync([("Evidence", "Claim")]) == [(0.8, 0.1, 0.1)]
    verifier._model.predict.assert_called_once_with(
        [("Evidence", "Claim")], batch_size=verifier.config.batch_size, apply_softmax=True, show_progress_bar=False
    )
    verifier._model.score.assert_not_called()
    verifier._model.predict.return_value = [[0.2, 0.2, 0.2]]
    with pytest.raises(ClaimVerificationError, match="normalized"):
        verifier._predict_sync([("Evidence", "Claim")])


def test_a_resolved_revision_a_prme_test_sets_is_the_results_after_a_model_call() -> None:
    """PRME's own tests set ``verifier._resolved_revision`` beside a replaced ``_predict_sync``; PRME's
    result then names it (``resolved_revision=self._resolved_revision if model_called else None``).
    Before, the attribute did not exist here and the result named ``None``."""
    verifier = ClaimVerifier()
    assert verifier._resolved_revision is None  # no scorer built, nothing set
    verifier._resolved_revision = verifier.config.revision
    verifier._predict_sync = lambda pairs: [(0.98, 0.01, 0.01) for _ in pairs]  # type: ignore[method-assign]
    called = verifier.verify_bundle_sync("The launch is Tuesday.", _memory_bundle())
    assert called.model_called and called.resolved_revision == verifier.config.revision
    assert verifier.verify_sync("The launch is Tuesday.", []).resolved_revision is None  # no model call
    # unset, a scorer's own resolved_revision is named, as before
    scripted = ClaimVerifier(scorer=ScriptedScorer(default=(0.9, 0.05), resolved_revision="abc123"))
    assert scripted._resolved_revision == "abc123"
    assert scripted.verify_bundle_sync("The launch is Tuesday.", _memory_bundle()).resolved_revision == "abc123"


@pytest.mark.parametrize("revision", ["\ud800", "a\x00b", "   ", "x" * 201])
def test_a_scorers_unwritable_resolved_revision_is_a_model_failure(revision: str) -> None:
    """Regression: a lone surrogate was put into the result, whose ``model_dump_json()`` then raised; a
    revision a result cannot carry as printable JSON text is now the scorer's failure, never a status."""
    verifier = ClaimVerifier(scorer=ScriptedScorer(default=(0.9, 0.05), resolved_revision=revision))
    with pytest.raises(ClaimVerificationError, match="resolved_revision is not a printable revision"):
        verifier.verify_bundle_sync("The launch is Tuesday.", _memory_bundle())


def test_a_scorers_failing_resolved_revision_raises_claim_verification_error() -> None:
    class Failing(ScriptedScorer):
        @property  # type: ignore[override]
        def resolved_revision(self) -> str:
            raise RuntimeError("boom")

        @resolved_revision.setter
        def resolved_revision(self, value: object) -> None:
            pass

    with pytest.raises(ClaimVerificationError, match="resolved_revision failed: RuntimeError: boom"):
        ClaimVerifier(scorer=Failing(default=(0.9, 0.05))).verify_bundle_sync("The launch is Tuesday.", _memory_bundle())


def test_prme_shaped_evidence_and_config_objects_are_accepted() -> None:
    """A PRME user's own ClaimEvidence/ClaimVerificationConfig objects (other pydantic models with the same
    fields) are validated from their model_dump()."""

    class ForeignEvidence(pydantic.BaseModel):
        reference: str
        memory_id: UUID
        text: str
        source_type: SourceType | None = None
        epistemic_type: EpistemicType | None = None
        lifecycle_state: LifecycleState | None = None
        event_time: datetime | None = None
        valid_from: datetime | None = None
        valid_to: datetime | None = None

    class ForeignConfig(pydantic.BaseModel):
        entailment_threshold: float = 0.9

    verifier = ClaimVerifier(ForeignConfig(), scorer=ScriptedScorer(default=(0.95, 0.01)))  # type: ignore[arg-type]
    assert verifier.config.entailment_threshold == 0.9
    foreign = [ForeignEvidence(reference=" m1 ", memory_id=ID1, text="The launch is Tuesday.", epistemic_type=EpistemicType.ASSERTED)]
    ours = [ClaimEvidence(reference="m1", memory_id=ID1, text="The launch is Tuesday.", epistemic_type=EpistemicType.ASSERTED)]
    assert verifier.verify_sync("The launch is Tuesday.", foreign) == verifier.verify_sync("The launch is Tuesday.", ours)
    # and inside a many-claims request (regression: refused there, "Input should be a valid dictionary")
    many = verifier.verify_many_sync([{"claim": "The launch is Tuesday.", "evidence": foreign}, {"claim": "x", "evidence": ours}])
    assert many[0] == verifier.verify_sync("The launch is Tuesday.", ours)


def test_prmes_module_level_names_are_importable_from_verifier() -> None:
    """A PRME user's imports of its module-level names keep working after ``prme`` -> ``verifier``."""
    import typing

    from verifier import (
        CLAIM_VERIFICATION_SCHEMA_VERSION,
        DEFAULT_NLI_MODEL,
        DEFAULT_NLI_REVISION,
        ClaimVerificationDecisionBasis,
        ClaimVerificationLimitation,
    )

    assert (DEFAULT_NLI_MODEL, DEFAULT_NLI_REVISION, CLAIM_VERIFICATION_SCHEMA_VERSION) == (
        "cross-encoder/nli-deberta-v3-base", "6c749ce3425cd33b46d187e45b92bbf96ee12ec7", 3
    )
    assert set(typing.get_args(ClaimVerificationDecisionBasis)) == {
        "model_entailment", "localized_model_entailment", "model_contradiction", "explicit_negation_overlap"
    }
    assert {"complete_set_requires_structured_aggregation", "uncorroborated_model_entailment",
            "uncorroborated_model_contradiction"} <= set(typing.get_args(ClaimVerificationLimitation))
