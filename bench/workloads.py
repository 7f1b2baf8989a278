"""Realistic benchmark workloads: memory-style passages and the claims checked against them.

The passages read like what an assistant's memory store holds about a
software team -- decisions, schedules, roles, incidents, budgets, status
notes -- and the claims are the short declarative statements a verifier is
asked about. Everything is generated from a fixed seed with :mod:`random`, so
every run (and every backend) sees byte-identical pairs.

Because the benchmark model has random weights, *which* groups the decision
procedure scores cannot come from the model. Each :class:`ClaimCase` is
therefore designed to take one path of SPEC §3 -- decided by a single passage,
refuted by a single passage, supported only by a pair, or insufficient after
all 28 pairs -- and carries the scripted probabilities that make the real
decision layer take exactly that path (:meth:`ClaimCase.scripted_scores`).
The scorer-level comparison sends each backend the pairs that path needs
(:meth:`Workload.stages`); the schedule measurements run the real
:class:`verifier.ClaimVerifier` with a scorer that does the real model work
and then answers with the scripted probabilities (``bench.worker``).

Workloads (DESIGN.md / issue 6):

* ``a`` -- one claim, 8 passages, decided by singles (8 pairs);
* ``b`` -- one claim, 8 passages, needs all 28 pairs (8 + 28 pairs);
* ``c`` -- 200 claims x 8 passages, mixed paths (default mix in :data:`DEFAULT_MIX`);
* ``d`` -- one claim, 8 long meeting-note passages near the 512-token limit.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Optional, Sequence
from uuid import UUID

from verifier.guards import join_premise

__all__ = [
    "Pair",
    "Path",
    "NEUTRAL",
    "SUPPORT",
    "PAIR_SUPPORT",
    "REFUTE",
    "DEFAULT_MIX",
    "DEFAULT_CLAIMS",
    "Passage",
    "ClaimCase",
    "Workload",
    "workload_a",
    "workload_b",
    "workload_c",
    "workload_d",
    "all_workloads",
    "mix_with_pair_share",
    "check_paths",
    "PASSAGES_PER_CLAIM",
]

#: A (premise, hypothesis) pair; the hypothesis is always the claim.
Pair = tuple[str, str]
#: The decision path a case is designed to take (SPEC §3).
Path = Literal["single-support", "single-refute", "pair-support", "insufficient"]

#: Scripted (entailment, contradiction, neutral) of a passage or group that decides nothing.
NEUTRAL: tuple[float, float, float] = (0.03, 0.02, 0.95)
#: Scripted probabilities of the one passage that supports a single-support claim.
SUPPORT: tuple[float, float, float] = (0.95, 0.02, 0.03)
#: Scripted probabilities of the one pair that supports a pair-support claim.
PAIR_SUPPORT: tuple[float, float, float] = (0.91, 0.02, 0.07)
#: Scripted probabilities of the one passage that refutes a single-refute claim.
REFUTE: tuple[float, float, float] = (0.02, 0.95, 0.03)

#: Default share of each path in workload (c). 80 % of claims are decided by
#: singles; 20 % need all 28 pairs (half of those end supported by a pair, half
#: insufficient). Pairs dominate the cost (a pair premise is two passages), so
#: this share sets the run time; ``python -m bench compare --pair-share`` changes it.
DEFAULT_MIX: Mapping[Path, float] = {
    "single-support": 0.65,
    "single-refute": 0.15,
    "pair-support": 0.10,
    "insufficient": 0.10,
}
#: Claims in workload (c).
DEFAULT_CLAIMS = 200
#: Passages per claim in every workload.
PASSAGES_PER_CLAIM = 8

_PEOPLE = (
    "Ravi", "Tessa", "Alice", "Nadia", "Marco", "Priya", "Jonas", "Mei", "Omar", "Lena",
    "Sven", "Aiko", "Diego", "Farah", "Kwame", "Ingrid", "Tomas", "Yusuf", "Camille", "Hana",
)
_PROJECTS = (
    "Atlas", "Borealis", "Cobalt", "Driftwood", "Ember", "Falcon", "Granite", "Harbor",
    "Juniper", "Keystone", "Lumen", "Meridian", "Northwind", "Orchid", "Pylon", "Quartz",
)
_SYSTEMS = (
    "ingestion pipeline", "billing service", "search index", "mobile app", "auth gateway",
    "metrics dashboard", "notification service", "data warehouse", "release tooling",
    "feature-flag service", "payments API", "customer portal",
)
_MIGRATIONS = (
    ("Airflow", "Dagster"), ("Jenkins", "GitHub Actions"), ("MySQL", "Postgres"),
    ("Elasticsearch", "OpenSearch"), ("Datadog", "Grafana"), ("RabbitMQ", "Kafka"),
    ("Heroku", "Kubernetes"), ("Redis", "Valkey"), ("Terraform", "OpenTofu"),
)
_TOOLS = ("Linear", "Notion", "Confluence", "a shared Google Doc", "GitHub Discussions")
_EVENTS = (
    "launch", "design review", "security review", "retrospective", "beta release",
    "migration cutover", "customer demo", "planning session", "load test",
)
_TEAMS = ("platform", "growth", "data", "infrastructure", "payments", "mobile")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
_MONTHS = (
    "January", "February", "March", "April", "June", "July", "August", "September",
    "October", "November", "December",
)  # "May" is left out: SPEC §9 notes the literal guards read the modal "may" as a month.
_TIMES = ("09:00", "09:30", "10:00", "11:15", "13:00", "14:00", "15:30", "16:45")
_ROOMS = ("the Orion room", "the third-floor lab", "the Lisbon office", "the main video call", "room 4B")
_CITIES = ("Berlin", "Lisbon", "Toronto", "Nairobi", "Osaka", "Austin", "Melbourne")


def _slots(rng: random.Random) -> dict[str, str]:
    """One random filling of every template slot."""
    p1, p2 = rng.sample(_PEOPLE, 2)
    old, new = rng.choice(_MIGRATIONS)
    weekday, other_weekday = rng.sample(_WEEKDAYS, 2)
    low = rng.randrange(80, 400, 5)
    return {
        "p1": p1,
        "p2": p2,
        "project": rng.choice(_PROJECTS),
        "system": rng.choice(_SYSTEMS),
        "old": old,
        "new": new,
        "tool": rng.choice(_TOOLS),
        "event": rng.choice(_EVENTS),
        "team": rng.choice(_TEAMS),
        "weekday": weekday,
        "other_weekday": other_weekday,
        "month": rng.choice(_MONTHS),
        "day": str(rng.randint(2, 28)),
        "time": rng.choice(_TIMES),
        "room": rng.choice(_ROOMS),
        "city": rng.choice(_CITIES),
        "pct": str(rng.randrange(20, 95, 5)),
        "n": str(rng.randint(4, 45)),
        "k": str(rng.randrange(40, 400, 10)),
        "low": str(low),
        "high": str(low + rng.randrange(60, 500, 10)),
    }


# Fact templates: (passage, claim it supports). Passages and claims are written
# so the supporting passage passes the entailment guard (SPEC §4.4): no
# speech-act mode the claim lacks, no negated clause.
_FACTS: tuple[tuple[str, str], ...] = (
    (
        "{p1} owns the {system} for {project}; {p2} is the backup reviewer and covers on-call "
        "handoffs while {p1} is travelling.",
        "{p1} owns the {project} {system}.",
    ),
    (
        "On {month} {day}, the {project} team moved the {system} from {old} to {new} after the {old} "
        "workers kept timing out during nightly loads.",
        "The {project} {system} runs on {new}.",
    ),
    (
        "The {project} {event} is on {weekday}, {month} {day} at {time} UTC in {room}; {p1} will "
        "present the rollout checklist.",
        "The {project} {event} is on {weekday}.",
    ),
    (
        "As of {month} {day}, the {project} migration is {pct} percent complete, and the remaining "
        "work is the {system} cutover plus a final load test.",
        "The {project} migration is {pct} percent complete.",
    ),
    (
        "During the {weekday} deploy, the {system} returned 502 errors for about {n} minutes after a "
        "config push, and {p1} rolled the change back within the hour.",
        "{p1} rolled back the {system} change on {weekday}.",
    ),
    (
        "The {project} budget for the {system} rewrite was approved at {k} thousand dollars, covering "
        "two contractors through the end of {month}.",
        "The {system} rewrite for {project} has an approved budget.",
    ),
    (
        "{p1} is on call for the {system} during the week of {month} {day}, and {p2} takes over the "
        "following Monday morning.",
        "{p1} is on call for the {system} that week.",
    ),
    (
        "After the index rebuild, p95 latency of the {system} dropped from {high} ms to {low} ms, and "
        "error rates stayed below 0.1 percent for the whole week.",
        "The {system} got faster after the index rebuild.",
    ),
)

# Refutable facts: (passage, claim with a different weekday). The refutation
# guard (SPEC §4.6) lets the scripted contradiction through because the claim
# and the passage name different weekdays.
_REFUTABLE: tuple[tuple[str, str], ...] = (
    (
        "The {project} {event} is on {weekday}, {month} {day} at {time} UTC in {room}; {p1} will "
        "present the rollout checklist.",
        "The {project} {event} is on {other_weekday}.",
    ),
    (
        "During the {weekday} deploy, the {system} returned 502 errors for about {n} minutes after a "
        "config push, and {p1} rolled the change back within the hour.",
        "The {system} outage happened during the {other_weekday} deploy.",
    ),
)

# Facts only a pair supports: (passage A, passage B, claim).
_PAIR_FACTS: tuple[tuple[str, str, str], ...] = (
    (
        "{p1} leads the {project} project and chairs its weekly sync meeting.",
        "The lead of the {project} project signs off on every {system} release before it ships.",
        "{p1} signs off on {system} releases.",
    ),
    (
        "{p1} moved to the {team} team in {month} after the reorganisation.",
        "Everyone on the {team} team rotates through the {system} on-call, one week at a time.",
        "{p1} rotates through the {system} on-call.",
    ),
    (
        "The {project} {event} takes place in {city} this quarter.",
        "{p2} attends every {project} {event} in person and takes the notes.",
        "{p2} travels to {city} for the {project} {event}.",
    ),
)

# Distractors: plausible memories about other things (some carry speech-act
# modes; they are scripted neutral, so that only makes the guards work).
_DISTRACTORS: tuple[str, ...] = (
    "{p1} prefers written design docs over meetings and asked that every {project} proposal be "
    "reviewed in {tool} first.",
    "The {team} team sits on the third floor of the {city} office, next to the platform group.",
    "{p2} wants the {project} dashboards moved to {new} before the end of {month}.",
    "Standups for {project} start at {time} UTC; {p1} posts the agenda in the team channel the day before.",
    "The {system} has a 99.9 percent availability target, measured monthly by the {team} team.",
    "{p1} suggested splitting the {system} into two services, and the idea is still under discussion.",
    "The {project} retro on {weekday} listed flaky integration tests and slow code review as the top issues.",
    "Access to the {system} production database goes through a break-glass role owned by {p2}.",
    "{p1} and {p2} pair on the {project} onboarding guide every {weekday} afternoon.",
    "The {team} team tracks its work in {tool} and closes the sprint every second {weekday}.",
    "Customer feedback on the {project} beta asked for offline mode and a simpler export flow.",
    "The {project} style guide uses British spelling in user-facing text and ISO dates everywhere.",
    "{p2} booked {room} for the {project} {event}; the invite went out on {month} {day}.",
    "Invoices for the {system} vendor are paid on the first {weekday} of each month by the finance team.",
    "The {project} release notes for version {n}.{pct} mention a new audit log and faster search.",
    "{p1} is drafting a proposal to retire the {old} cluster once the {new} rollout is stable.",
)

_LONG_EXTRA: tuple[str, ...] = (
    "The meeting opened with a review of the incident backlog, which has shrunk by a third since {month}.",
    "{p2} walked through the capacity forecast for the {system}, including expected storage growth.",
    "Several people raised the cost of the {old} licences, which renew at the end of the quarter.",
    "The group agreed to keep the weekly sync at {time} UTC and to record it for the {city} office.",
    "{p1} summarised the customer escalations from the last two weeks and their root causes.",
    "The {team} team shared a draft of the new runbook for the {system} failover drill.",
    "Action items were assigned in {tool}, with owners and due dates for each one.",
    "There was a short discussion of hiring: two backend roles and one site reliability role are open.",
    "The security team reminded everyone to rotate personal access tokens before the audit.",
    "{p2} noted that the staging environment still lags production by two minor versions.",
)


@dataclass(frozen=True)
class Passage:
    """One evidence passage (a memory) as sent to the verifier."""

    reference: str
    memory_id: UUID
    text: str

    def as_evidence(self) -> dict[str, Any]:
        """The :class:`verifier.ClaimEvidence` fields of this passage."""
        return {"reference": self.reference, "memory_id": self.memory_id, "text": self.text}


@dataclass(frozen=True)
class ClaimCase:
    """One claim with its passages, designed to take one decision path.

    Attributes:
        claim: the hypothesis.
        passages: the evidence in caller order (8 in every workload).
        path: the designed SPEC §3 path.
        deciding: indices of the passage or pair that decides (empty when insufficient).
    """

    claim: str
    passages: tuple[Passage, ...]
    path: Path
    deciding: tuple[int, ...] = ()

    @property
    def needs_pairs(self) -> bool:
        """Whether the staged procedure scores the 28 pairs (nothing decides on singles)."""
        return self.path in ("pair-support", "insufficient")

    @property
    def expected_status(self) -> str:
        """The status the decision layer reaches under the scripted scores."""
        return {
            "single-support": "supported",
            "pair-support": "supported",
            "single-refute": "refuted",
            "insufficient": "insufficient",
        }[self.path]

    def single_pairs(self) -> list[Pair]:
        """(passage, claim) for every passage, in caller order."""
        return [(passage.text, self.claim) for passage in self.passages]

    def group_pairs(self) -> list[Pair]:
        """(``[E1] a\\n[E2] b``, claim) for every 2-combination in caller order (SPEC §3.6)."""
        return [
            (join_premise([first.text, second.text]), self.claim)
            for first, second in itertools.combinations(self.passages, 2)
        ]

    def stages(self) -> list[list[Pair]]:
        """The scorer calls the staged procedure makes: singles, then pairs when needed."""
        stages = [self.single_pairs()]
        if self.needs_pairs:
            stages.append(self.group_pairs())
        return stages

    def eager_pairs(self) -> list[Pair]:
        """The one call the eager schedule makes: singles plus every pair."""
        return self.single_pairs() + self.group_pairs()

    def scripted_scores(self) -> dict[Pair, tuple[float, float, float]]:
        """Probabilities that make the decision layer take :attr:`path` (others: :data:`NEUTRAL`)."""
        scores: dict[Pair, tuple[float, float, float]] = {}
        if self.path == "single-support":
            scores[(self.passages[self.deciding[0]].text, self.claim)] = SUPPORT
        elif self.path == "single-refute":
            scores[(self.passages[self.deciding[0]].text, self.claim)] = REFUTE
        elif self.path == "pair-support":
            first, second = (self.passages[i].text for i in self.deciding)
            scores[(join_premise([first, second]), self.claim)] = PAIR_SUPPORT
        return scores

    def evidence(self) -> list[dict[str, Any]]:
        """The passages as :class:`verifier.ClaimEvidence` field mappings."""
        return [passage.as_evidence() for passage in self.passages]


@dataclass(frozen=True)
class Workload:
    """A named set of claim cases.

    Attributes:
        key: ``"a"``, ``"b"``, ``"c"`` or ``"d"``.
        title: one-line description for reports.
        cases: the claims.
        latency: whether the workload is timed per claim (p50/p95 over repetitions)
            rather than once as a throughput run.
    """

    key: str
    title: str
    cases: tuple[ClaimCase, ...]
    latency: bool = field(default=False)

    def stages(self) -> list[list[Pair]]:
        """Scorer calls of the staged many-claims driver: every claim's singles in one
        call, then the pairs of every claim that needs them in a second call."""
        singles = [pair for case in self.cases for pair in case.single_pairs()]
        groups = [pair for case in self.cases if case.needs_pairs for pair in case.group_pairs()]
        return [singles, groups] if groups else [singles]

    def pairs(self) -> list[Pair]:
        """Every pair the staged driver scores, in call order."""
        return [pair for stage in self.stages() for pair in stage]

    def path_counts(self) -> dict[str, int]:
        """How many cases take each path."""
        counts: dict[str, int] = {}
        for case in self.cases:
            counts[case.path] = counts.get(case.path, 0) + 1
        return counts


def _uuid(rng: random.Random) -> UUID:
    return UUID(int=rng.getrandbits(128), version=4)


def _fill(template: str, slots: Mapping[str, str]) -> str:
    return template.format(**slots)


def _distractors(rng: random.Random, count: int, avoid: set[str]) -> list[str]:
    """``count`` distinct distractor passages not in ``avoid``."""
    found: list[str] = []
    while len(found) < count:
        text = _fill(rng.choice(_DISTRACTORS), _slots(rng))
        if text not in avoid and text not in found:
            found.append(text)
    return found


def _long_passage(rng: random.Random, core: Optional[str], target_chars: int) -> str:
    """A meeting-notes passage of about ``target_chars`` characters, with ``core`` in the middle.

    A passage holding ``core`` (the deciding fact) is built from the plain
    note sentences only, so it passes the entailment guard as a whole; the
    others also draw on the distractors (speech acts included).
    """
    sentences: list[str] = []
    pool = _LONG_EXTRA if core is not None else _LONG_EXTRA + _DISTRACTORS
    while sum(len(s) + 1 for s in sentences) < target_chars:
        template = rng.choice(pool)
        sentence = _fill(template, _slots(rng))
        if sentence not in sentences:
            sentences.append(sentence)
    if core is not None:
        sentences.insert(len(sentences) // 2, core)
    return " ".join(sentences)


def _case(rng: random.Random, path: Path, number: int, *, long_chars: Optional[int] = None) -> ClaimCase:
    """One claim case of ``path`` with 8 passages; references ``m<number>-<i>``."""
    slots = _slots(rng)
    texts: list[Optional[str]] = [None] * PASSAGES_PER_CLAIM
    deciding: tuple[int, ...] = ()
    if path == "single-support":
        passage, claim = rng.choice(_FACTS)
        deciding = (rng.randrange(PASSAGES_PER_CLAIM),)
        texts[deciding[0]] = _fill(passage, slots)
    elif path == "single-refute":
        passage, claim = rng.choice(_REFUTABLE)
        deciding = (rng.randrange(PASSAGES_PER_CLAIM),)
        texts[deciding[0]] = _fill(passage, slots)
    elif path == "pair-support":
        first, second, claim = rng.choice(_PAIR_FACTS)
        deciding = tuple(sorted(rng.sample(range(PASSAGES_PER_CLAIM), 2)))
        texts[deciding[0]] = _fill(first, slots)
        texts[deciding[1]] = _fill(second, slots)
    else:  # insufficient: a related passage that does not settle the claim, plus distractors
        passage, claim = rng.choice(_FACTS)
        claim = "{p2} approved the {project} {event} plan."
        texts[rng.randrange(PASSAGES_PER_CLAIM)] = _fill(passage, slots)
    claim_text = _fill(claim, slots)
    if long_chars is not None:
        texts = [_long_passage(rng, text, long_chars) for text in texts]
    else:
        fillers = iter(_distractors(rng, sum(text is None for text in texts), {t for t in texts if t}))
        texts = [text if text is not None else next(fillers) for text in texts]
    passages = tuple(
        Passage(reference=f"m{number}-{index}", memory_id=_uuid(rng), text=str(text))
        for index, text in enumerate(texts)
    )
    return ClaimCase(claim=claim_text, passages=passages, path=path, deciding=deciding)


def workload_a(seed: int = 1) -> Workload:
    """(a) One claim, 8 passages, decided by a single passage (8 pairs)."""
    rng = random.Random(f"bench-a-{seed}")
    return Workload("a", "1 claim x 8 passages, decided by singles", (_case(rng, "single-support", 0),), latency=True)


def workload_b(seed: int = 1) -> Workload:
    """(b) One claim, 8 passages, supported only by a pair: 8 singles + 28 pairs."""
    rng = random.Random(f"bench-b-{seed}")
    return Workload("b", "1 claim x 8 passages, needs all 28 pairs", (_case(rng, "pair-support", 0),), latency=True)


def workload_c(
    claims: int = DEFAULT_CLAIMS,
    *,
    mix: Mapping[Path, float] = DEFAULT_MIX,
    seed: int = 1,
) -> Workload:
    """(c) ``claims`` claims x 8 passages with paths in the proportions of ``mix``.

    The number of cases of each path is rounded from ``mix`` (largest
    remainders), and the cases are shuffled with the seed.

    Raises:
        ValueError: ``claims`` < 1 or a negative / all-zero mix.
    """
    if claims < 1:
        raise ValueError(f"claims must be >= 1, got {claims}")
    weights = {path: float(share) for path, share in mix.items()}
    total = sum(weights.values())
    if any(share < 0 for share in weights.values()) or total <= 0:
        raise ValueError(f"mix must have non-negative shares with a positive sum, got {dict(mix)}")
    exact = {path: claims * share / total for path, share in weights.items()}
    counts = {path: int(value) for path, value in exact.items()}
    for path in sorted(exact, key=lambda p: exact[p] - counts[p], reverse=True)[: claims - sum(counts.values())]:
        counts[path] += 1
    rng = random.Random(f"bench-c-{seed}")
    paths: list[Path] = [path for path, count in counts.items() for _ in range(count)]
    rng.shuffle(paths)
    cases = tuple(_case(rng, path, number) for number, path in enumerate(paths))
    share = sum(case.needs_pairs for case in cases) / len(cases)
    title = f"{claims} claims x 8 passages, mixed ({share:.0%} need the 28 pairs)"
    return Workload("c", title, cases)


def workload_d(seed: int = 1, *, target_chars: int = 2520) -> Workload:
    """(d) One claim, 8 long meeting-note passages near the 512-token limit (8 pairs).

    ``target_chars`` ~ 2520 characters gives premises of roughly 490-530
    DeBERTa-v3 tokens; with the claim some pairs reach 512 and are truncated.
    """
    rng = random.Random(f"bench-d-{seed}")
    case = _case(rng, "single-support", 0, long_chars=target_chars)
    return Workload("d", "1 claim x 8 long passages near 512 tokens", (case,), latency=True)


def all_workloads(claims: int = DEFAULT_CLAIMS, mix: Mapping[Path, float] = DEFAULT_MIX) -> dict[str, Workload]:
    """Workloads a, b, c, d keyed by letter."""
    return {
        "a": workload_a(),
        "b": workload_b(),
        "c": workload_c(claims, mix=mix),
        "d": workload_d(),
    }


def mix_with_pair_share(pair_share: float) -> dict[Path, float]:
    """:data:`DEFAULT_MIX` rescaled so that ``pair_share`` of claims need the 28 pairs.

    Raises:
        ValueError: ``pair_share`` outside [0, 1].
    """
    if not 0.0 <= pair_share <= 1.0:
        raise ValueError(f"pair share must be in [0, 1], got {pair_share}")
    singles = DEFAULT_MIX["single-support"] + DEFAULT_MIX["single-refute"]
    pairs = DEFAULT_MIX["pair-support"] + DEFAULT_MIX["insufficient"]
    return {
        "single-support": DEFAULT_MIX["single-support"] / singles * (1 - pair_share),
        "single-refute": DEFAULT_MIX["single-refute"] / singles * (1 - pair_share),
        "pair-support": DEFAULT_MIX["pair-support"] / pairs * pair_share,
        "insufficient": DEFAULT_MIX["insufficient"] / pairs * pair_share,
    }


def check_paths(workload: Workload, cases: Optional[Sequence[ClaimCase]] = None) -> list[str]:
    """Run the real decision layer with the scripted scores; list cases that miss their path.

    Returns:
        One message per case whose status, or whose use of pairs, differs from
        its design (empty when every case takes its designed path).
    """
    from verifier import ClaimVerifier, ScriptedScorer

    problems: list[str] = []
    for index, case in enumerate(cases if cases is not None else workload.cases):
        scorer = ScriptedScorer(case.scripted_scores(), default=NEUTRAL)  # type: ignore[arg-type]
        result = ClaimVerifier(scorer=scorer).verify_sync(case.claim, case.evidence())
        used_pairs = any(len(score.memory_ids) > 1 for score in result.group_scores)
        if result.status.value != case.expected_status or used_pairs != case.needs_pairs:
            problems.append(
                f"{workload.key}[{index}] {case.path}: status {result.status.value} "
                f"(expected {case.expected_status}), pairs scored: {used_pairs}; claim {case.claim!r}"
            )
    return problems
