"""The strict policy (docs/policy.md): vetoes and corroborated additions on top of the reference decisions.

The strict policy never scores anything itself and never makes a recheck of
its own: :mod:`verifier.decision.procedure` runs the reference procedure (the
``speech_act_guarded`` and ``explicit_corroboration`` decisions, with the same
model calls and the same staging), and :func:`decide` then

* removes supports (``entailment_policy="strict"``),
* removes refutations, but only when no support survives, and adds model
  refutations that the reference guard dropped when a strict rule corroborates
  them (``refutation_policy="strict"``),

and records a :class:`Ruling` for every group it changed. So every strict
support is a reference support, and a strict ``supported`` is always a
reference ``supported`` (docs/policy.md, "Why no support is ever added").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable, Optional, Sequence

import numpy as np

from .guards import (
    PassageView,
    Provenance,
    exact_negation,
    has_negation_or_correction_cue,
    is_compatible,
    modality_preserved,
)
from .guards import concrete_values as reference_values
from .guards import values_conflict as reference_values_conflict
from .strict_frames import (Finding, has_correction_cue, introduces, is_framing_line, mode_cue, points_back, points_forward,
                            support_targets, withdrawal)
from .strict_reach import conflict_carrier, strict_exact_negation, truncation_matters
from .strict_scope import (SPEECH_ACT, Sentence, negated_claim_unsupported, negation_problem, negation_unrelated, sentences,
                           speech_act_problem)
from .strict_text import (
    claim_cue,
    claim_modes,
    double_negation_only,
    has_total_cue,
    is_negated,
    is_past_claim,
    modes_compatible,
    normalise,
    polarity_clauses,
    reading_claim,
    stems,
    strict_modes,
    strict_tokens,
    strict_values,
    values_conflict,
    view,
)
from ..types import ClaimEvidence, ClaimVerificationError, LifecycleState

__all__ = [
    "Support",
    "Refutation",
    "Dropped",
    "Ruling",
    "Outcome",
    "TruncationQuery",
    "decide",
    "strict_exact_negation",
]

#: ``truncated(pairs) -> list[bool]``: which (premise, claim) pairs the model sees cut (docs/policy.md).
TruncationQuery = Callable[[list[tuple[str, str]]], Sequence[bool]]


@dataclass(frozen=True)
class Support:
    """A reference support: the group, its entailment, whether it is a recheck, the premise scored."""

    group: tuple[int, ...]
    probability: float
    localized: bool
    premise: str
    segments: tuple[tuple[int, ...], ...] = ()


@dataclass(frozen=True)
class Refutation:
    """A refutation: the group, its contradiction, whether its basis is the explicit negation."""

    group: tuple[int, ...]
    probability: float
    explicit: bool


@dataclass(frozen=True)
class Dropped:
    """A raw model contradiction (≥ threshold) that the reference refutation guard dropped."""

    group: tuple[int, ...]
    probability: float


@dataclass(frozen=True)
class Ruling:
    """What one strict rule did to one group, the sentence the decision rested on (the support
    sentence, docs/policy.md "Scope") and the trigger's text."""

    action: str
    rule: str
    group: tuple[int, ...]
    localized: bool = False
    sentence: str = ""
    trigger: str = ""


@dataclass
class Outcome:
    """The strict decisions: surviving and added groups, and every ruling in order."""

    supports: list[Support] = field(default_factory=list)
    refutations: list[Refutation] = field(default_factory=list)
    rulings: list[Ruling] = field(default_factory=list)


def _aware(value: datetime) -> datetime:
    """A naive timestamp is read as UTC (docs/policy.md, "Inputs")."""
    return value if value.tzinfo is not None and value.utcoffset() is not None else value.replace(tzinfo=timezone.utc)


def _validity(passage: ClaimEvidence, as_of: Optional[datetime], claim_years: Optional[frozenset[int]] = None) -> Optional[str]:
    """``expired`` or ``not_yet_valid`` as of ``as_of``. ``claim_years`` is given for a claim about
    the past: an expired passage still speaks for the time it was valid, so it is not expired for a
    claim without a year, nor for one whose years all lie in the passage's window (docs/policy.md,
    "Support vetoes", ``expired``)."""
    if as_of is None:
        return None
    moment = _aware(as_of)
    if passage.valid_to is not None and _aware(passage.valid_to) < moment:
        if claim_years is not None and _window_covers(passage, claim_years):
            return None
        return "expired"
    if passage.valid_from is not None and _aware(passage.valid_from) > moment:
        return "not_yet_valid"
    return None


