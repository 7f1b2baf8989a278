"""Bundles are bounded (issue 49, item 1): the candidate limit before any scan, citations in one pass, the
server answering while a large bundle is read.

Regressions: ``CitationIndex.cites`` rescanned the whole context up to three times for every reference with
``"``, ``[`` or ``]``; the "no candidate is cited" scan ran over all candidates before ``max_bundle_candidates``
was counted; the index split the whole context at ``"`` (389 MB for a 20 MB context); ``/v1/verify/bundle`` ran
all of it on the event loop, so one request held ``/health/live`` for 13-25 s.
"""

from __future__ import annotations

import re
import sys
import threading
import tracemalloc
from types import FrameType
from typing import Any, Optional
from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import strategies as st

from verifier.decision import citations
from verifier.decision.bundle import BundleCandidate, ContextBundle, bundle_evidence, check_candidate_count
from verifier.decision.citations import CitationIndex, is_cited
from verifier.validation import InputError

_reference = st.text(alphabet=st.sampled_from(list('ab"[]M1\\ ')), min_size=1, max_size=6)
_context = st.text(alphabet=st.sampled_from(list('ab"[]:{} M1\\')), max_size=60)


@given(st.lists(_reference, max_size=10), _context, st.integers(min_value=1, max_value=8))
def test_an_index_of_known_references_answers_the_substring_rule(references: list[str], context: str, slice_chars: int) -> None:
    """CitationIndex(context, references) answers exactly is_cited for each, quotes and brackets included, also
    when the context is read in slices of a few characters (citations crossing a slice's end)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(citations, "SLICE", slice_chars)
        index = CitationIndex(context, references)
    for reference in references:
        assert index.cites(reference) == is_cited(reference, context), (reference, context)


def test_repeated_forms_and_forms_inside_forms_are_all_found() -> None:
    """The automaton's shared prefixes and fail links: a form inside a longer one, forms that overlap."""
    context = 'x"a"b"c"y [a"b] [[q]]'
    references = ['a"b', 'b"c', "a", "b", 'a"b"c', "q", "[q", "q]", "[q]", 'c"y', "x"]
    index = CitationIndex(context, references)
    assert {r for r in references if index.cites(r)} == {r for r in references if is_cited(r, context)}
    assert {r for r in references if not index.cites(r)} == {'c"y', "x"}  # no quote after y; x is bare


def test_references_with_quotes_or_brackets_are_bounded_in_all() -> None:
    """Their automaton's size follows them: 32,768 characters of such references in one bundle at most, refused
    past that with the limit named (no real citation label has any)."""
    context = '"a"' * 1000
    within = [f'{i:04d}"' + "a" * 27 for i in range(1024)]  # 32 characters each: 32,768 in all
    assert not any(CitationIndex(context, within).cites(reference) for reference in within)
    with pytest.raises(InputError, match=re.escape("hold 32,769 characters in all, more than 32,768")):
        CitationIndex(context, [*within, "["])
    candidates = tuple(BundleCandidate(reference=reference, memory_id=UUID(int=i + 1), rendered_text="x")
                       for i, reference in enumerate([*within, "[", "M1"]))
    with pytest.raises(InputError, match=re.escape("more than 32,768")):
        bundle_evidence(ContextBundle(rendered_context=context + "[M1]", candidates=candidates))


def _candidates(count: int) -> tuple[BundleCandidate, ...]:
    return tuple(BundleCandidate(reference=f"M{i}", memory_id=UUID(int=i + 1), rendered_text=f"text {i}")
                 for i in range(count))


def test_the_candidate_limit_comes_before_the_citation_scan() -> None:
    """Bug: 20,000 candidates with a 10,000 limit were all scanned for citations first and refused as "rendered
    without citations", never with the limit."""
    bundle = ContextBundle(rendered_context="nothing is cited here", candidates=_candidates(20_000))
    with pytest.raises(InputError, match=re.escape("more than 10000 candidates, more than max_bundle_candidates=10000")):
        bundle_evidence(bundle, max_candidates=10_000)
    with pytest.raises(ValueError, match="rendered without citations"):  # within the limit: the citation rule
        bundle_evidence(bundle, max_candidates=20_000)


