"""Realistic benchmark workloads: memory-style passages and the claims checked against them.

The passages read like what an assistant's memory store holds about a
software team -- decisions, schedules, roles, incidents, budgets, status
notes -- and the claims are the short declarative statements a verifier is
asked about (their templates: :mod:`bench.texts`). Everything is generated
from a fixed seed with :mod:`random`, so every run (and every backend) sees
byte-identical pairs (:func:`workload_digest` proves it across processes).

Because the benchmark model has random weights, *which* groups the decision
procedure scores cannot come from the model. Each :class:`ClaimCase` is
therefore designed to take one path of the decision procedure
(docs/decision.md §3) -- decided by a single passage, refuted by a single
passage, supported only by a pair, or insufficient after all 28 pairs -- and
carries the scripted probabilities that make the real
decision layer take exactly that path (:meth:`ClaimCase.scripted_scores`).
The scorer-level comparison sends each backend the pairs that path needs
(:meth:`Workload.stages`); the schedule measurements run the real
:class:`verifier.ClaimVerifier` with a scorer that does the real model work
and then answers with the scripted probabilities
(:class:`bench.measure.CostedScriptedScorer`).

Workloads (bench/README.md, "What is measured"):

* ``a`` -- one claim, 8 passages, decided by singles (8 pairs);
* ``b`` -- one claim, 8 passages, needs all 28 pairs (8 + 28 pairs);
* ``c`` -- 200 claims x 8 passages, mixed paths (default mix in :data:`DEFAULT_MIX`);
* ``d`` -- one claim, 8 long meeting-note passages near the 512-token limit;
* ``e`` -- realistic longer text: :data:`DEFAULT_CLAIMS_E` claims x 8
  encyclopedia-style passages of one to three sentences (places, people,
  dates, numbers, organisations; :func:`bench.texts.encyclopedia_case`), one-sentence
  claims, the same path mix as (c). It has its own digest
  (:func:`workload_digest` of ``{"e": ...}``), so the digest of a-d stays what it was.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Optional, Sequence
from uuid import UUID

from verifier.decision.guards import join_premise

from .texts import DISTRACTORS, FACTS, LONG_EXTRA, PAIR_FACTS, REFUTABLE, encyclopedia_case, slots

__all__ = [
    "checked_workloads",
    "base_digest",
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
    "workload_e",
    "DEFAULT_CLAIMS_E",
    "REALISTIC_KEYS",
    "all_workloads",
    "mix_with_pair_share",
    "check_paths",
    "workload_digest",
    "PASSAGES_PER_CLAIM",
]

#: A (premise, hypothesis) pair; the hypothesis is always the claim.
Pair = tuple[str, str]
#: The decision path a case is designed to take (docs/decision.md §3).
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
#: Claims in workload (e): its pairs carry about twice (c)'s tokens, so half the claims keep its run near (c)'s.
DEFAULT_CLAIMS_E = 100
#: Workloads with their own digest, kept out of the a-d digest (``workload_digest``).
REALISTIC_KEYS = ("e",)
#: Passages per claim in every workload.
PASSAGES_PER_CLAIM = 8

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
        path: the designed decision path (docs/decision.md §3).
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
        """(``[E1] a\\n[E2] b``, claim) for every 2-combination in caller order (docs/decision.md §3)."""
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
        key: ``"a"``, ``"b"``, ``"c"``, ``"d"`` or ``"e"``.
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


def _fill(template: str, values: Mapping[str, str]) -> str:
    return template.format(**values)


def _distractors(rng: random.Random, count: int, avoid: set[str]) -> list[str]:
    """``count`` distinct distractor passages not in ``avoid``."""
    found: list[str] = []
    while len(found) < count:
        text = _fill(rng.choice(DISTRACTORS), slots(rng))
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
    pool = LONG_EXTRA if core is not None else LONG_EXTRA + DISTRACTORS
    while sum(len(s) + 1 for s in sentences) < target_chars:
        template = rng.choice(pool)
        sentence = _fill(template, slots(rng))
        if sentence not in sentences:
            sentences.append(sentence)
    if core is not None:
        sentences.insert(len(sentences) // 2, core)
    return " ".join(sentences)


def _case(rng: random.Random, path: Path, number: int, *, long_chars: Optional[int] = None) -> ClaimCase:
    """One claim case of ``path`` with 8 passages; references ``m<number>-<i>``."""
    filled = slots(rng)
    texts: list[Optional[str]] = [None] * PASSAGES_PER_CLAIM
    deciding: tuple[int, ...] = ()
    if path == "single-support":
        passage, claim = rng.choice(FACTS)
        deciding = (rng.randrange(PASSAGES_PER_CLAIM),)
        texts[deciding[0]] = _fill(passage, filled)
    elif path == "single-refute":
        passage, claim = rng.choice(REFUTABLE)
        deciding = (rng.randrange(PASSAGES_PER_CLAIM),)
        texts[deciding[0]] = _fill(passage, filled)
    elif path == "pair-support":
        first, second, claim = rng.choice(PAIR_FACTS)
        deciding = tuple(sorted(rng.sample(range(PASSAGES_PER_CLAIM), 2)))
        texts[deciding[0]] = _fill(first, filled)
        texts[deciding[1]] = _fill(second, filled)
    else:  # insufficient: a related passage that does not settle the claim, plus distractors
        passage, claim = rng.choice(FACTS)
        claim = "{p2} approved the {project} {event} plan."
        texts[rng.randrange(PASSAGES_PER_CLAIM)] = _fill(passage, filled)
    claim_text = _fill(claim, filled)
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


def _shuffled_paths(claims: int, mix: Mapping[Path, float], rng: random.Random) -> list[Path]:
    """``claims`` paths in the proportions of ``mix`` (largest remainders), shuffled with ``rng``.

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
    paths: list[Path] = [path for path, count in counts.items() for _ in range(count)]
    rng.shuffle(paths)
    return paths


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
    rng = random.Random(f"bench-c-{seed}")
    paths = _shuffled_paths(claims, mix, rng)
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