def _window_covers(passage: ClaimEvidence, years: frozenset[int]) -> bool:
    if not years:
        return True
    start = passage.valid_from or passage.event_time
    if start is None or passage.valid_to is None:
        return False
    return all(start.year <= year <= passage.valid_to.year for year in years)


def _claim_years(claim: str) -> Optional[frozenset[int]]:
    """The years a claim about the past names (``frozenset()`` for none); ``None`` for a claim
    that is not about the past."""
    if not is_past_claim(claim):
        return None
    numbers = strict_values(claim).get("number", frozenset())
    return frozenset(int(n) for n in numbers if n.isdigit() and 1900 <= int(n) <= 2100)


def _provenance(passage: ClaimEvidence) -> Provenance:
    return Provenance(passage.epistemic_type, passage.lifecycle_state)


class _Rules:
    """The per-claim facts every rule reads, computed once."""

    def __init__(self, claim: str, evidence: Sequence[ClaimEvidence], as_of: Optional[datetime]) -> None:
        self.claim = claim
        self.evidence = evidence
        self.as_of = as_of
        self.modes = claim_modes(claim)
        self.tokens = strict_tokens(claim)
        self.negated = is_negated(claim)
        self.total = has_total_cue(claim)
        self.years = _claim_years(claim)
        #: What the claim asserts: its values are compared; a negated claim's denied values
        #: ("not released in 1999") are not (docs/policy.md, "Scope").
        self.asserted = " ".join(clause.text for clause in polarity_clauses(claim) if not clause.negated)
        self._values: dict[tuple[int, ...], dict[str, frozenset[str]]] = {}
        self.claim_values = strict_values(self.asserted)

    def passages(self, group: tuple[int, ...]) -> list[ClaimEvidence]:
        return [self.evidence[index] for index in group]

    def texts(self, group: tuple[int, ...]) -> list[str]:
        return [passage.text for passage in self.passages(group)]

    def joined(self, group: tuple[int, ...]) -> str:
        return "\n".join(self.texts(group))

    def validity(self, group: tuple[int, ...], *, lifecycle: bool) -> Optional[str]:
        for passage in self.passages(group):
            problem = _validity(passage, self.as_of, self.years)
            if problem:
                return problem
            if lifecycle and passage.lifecycle_state == LifecycleState.CONTESTED:
                return "contested_lifecycle"
        return None

    def modality(self, group: tuple[int, ...]) -> bool:
        """Strict modality preserved by the group's passages (refutations: every clause sharing a
        content token with the claim counts)."""
        return all(
            is_compatible(_provenance(passage), self.modes)
            and modes_compatible(strict_modes(view(passage.text), self.tokens), self.modes)
            for passage in self.passages(group)
        )

    def values(self, group: tuple[int, ...]) -> dict[str, frozenset[str]]:
        """:func:`strict_values` of the group's joined passages, of the claim's kinds (the only ones compared), read once."""
        if group not in self._values:
            self._values[group] = strict_values(self.joined(group), frozenset(self.claim_values))
        return self._values[group]

    def value_conflict(self, group: tuple[int, ...]) -> bool:
        if not self.claim_values:
            return False  # nothing to compare: the passages' values are not read
        ignore, joined = self.total and not has_total_cue(self.joined(group)), self.joined(group)
        return values_conflict(self.asserted, joined, ignore_numbers=ignore, passage_values=self.values(group))

    def framing_dropped(self, found: Sequence[Sentence]) -> Optional[tuple[int, str]]:
        """A framing sentence the recheck dropped that governs a support sentence: a line ending in
        ":" (or pointing at what follows) that introduces it, or a sentence next to it that points
        at it ("… I'm not sure about this."). The support sentence and the frame."""
        targets = set(support_targets(stems(self.claim), found))
        for index, sentence in enumerate(found):
            if sentence.kept or not is_framing_line(sentence.text):
                continue
            if index + 1 in targets and points_forward(found, index, index + 1):
                return index + 1, sentence.text
            if index - 1 in targets and points_back(found, index, index - 1, self.modes):
                return index - 1, sentence.text
            # A header over the next line, or over the list that follows it.
            other = index + 1
            while other < len(found) and introduces(found, index, other):
                if other in targets:
                    return other, sentence.text
                other += 1
        return None

    def support_sentence(self, found: Sequence[Sentence]) -> str:
        """The sentence a support rests on: the kept sentence with the most claim stems."""
        kept, claim_stems = [sentence for sentence in found if sentence.kept] or list(found), stems(self.claim)
        return max(kept, key=lambda sentence: len(sentence.words & claim_stems)).text if kept else ""

    # ---------------------------------------------------------------- supports

    def support_veto(self, support: Support, dropped: Sequence[Dropped]) -> Optional[Finding]:
        """The first support veto that fires (docs/policy.md, "Support vetoes"), with the support
        sentence and the trigger."""
        passages = self.passages(support.group)
        kept = support.segments if support.localized else None
        found = sentences(self.texts(support.group), kept)
        carrier = self.support_sentence(found)
        problem = self.validity(support.group, lifecycle=True)
        if problem:
            return Finding(problem, carrier, self.validity_trigger(support.group, problem))
        for index, passage in enumerate(passages):
            if (not kept or kept[index]) and not is_compatible(_provenance(passage), self.modes):
                provenance = _provenance(passage)
                return Finding(SPEECH_ACT, carrier, f"epistemic_type={provenance.epistemic_type}, "
                               f"lifecycle_state={provenance.lifecycle_state}")  # fmt: skip
        speech = speech_act_problem(self.claim, self.modes, found)
        if speech is not None and speech.rule == SPEECH_ACT:
            return speech
        elsewhere = self.asked_elsewhere(support, found)
        if elsewhere is not None:
            return Finding(SPEECH_ACT, carrier, elsewhere)
        if self.negated:
            if negated_claim_unsupported(self.claim, found):
                negated = [clause.text.strip() for clause in polarity_clauses(self.claim) if clause.negated]
                return Finding("strict_negation", carrier, "; ".join(negated) or self.claim)
        else:
            negation = negation_problem(self.claim, found)
            if negation is not None:
                return negation
        if speech is not None:
            return speech
        frame = self.framing_dropped(found) if support.localized else None
        if frame is not None:
            return Finding("framing_dropped", found[frame[0]].text, frame[1])
        withdrawn = withdrawal(found, stems(self.claim), self.modes)
        if withdrawn is not None:
            return Finding("strict_withdrawal", found[withdrawn[0]].text, withdrawn[1])
        if self.value_conflict(support.group):
            return Finding("value_mismatch", carrier, self.value_trigger(support.group))
        for item in dropped:
            if self.real_contradiction(item, support):
                others = ", ".join(self.evidence[index].reference for index in item.group if index not in support.group)
                return Finding("dropped_contradiction", carrier, f"contradiction {item.probability:.3f} from {others}")
        return None

    def validity_trigger(self, group: tuple[int, ...], problem: str) -> str:
        for passage in self.passages(group):
            if problem == "contested_lifecycle" and passage.lifecycle_state == LifecycleState.CONTESTED:
                return f"{passage.reference}: lifecycle_state=contested"
            if problem == "expired" and passage.valid_to is not None:
                return f"{passage.reference}: valid_to={passage.valid_to.isoformat()}"
            if problem == "not_yet_valid" and passage.valid_from is not None:
                return f"{passage.reference}: valid_from={passage.valid_from.isoformat()}"
        return problem

    def value_trigger(self, group: tuple[int, ...]) -> str:
        claim_values = strict_values(self.asserted)
        passage_values = self.values(group)
        kinds = [kind for kind in claim_values if kind in passage_values and claim_values[kind] != passage_values[kind]]
        return "; ".join(
            f"{kind}: claim {', '.join(sorted(claim_values[kind]))}, passage {', '.join(sorted(passage_values[kind])[:8])}"
            for kind in kinds
        ) or "values differ"

    def asked_elsewhere(self, support: Support, found: Sequence[Sentence]) -> Optional[str]:
        """A support that names nothing of the claim, while another passage holds the claim's
        content only as a question, a hedge or an unapproved document ("Ravi asked whether the
        backup ran on Friday." beside "Checking now."): the support stands on the model alone.
        The other passage's trigger and sentence."""
        claim_stems = stems(self.claim)
        if not claim_stems or any(sentence.words & claim_stems for sentence in found):
            return None
        for index, passage in enumerate(self.evidence):
            if index in support.group:
                continue
            problem = speech_act_problem(self.claim, self.modes, sentences([passage.text]))
            if problem is not None and problem.rule == SPEECH_ACT:
                return f"{passage.reference}: {problem.trigger} ({problem.sentence})"
        return None

    def real_contradiction(self, item: Dropped, support: Support) -> bool:
        """A dropped model contradiction from valid passages outside the support that keep the
        claim's reference speech act (over normalised text) and have a sentence about the claim
        (:func:`conflict_carrier`): a real conflict the reference ignored."""
        others = tuple(index for index in item.group if index not in support.group)
        if not others or self.validity(item.group, lifecycle=False):
            return False
        views = [PassageView(normalise(p.text), _provenance(p)) for p in self.passages(item.group)]
        return modality_preserved(normalise(self.claim), views) and conflict_carrier(self.claim, self.texts(others))

    # ---------------------------------------------------------------- refutations

    def refutation_veto(self, refutation: Refutation) -> Optional[str]:
        problem = self.validity(refutation.group, lifecycle=False)
        if problem:
            return problem
        passages = self.passages(refutation.group)
        if not self.modality(refutation.group):
            return "strict_speech_act"
        strict_negation = strict_exact_negation(self.claim, passages)
        if refutation.explicit:
            return None if strict_negation else "negation_scope"
        views = [PassageView(p.text, _provenance(p)) for p in passages]
        if self.negated and negation_unrelated(self.claim, self.texts(refutation.group)):
            return "negation_scope"
        if has_negation_or_correction_cue(self.claim) and not double_negation_only(self.claim):
            return None
        if exact_negation(self.claim, views) and not reference_values_conflict(self.claim, self.joined(refutation.group)):
            return None if strict_negation or claim_cue(self.claim) else "negation_scope"
        # The reference's only corroboration was a value difference.
        if strict_negation or claim_cue(self.claim) or self.value_conflict(refutation.group):
            return None
        if has_correction_cue(self.joined(refutation.group)):
            return None
        if has_negation_or_correction_cue(self.claim):
            return "negation_scope"  # the claim's only negation is a double one ("never fails to")
        if self.total:
            return "aggregate_total"
        claim_values = reference_values(self.claim)
        passage_values = reference_values(self.joined(refutation.group))
        if all(values <= passage_values.get(kind, values) for kind, values in claim_values.items()):
            return "value_superset"
        return "value_format"

    def refutation_evidence(self, group: tuple[int, ...], rule: str, probability: float) -> tuple[str, str]:
        """The sentence a refutation rests on (the one with the most claim stems) and the trigger
        of ``rule`` (docs/policy.md, "Refutation rules")."""
        found = sentences(self.texts(group))
        sentence = self.support_sentence(found)
        if rule in ("expired", "not_yet_valid"):
            return sentence, self.validity_trigger(group, rule)
        if rule == "strict_speech_act":
            return sentence, mode_cue(view(self.joined(group)), self.modes)
        if rule in ("value_superset", "value_format", "aggregate_total"):
            return sentence, self.value_trigger(group)
        negated = [c.text.strip() for s in found for c in polarity_clauses(s.text) if c.negated]
        if rule == "negation_scope":
            return sentence, negated[0] if negated else "no strict exact negation"
        return sentence, f"model contradiction {probability:.3f}; " + (
            self.value_trigger(group) if self.value_conflict(group) else negated[0] if negated else "claim cue"
        )

    def corroborated(self, item: Dropped) -> bool:
        """A dropped model contradiction that a strict rule corroborates (so it may refute)."""
        if self.validity(item.group, lifecycle=False) or not self.modality(item.group):
            return False
        if self.value_conflict(item.group) or strict_exact_negation(self.claim, self.passages(item.group)):
            return True
        return claim_cue(self.claim) and not (self.negated and negation_unrelated(self.claim, self.texts(item.group)))