def test_a_mapping_over_the_limit_is_refused_before_its_candidates_are_validated() -> None:
    """A mapping (the server's JSON) is counted from its list: 10,001 malformed candidates get the limit's refusal,
    not a validation of each."""
    mapping = {"rendered_context": "[M1]", "candidates": [{"reference": "M1", "memory_id": "not a uuid"}] * 10_001}
    with pytest.raises(InputError, match=re.escape("max_bundle_candidates=10000")):
        check_candidate_count(mapping, 10_000)
    with pytest.raises(InputError, match=re.escape("max_bundle_candidates=10000")):
        bundle_evidence(mapping, max_candidates=10_000)
    dump = {"sections": {"a": [{"node": {"id": "x"}}] * 6_000, "b": [{"node": {"id": "x"}}] * 4_001}}
    with pytest.raises(InputError, match=re.escape("max_bundle_candidates=10000")):
        bundle_evidence(dump, max_candidates=10_000)


def test_the_index_holds_no_copy_of_the_context_in_pieces() -> None:
    """Bug: the index split the whole context at '"' (389 MB for a 20 MB context). Now its peak allocations while
    indexing a 4 MiB context of 1.4 million quoted pieces stay under the context's own size."""
    context = '"a"' * (4 * 1024 * 1024 // 3) + ' [M7] "M8" '
    references = [f"M{i}" for i in range(10_000)] + ['a"a', "q[17"]
    tracemalloc.start()
    try:
        index = CitationIndex(context, references)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < len(context), peak  # the context is ASCII: one byte a character
    assert [r for r in references if index.cites(r)] == ["M7", "M8"]


# ---------------------------------------------------------------- over HTTP


def _large_bundle_request() -> dict[str, Any]:
    """The issue's request: 800 uncited references like ``q[17`` over 3 MiB of context, one cited candidate."""
    context = '{"id":"m1","text":"The launch is Tuesday."} ' + '{"id":"x","text":"some [text] here"} ' * 85_000
    candidates = [{"reference": "m1", "memory_id": str(UUID(int=1)), "rendered_text": "The launch is Tuesday."}]
    candidates += [{"reference": f"q[{i}", "memory_id": str(UUID(int=i + 2)), "rendered_text": f"text {i}"}
                   for i in range(800)]
    return {"claim": "The launch is Tuesday.", "bundle": {"rendered_context": context, "candidates": candidates}}


def _reading_a_bundle() -> bool:
    """Whether some thread of this process is inside :func:`bundle_evidence` now (the server runs in a thread)."""
    for top in sys._current_frames().values():
        frame: Optional[FrameType] = top
        while frame is not None:
            if frame.f_code is bundle_evidence.__code__:
                return True
            frame = frame.f_back
    return False


def test_health_answers_while_a_large_bundle_is_read(tiny_model_dir: Any) -> None:
    """Bug: one /v1/verify/bundle request held the event loop (and /health/live) until its bundle was read.

    Once a thread of the server is seen inside bundle_evidence, /health/live is asked: it must answer while that
    thread is still there. Read on the event loop, the bundle left no loop to answer until it was done.
    """
    pytest.importorskip("uvicorn")  # the server extra
    pytest.importorskip("httpx")
    from test_server import Server

    from verifier.serve import ServerSettings

    running = Server(ServerSettings(model_dir=tiny_model_dir))
    try:
        assert running.wait_ready().status_code == 200
        request = _large_bundle_request()
        outcome: dict[str, Any] = {}

        def post() -> None:
            with running.client() as client:
                outcome["response"] = client.post("/v1/verify/bundle", json=request)

        poster = threading.Thread(target=post)
        with running.client() as health:
            health.get("/health/live")  # connected before the bundle arrives
            poster.start()
            while not _reading_a_bundle():
                assert poster.is_alive(), "the bundle was read before it could be seen"
                threading.Event().wait(0.001)
            assert health.get("/health/live").status_code == 200
            assert _reading_a_bundle(), "/health/live answered only once the bundle was read"
        poster.join()
        response = outcome["response"]
        assert response.status_code == 200, response.text
        assert response.json()["claim"] == "The launch is Tuesday."
    finally:
        running.stop()