def _encyclopedia(rng: random.Random, path: Path, number: int) -> ClaimCase:
    texts, claim, deciding = encyclopedia_case(rng, path, PASSAGES_PER_CLAIM)
    passages = tuple(
        Passage(reference=f"e{number}-{index}", memory_id=_uuid(rng), text=text) for index, text in enumerate(texts)
    )
    return ClaimCase(claim=claim, passages=passages, path=path, deciding=deciding)


def workload_e(claims: int = DEFAULT_CLAIMS_E, *, mix: Mapping[Path, float] = DEFAULT_MIX, seed: int = 1) -> Workload:
    """(e) ``claims`` claims x 8 encyclopedia-style passages (1-3 sentences), one-sentence claims.

    Realistic longer text (bench/texts.py: invented places, people, dates,
    numbers, organisations; no external data) with the path mix of (c)
    (``mix``, default :data:`DEFAULT_MIX`); scored and timed like (c). With the
    real DeBERTa-v3 tokenizer its pairs run from ~30 to ~220 tokens, median ~80
    (singles ~60, pair premises ~150; bench's token profile reports the figures).

    Raises:
        ValueError: ``claims`` < 1 or a negative / all-zero mix.
    """
    rng = random.Random(f"bench-e-{seed}")
    paths = _shuffled_paths(claims, mix, rng)
    cases = tuple(_encyclopedia(rng, path, number) for number, path in enumerate(paths))
    share = sum(case.needs_pairs for case in cases) / len(cases)
    title = f"{claims} claims x 8 encyclopedia passages (1-3 sentences), mixed ({share:.0%} need the 28 pairs)"
    return Workload("e", title, cases)


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


def workload_digest(workloads: Mapping[str, Workload]) -> str:
    """sha256 over every pair of every workload, in order (proves every side got the same pairs)."""
    digest = hashlib.sha256()
    for key in sorted(workloads):
        for stage in workloads[key].stages():
            for premise, hypothesis in stage:
                digest.update(premise.encode("utf-8") + b"\x00" + hypothesis.encode("utf-8") + b"\x01")
        digest.update(b"\x02")
    return digest.hexdigest()


def checked_workloads(
    claims: int,
    pair_share: Optional[float],
    digest: Optional[str],
    *,
    claims_e: Optional[int] = None,
    digest_e: Optional[str] = None,
) -> "dict[str, Workload] | str":
    """The workloads for ``claims`` (and ``pair_share``), or an error line when their digest is not ``digest``.

    Every process of one comparison rebuilds the workloads and checks this
    digest, so all of them score byte-identical pairs. With ``claims_e``,
    workload (e) is added (same mix) and checked against ``digest_e``, its own
    digest; ``digest`` always covers a-d only (:func:`base_digest`).
    """
    mix = mix_with_pair_share(pair_share) if pair_share is not None else None
    workloads = all_workloads(claims, mix) if mix is not None else all_workloads(claims)
    found = workload_digest(workloads)
    if digest is not None and found != digest:
        return f"workload digest {found} != expected {digest}"
    if claims_e is not None:
        e = workload_e(claims_e, mix=mix) if mix is not None else workload_e(claims_e)
        found_e = workload_digest({"e": e})
        if digest_e is not None and found_e != digest_e:
            return f"workload (e) digest {found_e} != expected {digest_e}"
        workloads["e"] = e
    return workloads


def base_digest(workloads: Mapping[str, Workload]) -> str:
    """:func:`workload_digest` of the a-d workloads only (those in :data:`REALISTIC_KEYS` have their own)."""
    return workload_digest({key: value for key, value in workloads.items() if key not in REALISTIC_KEYS})