def _truncated(query: Optional[TruncationQuery], pairs: list[tuple[str, str]]) -> list[bool]:
    if query is None or not pairs:
        return [False] * len(pairs)
    try:
        flags = list(query(pairs))
    except ClaimVerificationError:
        raise
    except Exception as exc:  # a scorer's failure is an inference failure (docs/decision.md §1)
        raise ClaimVerificationError(f"scorer.truncated failed: {type(exc).__name__}: {exc}") from exc
    if len(flags) != len(pairs) or not all(isinstance(flag, (bool, np.bool_)) for flag in flags):
        raise ClaimVerificationError(
            f"scorer.truncated must return {len(pairs)} booleans, got {flags!r:.200}"
        )
    return [bool(flag) for flag in flags]


def decide(
    claim: str,
    evidence: Sequence[ClaimEvidence],
    *,
    entailment: bool,
    refutation: bool,
    supports: Sequence[Support],
    refutations: Sequence[Refutation],
    dropped: Sequence[Dropped],
    as_of: Optional[datetime] = None,
    truncated: Optional[TruncationQuery] = None,
) -> Outcome:
    """Apply the strict rules (docs/policy.md) to the reference decisions of one verification.

    Args:
        claim, evidence: the validated claim and passages.
        entailment: ``entailment_policy == "strict"`` (support vetoes apply).
        refutation: ``refutation_policy == "strict"`` (refutation vetoes and additions apply).
        supports, refutations: the reference's decisions over every stage, in stage order.
        dropped: raw contradictions the reference guard dropped, in stage order.
        as_of: the caller's verification date (validity rules), or ``None``.
        truncated: the scorer's ``truncated`` method, or ``None`` (no truncation information).

    Raises:
        ClaimVerificationError: ``truncated`` failed or returned something other than one
            boolean per pair.
    """
    with reading_claim(claim):  # quotes are read for this claim's person (docs/policy.md, "Normalisation")
        return _decide(claim, evidence, entailment, refutation, supports, refutations, dropped, as_of, truncated)


