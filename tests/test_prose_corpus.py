"""The strict policy on ordinary prose (tests/data/prose_corpus.json, described in
tests/data/prose_corpus.md): on plain encyclopedic and news passages that state the claim,
no strict ruling may fire on more than 2 % of rows, and on the controls, where a trigger
governs the fact sentence, a ruling must fire.

The model is stood in for by :class:`key_scorer.KeyScorer`: a premise entails the claim exactly when it
contains the row's ``key`` (the text that states the claim), which is what an NLI cross-encoder
does on such passages; nothing here depends on the strict rules' own reading of the text.
Run as a script (``python tests/test_prose_corpus.py``) to print the measurement.
"""

from __future__ import annotations

import json
import re
import uuid
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

import pytest

from key_scorer import KeyScorer
from verifier import ClaimEvidence, ClaimVerifier
from verifier.decision.strict_text import normalise
from verifier.types import ClaimVerification, ClaimVerificationConfig

ROOT = Path(__file__).resolve().parents[1]
CORPUS = json.loads((ROOT / "tests" / "data" / "prose_corpus.json").read_text(encoding="utf-8"))
PLAIN = [row for row in CORPUS if row["kind"] == "plain"]
CONTROLS = [row for row in CORPUS if row["kind"] == "control"]
REFERENCE = ClaimVerificationConfig()
STRICT = ClaimVerificationConfig(entailment_policy="strict", refutation_policy="strict")
#: The issue's target: at most 2 % of plain rows may get a strict ruling (docs/policy.md).
MAX_FIRED = 0.02


def verify(row: dict[str, Any], config: ClaimVerificationConfig) -> ClaimVerification:
    evidence = [
        ClaimEvidence(reference="m1", memory_id=uuid.uuid5(uuid.NAMESPACE_URL, row["id"]), text=row["passage"])
    ]
    return ClaimVerifier(config, scorer=KeyScorer(row["key"])).verify_sync(row["claim"], evidence)


def test_corpus_shape() -> None:
    """At least 300 plain claims with 5-20 sentence passages, and controls in every family."""
    assert len(PLAIN) >= 300 and len({row["id"] for row in CORPUS}) == len(CORPUS)
    for row in PLAIN:
        assert row["key"] in row["passage"], row["id"]
        assert 5 <= row["passage"].count(". ") + row["passage"].count(".\n") + 1 <= 21, row["id"]
    assert len({row["family"] for row in CONTROLS}) >= 7


@pytest.mark.parametrize("row", PLAIN[:1] + CONTROLS[:1], ids=lambda r: r["id"])
def test_reference_supports_the_rows(row: dict[str, Any]) -> None:
    """The reference policies support every row (checked on all rows by the guard below): the
    corpus measures what the strict policy removes."""
    assert verify(row, REFERENCE).status.value == "supported"


def fired(rows: Sequence[dict[str, Any]]) -> list[tuple[str, str, str]]:
    found = []
    for row in rows:
        assert verify(row, REFERENCE).status.value in ("supported", "contested"), row["id"]
        result = verify(row, STRICT)
        for ruling in result.strict_rulings:
            found.append((row["id"], ruling.rule, ruling.trigger or ""))
    return found


def test_plain_prose_keeps_its_supports() -> None:
    """Issue 35: negations, reporting verbs and status words in sentences that do not govern the
    fact sentence vetoed right supports. At most 2 % of plain rows may get a ruling."""
    rows = {row_id for row_id, _, _ in fired(PLAIN)}
    assert len(rows) <= MAX_FIRED * len(PLAIN), sorted(rows)


def test_controls_are_vetoed() -> None:
    """Issue 35: a trigger that governs the fact sentence (in it, or a frame introducing it: a
    status label line or sentence, a heading, a header with a colon, a quote) vetoes the support,
    and the ruling names the fact sentence and the trigger."""
    missed, unnamed = [], []
    for row in CONTROLS:
        result = verify(row, STRICT)
        vetoes = [r for r in result.strict_rulings if r.action == "vetoed_support"]
        if result.status.value == "supported" or not vetoes:
            missed.append(row["id"])
            continue
        cue = re.findall(r"[\w']+", normalise(row["trigger"]))[0].lower()
        if normalise(row["key"]) not in (vetoes[0].sentence or "") or cue not in (vetoes[0].trigger or "").lower():
            unnamed.append((row["id"], vetoes[0].sentence, vetoes[0].trigger))
    assert not missed
    assert not unnamed


def report() -> None:
    plain = fired(PLAIN)
    controls = fired(CONTROLS)
    rows = {row_id for row_id, _, _ in plain}
    print(f"plain: {len(rows)} of {len(PLAIN)} rows fired ({100 * len(rows) / len(PLAIN):.1f} %)")
    print(Counter(rule for _, rule, _ in plain))
    for item in plain:
        print("  ", item)
    caught = {row_id for row_id, _, _ in controls}
    print(f"controls: {len(caught)} of {len(CONTROLS)} caught")
    by_family = Counter(row["family"] for row in CONTROLS if row["id"] not in caught)
    print("missed by family:", dict(by_family))


if __name__ == "__main__":
    report()
