"""Differential against the reference itself: PRME 0.15.0's ClaimVerifier and this project, same inputs, same scores.

``tests/prme_oracle/prme_cases.py`` generates seeded cases over every rule of the reference
policies — speech-act modes, negation (curly apostrophes included), correction cues with odd
spacing, numbers/weekdays/months, typed provenance and lifecycle, validity windows, localized
rechecks over multi-sentence passages with odd whitespace and openers, minimal groups of size 2
and 3, completeness, configuration variants, malformed scores and bad inputs — through
``verify``, ``verify_sync``, ``verify_many`` (sync and async), both schedules, and bundles. PRME
runs in its own virtualenv (``tests/prme_oracle/oracle.py`` under ``.venv-prme``; its model is a
fake cross-encoder returning the scripted scores, so PRME's own ``_predict_sync`` checks run);
the project runs here with the same scores through ``scorer=``. Bundles are given to PRME as its
own ``MemoryBundle``; the project verifies both the equivalent ``ContextBundle`` and the very
``MemoryBundle`` PRME verified, as its JSON dump.

Where both return a result, every field and digest must be equal (``resolved_revision`` aside).
Where PRME refuses, the project must refuse too, except for the documented extensions of
docs/compatibility.md (evidence as mappings or any iterable, the strict policy). Where only the
project refuses, the refusal must be one of its documented extra refusals. Nothing else is
allowed: an unexplained difference fails the test and prints the case.
"""

from __future__ import annotations

import asyncio
import collections
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from oracle_env import ROOT, oracle_python

sys.path.insert(0, str(ROOT / "tests" / "prme_oracle"))
import prme_cases  # noqa: E402
import project_side  # noqa: E402

SEEDS = (11, 12, 13)
CASES_PER_SEED = 1500

#: The project's documented extra refusals (docs/compatibility.md), by the words of its message.
EXTRA_REFUSALS = (
    "NUL character",
    "visible character",
    "max_claim_chars",
    "max_passage_chars",
    "max_reference_chars",
    "requires_complete_set must be True or False",
    "rendered without citations",
    "is repeated in the bundle",
    "not a single string",
    "expected real numbers",
    "valid number",
    "valid integer",
    "valid boolean",
    "no candidate carries",
    "evidence must be a list of passages",
    "scorer returned scores of shape",
)
#: What may differ when the project is handed PRME's own MemoryBundle (its dump): only the text rules.
DUMP_REFUSALS = ("NUL character", "visible character", "max_claim_chars", "max_passage_chars", "max_reference_chars",
                 "requires_complete_set must be True or False", "valid number", "valid integer", "valid boolean",
                 "expected real numbers", "not a single string", "no candidate carries")


def _family(error: dict[str, Any]) -> str:
    mro = error["mro"]
    if "ClaimVerificationError" in mro or "RuntimeError" in mro:
        return "runtime"
    if "ValueError" in mro:
        return "value"
    return error["type"]


def _result(outcome: dict[str, Any]) -> dict[str, Any]:
    data = dict(outcome["result"])
    data.pop("resolved_revision", None)
    return data


def _judge(case: dict[str, Any], prme: dict[str, Any], project: dict[str, Any], how: str = "evidence") -> str:
    """``same``, ``both refuse``, an allowed difference's name, or ``UNEXPLAINED: ...``."""
    if "result" in prme and "result" in project:
        return "same" if _result(prme) == _result(project) else "UNEXPLAINED: results differ"
    if "error" in prme and "error" in project:
        return "both refuse"
    if "error" in prme:
        error = prme["error"]
        if case.get("evidence_as") in ("raw", "generator") and error["type"] in ("AttributeError", "TypeError"):
            return "extension: evidence as mappings or any iterable"
        if "strict" in json.dumps(case.get("config", {})):
            return "extension: the strict policy"
        if case.get("bundle", {}).get("context_format") == "reader" and "has no citation references" in error["message"]:
            return "extension: a ContextBundle has no reader format"
        return f"UNEXPLAINED: PRME refuses ({error['type']}: {error['message'][:120]}), the project returns"
    message = project["error"]["message"]
    for words in DUMP_REFUSALS if how == "MemoryBundle dump" else EXTRA_REFUSALS:
        if words in message:
            return f"extra refusal: {words}"
    return f"UNEXPLAINED: the project refuses ({project['error']['type']}: {message[:120]}), PRME returns"