def _decide(claim: str, evidence: Sequence[ClaimEvidence], entailment: bool, refutation: bool, supports: Sequence[Support],
            refutations: Sequence[Refutation], dropped: Sequence[Dropped], as_of: Optional[datetime],
            truncated: Optional[TruncationQuery]) -> Outcome:  # fmt: skip
    rules = _Rules(claim, evidence, as_of)
    outcome = Outcome()
    kept: list[Support] = []
    for support in supports:
        finding = rules.support_veto(support, dropped) if entailment else None
        if finding is None:
            kept.append(support)
        else:
            outcome.rulings.append(
                Ruling("vetoed_support", finding.rule, support.group, support.localized, finding.sentence, finding.trigger)
            )
    if entailment and kept:
        flags = _truncated(truncated, [(support.premise, claim) for support in kept])
        survivors = []
        for support, flag in zip(kept, flags):
            if flag and truncation_matters(claim, rules.modes, support.premise):
                sentence = rules.support_sentence(sentences([support.premise]))
                outcome.rulings.append(
                    Ruling("vetoed_support", "truncated_pair", support.group, support.localized, sentence,
                           "the scorer reports the pair cut to the model's maximum length")
                )  # fmt: skip
            else:
                survivors.append(support)
        kept = survivors
    outcome.supports = kept
    if not refutation:
        outcome.refutations = list(refutations)
        return outcome
    for refuting in refutations:
        # Removing a refutation next to a surviving support would reveal a support: never.
        rule = None if kept else rules.refutation_veto(refuting)
        if rule is None:
            outcome.refutations.append(refuting)
        else:
            sentence, trigger = rules.refutation_evidence(refuting.group, rule, refuting.probability)
            outcome.rulings.append(Ruling("vetoed_refutation", rule, refuting.group, False, sentence, trigger))
    for item in dropped:
        if rules.corroborated(item):
            outcome.refutations.append(Refutation(item.group, item.probability, explicit=False))
            sentence, trigger = rules.refutation_evidence(item.group, "strict_corroboration", item.probability)
            outcome.rulings.append(Ruling("added_refutation", "strict_corroboration", item.group, False, sentence, trigger))
    return outcome
