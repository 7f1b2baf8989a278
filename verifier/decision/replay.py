"""Replaying a stored result: does its decision follow from its own recorded scores? (docs/audit.md, "Replay").

A result's digests prove only that it is self-consistent: anyone who edits
its status and recomputes ``result_sha256`` has a consistent record.
:func:`replay` runs the real decision procedure
(:class:`~verifier.decision.procedure.Verification`, the same code that made
the record; no second copy of the rules) over the record's claim, the
passages it was made from and its decision configuration, answering every
premise the procedure asks for with the score the record carries for it. The
replayed result must equal the record field for field; a premise whose score
the record does not carry is reported as missing.

The guards read the passages' text and provenance, which a record does not
carry (only their digest). Without the passages, :func:`score_bounds` checks
what holds for *any* passages: a support's or a model refutation's score
crosses its threshold, a recheck was asked only for a group that entailed,
and a limitation names a score that crossed its threshold.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence
from uuid import UUID

import numpy as np

from . import audit
from .guards import join_premise
from .procedure import Verification
from ..types import ClaimEvidence, ClaimVerification, ClaimVerificationConfig, ClaimVerificationStatus

__all__ = ["ReplayedPair", "ReplayOutcome", "replay", "score_bounds"]

#: The decision fields a replay compares, in the order they are reported.
_FIELDS = (
    "schema_version", "status", "supporting_group", "refuting_group", "supporting_basis", "refuting_basis",
    "group_scores", "localized_assessments", "limitations", "strict_rulings", "model_called",
)


@dataclass(frozen=True)
class ReplayedPair:
    """One (premise, hypothesis) pair the replay asked for, and the score the record carries for it.

    Attributes:
        premise: the premise text (a passage, joined passages, or a recheck's kept segments).
        hypothesis: the claim.
        recorded: (entailment, contradiction, neutral) as recorded, float64.
        localized: whether it is a localized recheck (recorded in ``localized_assessments``).
    """

    premise: str
    hypothesis: str
    recorded: tuple[float, float, float]
    localized: bool


@dataclass(frozen=True)
class ReplayOutcome:
    """What :func:`replay` found.

    Attributes:
        problems: one sentence per way the record differs from the replay (empty: it follows from its scores).
        notes: what the replay took from the record rather than deciding it.
        pairs: every pair scored in the replay, in the procedure's order (what ``check --rescore`` re-scores).
    """

    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    pairs: tuple[ReplayedPair, ...] = field(default=())


class _Missing(Exception):
    """The procedure asked for a premise whose score the record does not carry."""


def _row(item: object) -> tuple[float, float, float]:
    return (float(item.entailment), float(item.contradiction), float(item.neutral))  # type: ignore[attr-defined]


class _RecordedScores:
    """The record's scores, handed out in the order the procedure asks for them.

    Group scores are keyed by their premise (rebuilt from the passages the
    group names), rechecks by ``premise_sha256``; each key is a queue, so two
    groups with the same premise text receive their own recorded scores in
    record order, as the original run did.
    """

    def __init__(self, result: ClaimVerification, evidence: Sequence[ClaimEvidence]) -> None:
        self.claim = result.claim
        index = {item.memory_id: position for position, item in enumerate(evidence)}
        self.groups: dict[str, collections.deque[tuple[float, float, float]]] = collections.defaultdict(collections.deque)
        self.unknown: list[tuple[UUID, ...]] = []
        for score in result.group_scores:
            if not all(memory_id in index for memory_id in score.memory_ids):
                self.unknown.append(score.memory_ids)
                continue
            premise = join_premise([evidence[index[memory_id]].text for memory_id in score.memory_ids])
            self.groups[premise].append(_row(score))
        self.rechecks: dict[str, collections.deque[tuple[float, float, float]]] = collections.defaultdict(collections.deque)
        for item in result.localized_assessments:
            if item.model_called and item.premise_sha256 is not None:
                self.rechecks[item.premise_sha256].append(_row(item))
        self.pairs: list[ReplayedPair] = []

    def answer(self, premises: Sequence[str]) -> np.ndarray:
        rows = []
        for premise in premises:
            queue = self.groups.get(premise)
            localized = False
            if not queue:
                queue, localized = self.rechecks.get(audit.sha256_hex(premise)), True
            if not queue:
                raise _Missing(premise)
            row = queue.popleft()
            self.pairs.append(ReplayedPair(premise, self.claim, row, localized))
            rows.append(row)
        return np.asarray(rows, dtype=np.float64).reshape(len(rows), 3)

    def left_over(self) -> int:
        return sum(len(queue) for queue in self.groups.values()) + sum(len(queue) for queue in self.rechecks.values())


def _describe(premise: str) -> str:
    shown = premise if len(premise) <= 60 else premise[:57] + "..."
    return f"{shown!r} (sha256 {audit.sha256_hex(premise)[:12]}...)"


def _truncation_from_rulings(result: ClaimVerification, evidence: Sequence[ClaimEvidence]) -> Callable[[list[tuple[str, str]]], list[bool]]:
    """A truncation query answering from the record's own ``truncated_pair`` rulings (truncation is not recorded)."""
    index = {item.memory_id: position for position, item in enumerate(evidence)}
    digests: set[str] = set()
    for ruling in result.strict_rulings:
        if ruling.rule != "truncated_pair":
            continue
        if ruling.localized:
            digests.update(
                item.premise_sha256 for item in result.localized_assessments
                if item.memory_ids == ruling.memory_ids and item.premise_sha256 is not None
            )
        elif all(memory_id in index for memory_id in ruling.memory_ids):
            digests.add(audit.sha256_hex(join_premise([evidence[index[m]].text for m in ruling.memory_ids])))

    def query(pairs: list[tuple[str, str]]) -> list[bool]:
        return [audit.sha256_hex(premise) in digests for premise, _ in pairs]

    return query


def _shown(value: object) -> str:
    if isinstance(value, ClaimVerificationStatus):
        return value.value
    if isinstance(value, tuple) and value and isinstance(value[0], UUID):
        return "[" + ", ".join(str(item) for item in value) + "]"
    if isinstance(value, tuple):
        return f"{len(value)} item{'s' if len(value) != 1 else ''}" if value and not isinstance(value[0], str) else repr(list(value))
    return repr(value)


def replay(
    result: ClaimVerification,
    evidence: Sequence[ClaimEvidence],
    config: ClaimVerificationConfig,
    *,
    requires_complete_set: Optional[bool] = None,
    truncated: Optional[Callable[[list[tuple[str, str]]], Sequence[bool]]] = None,
) -> ReplayOutcome:
    """Replay the decision procedure over ``result``'s recorded scores and compare.

    Args:
        result: the stored result.
        evidence: the passages it was made from, caller order (their digest must
            be the record's ``evidence_sha256``; the caller checks it).
        config: the decision configuration it was made with.
        requires_complete_set: the input row's flag; ``None``: taken from the
            record (its status is ``incomplete``), and said in a note.
        truncated: for the strict policy, which pairs the model sees cut (a
            scorer's ``truncated``); ``None``: taken from the record's own
            ``truncated_pair`` rulings, and said in a note.

    Returns:
        A :class:`ReplayOutcome`: ``problems`` empty when the replay gives exactly
        the record's status, groups, bases, scores, rechecks, limitations and
        strict rulings; a premise the procedure asks for whose score the record
        does not carry is a problem that names it.
    """
    notes: list[str] = []
    if requires_complete_set is None:
        requires_complete_set = result.status is ClaimVerificationStatus.INCOMPLETE
        if requires_complete_set:
            notes.append("status incomplete taken from the record (whether the claim requires the complete set is an input flag a record does not carry)")
    strict = "strict" in (config.entailment_policy, config.refutation_policy)
    if strict and truncated is None:
        truncated = _truncation_from_rulings(result, evidence)
        # said for every strict record, also one without such a ruling: a forged one may have dropped it
        notes.append("which pairs the model saw cut is taken from the record's truncated_pair rulings (truncation is "
                     "not recorded; check --rescore decides it with the model)")
    scores = _RecordedScores(result, evidence)
    problems: list[str] = []
    if scores.unknown:
        problems.append(
            f"{len(scores.unknown)} group score(s) name memory ids that are not among the passages "
            f"(first: {_shown(scores.unknown[0])})"
        )
    verification = Verification(
        result.claim, tuple(evidence), config, as_of=result.as_of, truncated=truncated if strict else None
    )
    generator = verification.run(requires_complete_set)
    try:
        request = next(generator)
        while True:
            request = generator.send(scores.answer(request))
    except StopIteration as stop:
        replayed: ClaimVerification = stop.value
    except _Missing as missing:
        problems.append(f"the replay needs a score the record does not carry: premise {_describe(str(missing))}")
        return ReplayOutcome(tuple(problems), tuple(notes), tuple(scores.pairs))
    for name in _FIELDS:
        mine, theirs = getattr(replayed, name), getattr(result, name)
        if mine != theirs:
            if name in ("group_scores", "localized_assessments", "strict_rulings") and len(mine) == len(theirs):
                first = next(i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b)
                problems.append(f"{name} item {first + 1} is not what the procedure gives for the recorded scores")
            else:
                problems.append(f"the replay gives {name} {_shown(mine)}, the record says {_shown(theirs)}")
    left = scores.left_over()
    if left and not any(problem.startswith("the replay gives group_scores") for problem in problems):
        problems.append(f"the record carries {left} score(s) the procedure never asks for")
    if not problems and replayed.result_sha256 != result.result_sha256:
        problems.append("the replayed result_sha256 differs from the record's")  # pragma: no cover - fields cover it
    return ReplayOutcome(tuple(problems), tuple(notes), tuple(scores.pairs))


def score_bounds(result: ClaimVerification, config: ClaimVerificationConfig) -> list[str]:
    """What the recorded scores must show whatever the passages' text (the replay without the passages).

    For any passages, the procedure of docs/decision.md §3 gives: a support's
    entailment (or its recheck's) and a model refutation's contradiction cross
    their thresholds; a group is rechecked only when its entailment crossed and
    its guard blocked it (so never under ``model_only``, and a rechecked group
    is no ``model_entailment`` support); a recheck that did not entail sets
    ``uncorroborated_model_entailment``; and, outside the strict policy, an
    entailment that crossed without a recheck, or a recheck that entailed, is a
    support, and a contradiction that crossed is a refutation unless
    ``uncorroborated_model_contradiction`` says its guard dropped it. Returns
    one sentence per violation.
    """
    problems: list[str] = []
    groups = {score.memory_ids: score for score in result.group_scores}
    rechecks = {item.memory_ids: item for item in result.localized_assessments}
    et, ct = config.entailment_threshold, config.contradiction_threshold
    strict = "strict" in (config.entailment_policy, config.refutation_policy)
    limits = set(result.limitations)
    supported = result.status in (ClaimVerificationStatus.SUPPORTED, ClaimVerificationStatus.CONTESTED)
    refuted = result.status in (ClaimVerificationStatus.REFUTED, ClaimVerificationStatus.CONTESTED)
    if result.supporting_group:
        if result.supporting_basis == "localized_model_entailment":
            item = rechecks.get(result.supporting_group)
            if item is None or item.entailment is None or item.entailment < et:
                problems.append(f"the supporting group's recheck entailment is below entailment_threshold {et} (or it has none)")
        else:
            score = groups.get(result.supporting_group)
            if score is None or score.entailment < et:
                problems.append(f"the supporting group's recorded entailment is below entailment_threshold {et}")
            if result.supporting_group in rechecks:
                problems.append("the supporting group was rechecked (its guard blocked it), so its basis cannot be model_entailment")
    if result.refuting_group and result.refuting_basis == "model_contradiction" and config.refutation_policy != "strict":
        score = groups.get(result.refuting_group)
        if score is None or score.contradiction < ct:
            problems.append(f"the refuting group's recorded contradiction is below contradiction_threshold {ct}")
    if rechecks and config.entailment_policy == "model_only":
        problems.append("localized rechecks under entailment_policy model_only (which has no guard to block a support)")
    for memory_ids, item in rechecks.items():
        score = groups.get(memory_ids)
        if score is None or score.entailment < et:
            problems.append(f"a localized recheck of a group whose recorded entailment is below entailment_threshold {et}")
            break
    if any(not item.model_called or (item.entailment or 0.0) < et for item in rechecks.values()) and (
        "uncorroborated_model_entailment" not in limits
    ):
        problems.append("a localized recheck that did not entail, without the uncorroborated_model_entailment limitation")
    if "uncorroborated_model_entailment" in limits and not any(s.entailment >= et for s in result.group_scores):
        problems.append(f"limitation uncorroborated_model_entailment without a recorded entailment >= {et}")
    if "uncorroborated_model_contradiction" in limits and not any(s.contradiction >= ct for s in result.group_scores):
        problems.append(f"limitation uncorroborated_model_contradiction without a recorded contradiction >= {ct}")
    if not strict:
        entails = any(s.entailment >= et and s.memory_ids not in rechecks for s in result.group_scores) or any(
            item.entailment is not None and item.entailment >= et for item in rechecks.values()
        )
        if entails and not supported:
            problems.append(f"a recorded entailment >= {et} that no guard blocked (no recheck), or a recheck that entailed, "
                            f"is a support, but the status is {result.status.value}")
        contradicts = any(s.contradiction >= ct for s in result.group_scores)
        if contradicts and not refuted and "uncorroborated_model_contradiction" not in limits:
            problems.append(f"a recorded contradiction >= {ct} is a refutation unless its guard dropped it "
                            f"(uncorroborated_model_contradiction), but the status is {result.status.value}")
        if config.refutation_policy == "model_only" and "uncorroborated_model_contradiction" in limits:
            problems.append("limitation uncorroborated_model_contradiction under refutation_policy model_only (no guard drops one)")
    return problems
