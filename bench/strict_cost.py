"""What the strict policy costs beside the reference policies on long passages (docs/policy.md, "Cost").

``python -m bench.strict_cost [--size BYTES] [--rounds N]`` verifies one claim against one
adversarial passage (every line a trigger the strict rules read: status labels and headings,
headers ending in ":" over lists, quotes opened after "said:", reported questions split over
lines, unapproved documents with pronoun predicates, double negations, comma-heavy clauses)
under the reference policies and under the strict policy, with a scripted scorer that entails
every premise (so the reference supports, by recheck, and every strict veto runs), and prints
the fastest and the median wall time of each (interleaved runs) and their ratio; then the same
on ordinary prose (the plain passages of tests/data/prose_corpus.json, joined). It measures;
it asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from pathlib import Path
from typing import Sequence

from verifier import ClaimEvidence, ClaimVerifier, ScriptedScorer
from verifier.types import ClaimVerificationConfig

CLAIM = "The release shipped on Friday."
#: One block of the adversarial passage; repeated up to the wanted size.
BLOCK = (
    "Draft:\n"
    "DRAFT - not approved\n"
    "Unapproved draft for the press release:\n"
    "The release shipped on Friday, the team said, and the notes, the docs, the site, the blog were updated.\n"
    "Omar said: \"The release shipped on Friday. QA signed off. The vendor has not shipped the fix.\n"
    "Rumours we have not been able to confirm:\n"
    "- The release shipped on Friday.\n"
    "- The proposed budget was rejected.\n"
    "Ravi asked whether\n"
    "the release shipped on Friday\n"
    "The proposal sets the release for Friday. It was not approved. Draft proposal from J. Not approved by Finance.\n"
    "The team never fails to ship on Friday, and it has never, in years, failed to ship; it is not only fast but safe.\n"
    "I'm not sure about this. These are the following notes: this, that, those, above, below.\n"
)


_NAMES = "Omar Ravi Tessa Priya Nadia Alice Marco Ines Felix Hugo Clara Mei".split()


def passage(size: int) -> str:
    """``size`` characters of :data:`BLOCK`, each copy with its own names and numbers, so that no
    cache of either policy sees a text twice."""
    blocks, length, number = [], 0, 0
    while length < size:
        name = _NAMES[number % len(_NAMES)] + str(number)
        block = BLOCK.replace("Omar", name).replace("Ravi", name + "r").replace("J.", f"J{number}.")
        block = block.replace("notes", f"notes {number}").replace("the fix", f"fix {number}")
        blocks.append(block)
        length += len(block)
        number += 1
    return "".join(blocks)[:size]


def prose(size: int) -> str:
    """``size`` characters of the ordinary passages of tests/data/prose_corpus.json, one after another."""
    rows = json.loads((Path(__file__).resolve().parents[1] / "tests" / "data" / "prose_corpus.json").read_text("utf-8"))
    text = "\n".join(row["passage"] for row in rows if row["kind"] == "plain")
    return (text * (size // len(text) + 1))[:size]


def measure(text: str, config: ClaimVerificationConfig, rounds: int) -> list[float]:
    evidence = [ClaimEvidence(reference="m1", memory_id=uuid.uuid5(uuid.NAMESPACE_URL, "m1"), text=text)]
    times = []
    for _ in range(rounds):
        verifier = ClaimVerifier(config, scorer=ScriptedScorer(default=(0.95, 0.02)))
        start = time.perf_counter()
        verifier.verify_sync(CLAIM, evidence)
        times.append(time.perf_counter() - start)
    return times


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m bench.strict_cost``."""
    parser = argparse.ArgumentParser(prog="python -m bench.strict_cost", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size", type=int, nargs="+", default=[2_500, 100_000], help="passage sizes in bytes")
    parser.add_argument("--rounds", type=int, default=5, help="runs per policy")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    reference = ClaimVerificationConfig()
    strict = ClaimVerificationConfig(entailment_policy="strict", refutation_policy="strict")
    for (kind, make), size in [(kind, size) for kind in (("adversarial", passage), ("prose", prose)) for size in args.size]:
        text = make(size)
        cold = measure(text, strict, 1)[0]  # also warms imports
        # Interleaved, so that a busy machine slows both alike; the fastest run is the least disturbed.
        ref_times, own_times = [], []
        for _ in range(args.rounds):
            ref_times += measure(text, reference, 1)
            own_times += measure(text, strict, 1)
        ref, own = min(ref_times), min(own_times)
        print(
            f"{kind:>11} {len(text.encode()):>7} bytes: strict's first run {cold:.3f} s; reference {ref:.3f} s (median {statistics.median(ref_times):.3f}), "
            f"strict {own:.3f} s (median {statistics.median(own_times):.3f}), ratio {own / ref:.2f} "
            f"(medians {statistics.median(own_times) / statistics.median(ref_times):.2f})"
        )


if __name__ == "__main__":
    main()
