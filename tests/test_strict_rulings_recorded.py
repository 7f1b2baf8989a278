"""The strict policy's rulings on long passages, recorded before its cost work (issue 35) in
tests/data/strict_rulings.json: every cheap test put before a slow pattern, every kind of value
or clause left unread because it cannot change a ruling, must leave each status, rule, support
sentence and trigger as it was (docs/policy.md, "Cost").

The cases are the passages of ``python -m bench.strict_cost`` (adversarial and ordinary prose, two
sizes) under claims naming a weekday, a date, a month, a count, money, a duration or a negation,
with a scorer that entails every premise and one that contradicts every premise, and every row of
tests/data/prose_corpus.json with the corpus test's key scorer. Run as a script
(``PYTHONPATH=. .venv/bin/python tests/test_strict_rulings_recorded.py --write``, from the repository root) to record them again after a change
that is meant to change rulings.
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from bench.strict_cost import passage, prose
from key_scorer import KeyScorer
from verifier import ClaimEvidence, ClaimVerifier, ScriptedScorer
from verifier.types import ClaimVerificationConfig

RECORD = Path(__file__).resolve().parent / "data" / "strict_rulings.json"
STRICT = ClaimVerificationConfig(entailment_policy="strict", refutation_policy="strict")
CLAIMS = (
    "The release shipped on Friday.",
    "The release shipped on 4 May 2021.",
    "The release shipped in May.",
    "The team shipped 12 releases.",
    "The budget was $5 million.",
    "The backup took 2 hours on Monday.",
    "The release did not ship on Friday.",
)
SCORES = {"entails": (0.95, 0.02), "contradicts": (0.02, 0.95)}
PASSAGES = {"adversarial": passage, "prose": prose}
SIZES = (3_000, 20_000)
CORPUS = json.loads((Path(__file__).resolve().parent / "data" / "prose_corpus.json").read_text(encoding="utf-8"))


def cases() -> list[tuple[str, str, int, str, str]]:
    return [
        (f"{kind}-{size}-{claim_index}-{score}", kind, size, claim, score)
        for kind in PASSAGES
        for size in SIZES
        for claim_index, claim in enumerate(CLAIMS)
        for score in SCORES
    ]


def _summary(result: Any) -> dict[str, Any]:
    return {
        "status": result.status.value,
        "rulings": [[r.action, r.rule, r.sentence, r.trigger] for r in result.strict_rulings],
    }


def outcome(kind: str, size: int, claim: str, score: str) -> dict[str, Any]:
    text = PASSAGES[kind](size)
    evidence = [ClaimEvidence(reference="m1", memory_id=uuid.uuid5(uuid.NAMESPACE_URL, "m1"), text=text)]
    return _summary(ClaimVerifier(STRICT, scorer=ScriptedScorer(default=SCORES[score])).verify_sync(claim, evidence))


def corpus_outcomes() -> dict[str, Any]:
    found = {}
    for row in CORPUS:
        evidence = [ClaimEvidence(reference="m1", memory_id=uuid.uuid5(uuid.NAMESPACE_URL, row["id"]), text=row["passage"])]
        found[row["id"]] = _summary(ClaimVerifier(STRICT, scorer=KeyScorer(row["key"])).verify_sync(row["claim"], evidence))
    return found


def _recorded() -> dict[str, Any]:
    return json.loads(RECORD.read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", cases(), ids=[case[0] for case in cases()])
def test_rulings_are_the_recorded_ones(case: tuple[str, str, int, str, str]) -> None:
    name, kind, size, claim, score = case
    assert outcome(kind, size, claim, score) == _recorded()[name]


def test_corpus_rulings_are_the_recorded_ones() -> None:
    assert corpus_outcomes() == _recorded()["corpus"]


def test_the_record_fires_rules() -> None:
    """The record is no list of empty rulings: the cases exercise vetoes and additions."""
    entries = [entry for name, entry in _recorded().items() if name != "corpus"] + list(_recorded()["corpus"].values())
    rules = {ruling[1] for entry in entries for ruling in entry["rulings"]}
    assert len(rules) >= 4, rules


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: PYTHONPATH=. python tests/test_strict_rulings_recorded.py --write (from the repository root)")
    record = {name: outcome(kind, size, claim, score) for name, kind, size, claim, score in cases()}
    record["corpus"] = corpus_outcomes()
    RECORD.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(cases())} passage cases and {len(CORPUS)} corpus rows written to {RECORD}")
