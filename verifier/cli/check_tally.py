"""What ``check`` counts and says as it reads the records: problems, each distinct one once, and hints first.

New-user trial (issue 50): strict-policy output checked without the policy options printed 82 problem
lines, two per record ("configuration_sha256 does not match the given configuration", "the replay gives
schema_version 3, the record says 4"), and the hint that explained them all came last. Now the hint comes
before the first such problem, each distinct problem is printed once (with where it was first found), and
one line per problem says how many more records have it.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

from ..types import STRICT_SCHEMA_VERSION, ClaimVerification
from .errors import err

__all__ = ["CONFIG_PROBLEMS", "MAX_REPORTED", "Tally"]

#: Distinct problems printed one by one before the rest are only counted.
MAX_REPORTED = 50
#: The problems a record made with other decision options has (``check_result``'s words).
CONFIG_PROBLEMS = ("configuration_sha256 does not match the given configuration",
                   "model or requested_revision differs from the given configuration")
_POLICIES = {"entailment_policy", "refutation_policy"}


@dataclass
class Tally:
    checked: int = 0
    bad: int = 0
    reported: int = 0
    errors: int = 0
    envelopes: int = 0
    resolved: int = 0
    config_mismatch: bool = False
    #: Records with a configuration problem whose own fields show the strict policy made them.
    strict_made: int = 0
    notes: "collections.Counter[str]" = field(default_factory=collections.Counter)
    #: How many valid ``--inputs`` rows no record answers, in words (``""``: none, or ``--every-row`` made them problems).
    unanswered: str = ""
    #: Valid ``--inputs`` rows no record answers, under ``--every-row`` (each a problem).
    missing: int = 0
    #: Error rows that do not report their ``--inputs`` row (each a problem).
    wrong_errors: int = 0
    #: The entries of a results directory that are not read, in words (``""``: none).
    unread: str = ""
    #: How often each distinct problem was found, and where first.
    seen: "collections.Counter[str]" = field(default_factory=collections.Counter)
    first: dict[str, str] = field(default_factory=dict)
    hinted: set[str] = field(default_factory=set)

    def problem(self, where: str, text: str) -> None:
        """``where: text``, printed the first time ``text`` is found (at most :data:`MAX_REPORTED` distinct
        ones); later ones are counted for :meth:`repeats`."""
        self.seen[text] += 1
        if self.seen[text] > 1:
            return
        self.first[text] = where
        if self.reported < MAX_REPORTED:
            err(f"{where}: {text}")
        self.reported += 1

    def repeats(self) -> None:
        """One line per problem found more than once, then how many distinct ones were not shown."""
        for text, count in self.seen.items():
            if count > 1 and list(self.first).index(text) < MAX_REPORTED:
                more = count - 1
                err(f"... and {more} more with the same problem (first: {self.first[text]}): {text}")
        if self.reported > MAX_REPORTED:
            err(f"... and {self.reported - MAX_REPORTED} more distinct problems")

    def configuration(self, where: str, result: ClaimVerification, problems: tuple[str, ...], given: list[str]) -> None:
        """Count a record with a configuration problem; before the first of each kind, the hint that explains it."""
        if not any(problem in CONFIG_PROBLEMS for problem in problems):
            return
        self.config_mismatch = True
        # schema 4 comes from the strict policy or a caller's as_of; without as_of, or with rulings, it is strict
        strict = result.schema_version == STRICT_SCHEMA_VERSION and (result.as_of is None or bool(result.strict_rulings))
        self.strict_made += strict
        if strict and not _POLICIES & set(given):
            if "strict" not in self.hinted:
                self.hinted.add("strict")
                err(
                    f"hint: {where} was made under the strict policy (schema_version 4, strict_rulings): give "
                    "--entailment-policy and --refutation-policy as verify had them (e.g. --entailment-policy "
                    "strict --refutation-policy strict); without them its configuration_sha256 cannot match"
                )
        elif "options" not in self.hinted:
            self.hinted.add("options")
            named = ", ".join("--" + name.replace("_", "-") for name in given) or "none"
            err(
                "hint: configuration_sha256 is recomputed from the default decision configuration with each record's "
                f"model and requested_revision, changed by the decision options given (given: {named}); a record made "
                "with other options (e.g. --entailment-threshold) checks out only when they are given here"
            )

    def say_notes(self) -> None:
        """What was not verified, each once with how many records it concerns."""
        for note, count in self.notes.items():
            err(f"note: {count} record{'s' if count != 1 else ''}: {note}")
        if self.resolved:
            err(f"note: {self.resolved} record{'s' if self.resolved != 1 else ''}: resolved_revision (what ran) is covered by no digest")
        if self.envelopes:
            err(f"note: {self.envelopes} envelope{'s' if self.envelopes != 1 else ''}: the id and line beside a result are covered by no digest")
        if self.unanswered:
            err(f"note: {self.unanswered}")
        if self.unread:
            err(f"note: {self.unread}")