def _requests(outcome: dict[str, Any], count: int) -> list[dict[str, Any]]:
    return outcome["many"] if "many" in outcome else [outcome] * count


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[dict[str, Any], dict[str, Any], dict[str, Any], str]]:
    python = oracle_python()
    cases = [case for seed in SEEDS for case in prme_cases.generate(seed, CASES_PER_SEED)]
    path = tmp_path_factory.mktemp("differential") / "cases.jsonl"
    path.write_text("".join(prme_cases.dumps(case) + "\n" for case in cases), encoding="utf-8")
    completed = subprocess.run(
        [str(python), str(ROOT / "tests" / "prme_oracle" / "oracle.py"), str(path)],
        capture_output=True, text=True, timeout=900,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    oracle = {row["id"]: row for row in map(json.loads, completed.stdout.splitlines())}
    loop = asyncio.new_event_loop()
    rows = []
    try:
        for case in cases:
            theirs = oracle[case["id"]]
            ours = project_side.run_case(case, loop, None)
            rows.append((case, theirs, ours, "ContextBundle" if "bundle" in case else "evidence"))
            if "bundle_dump" in theirs:
                ours = project_side.run_case(case, loop, None, bundle_dump=theirs["bundle_dump"])
                rows.append((case, theirs, ours, "MemoryBundle dump"))
    finally:
        loop.close()
    return rows


def _tally(rows: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any], str]]) -> tuple[collections.Counter[str], list[str]]:
    verdicts: collections.Counter[str] = collections.Counter()
    unexplained: list[str] = []
    for case, theirs, ours, how in rows:
        prme_out, project_out = theirs["outcome"], ours["outcome"]
        count = len(prme_out.get("many", [prme_out]))
        if "many" in prme_out and "error" in project_out:
            # verify_many validates every request before any model work: one bad request fails the call.
            refused = [item for item in prme_out["many"] if "error" in item]
            verdict = "both refuse" if refused else _judge(case, {"result": {}}, project_out, how)
            if verdict.startswith("UNEXPLAINED") and not refused:
                unexplained.append(f"{case['id']} ({how}): {verdict}")
            verdicts[verdict] += 1
            continue
        for prme_item, project_item in zip(prme_out.get("many", [prme_out]), _requests(project_out, count)):
            verdict = _judge(case, prme_item, project_item, how)
            verdicts[verdict] += 1
            if verdict.startswith("UNEXPLAINED"):
                unexplained.append(f"{case['id']} ({how}): {verdict}")
    return verdicts, unexplained


def test_no_unexplained_difference_from_prme(campaign: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any], str]]) -> None:
    verdicts, unexplained = _tally(campaign)
    print("\n".join(f"{count:6d}  {verdict}" for verdict, count in verdicts.most_common()))
    assert not unexplained, f"{len(unexplained)} unexplained differences, e.g.:\n" + "\n".join(unexplained[:20])


def test_the_comparison_is_not_vacuous(campaign: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any], str]]) -> None:
    """Most cases must reach a result on both sides, across statuses, entry points and bundle kinds."""
    verdicts, _ = _tally(campaign)
    total = sum(verdicts.values())
    assert verdicts["same"] >= 0.5 * total, verdicts
    statuses = collections.Counter(
        item["result"]["status"]
        for _, theirs, _, _ in campaign
        for item in theirs["outcome"].get("many", [theirs["outcome"]])
        if "result" in item
    )
    assert set(statuses) == {"supported", "refuted", "contested", "insufficient", "incomplete"}, statuses
    kinds = collections.Counter((case["kind"], how) for case, _, _, how in campaign)
    for kind in ("verify", "verify_sync", "verify_many", "bundle", "bundle_sync"):
        assert any(k == kind for k, _ in kinds), kinds
    assert any(how == "MemoryBundle dump" for _, how in kinds), kinds
    rechecks = sum(
        1
        for _, theirs, _, _ in campaign
        for item in theirs["outcome"].get("many", [theirs["outcome"]])
        if "result" in item and item["result"]["localized_assessments"]
    )
    assert rechecks >= 100, rechecks


def test_the_project_scores_what_prme_scores(campaign: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any], str]]) -> None:
    """Same premises to the model: every pair PRME scored, the project scored too (the eager schedule may
    score more, ahead of need; staged single-claim calls score exactly the same pairs)."""
    for case, theirs, ours, how in campaign:
        if "result" not in theirs["outcome"] or "result" not in ours["outcome"]:
            continue
        prme_pairs = collections.Counter(tuple(pair) for call in theirs["calls"] for pair in call)
        project_pairs = collections.Counter(tuple(pair) for call in ours["calls"] for pair in call)
        if case["schedule"] == "staged" and case["kind"] != "verify_many":
            assert prme_pairs == project_pairs, (case["id"], how)
        else:
            assert set(prme_pairs) <= set(project_pairs), (case["id"], how)
