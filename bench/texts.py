"""The text of the benchmark workloads: template slots, facts, distractors, meeting notes.

Passages read like what an assistant's memory store holds about a software
team -- decisions, schedules, roles, incidents, budgets, status notes -- and
claims are short declarative statements. :mod:`bench.workloads` fills these
templates from a seeded :class:`random.Random` (:func:`slots`), so every run
sees byte-identical text. Section references are to docs/decision.md.
"""

from __future__ import annotations

import random

__all__ = [
    "slots",
    "FACTS",
    "REFUTABLE",
    "PAIR_FACTS",
    "DISTRACTORS",
    "LONG_EXTRA",
]

PEOPLE = (
    "Ravi", "Tessa", "Alice", "Nadia", "Marco", "Priya", "Jonas", "Mei", "Omar", "Lena",
    "Sven", "Aiko", "Diego", "Farah", "Kwame", "Ingrid", "Tomas", "Yusuf", "Camille", "Hana",
)
PROJECTS = (
    "Atlas", "Borealis", "Cobalt", "Driftwood", "Ember", "Falcon", "Granite", "Harbor",
    "Juniper", "Keystone", "Lumen", "Meridian", "Northwind", "Orchid", "Pylon", "Quartz",
)
SYSTEMS = (
    "ingestion pipeline", "billing service", "search index", "mobile app", "auth gateway",
    "metrics dashboard", "notification service", "data warehouse", "release tooling",
    "feature-flag service", "payments API", "customer portal",
)
MIGRATIONS = (
    ("Airflow", "Dagster"), ("Jenkins", "GitHub Actions"), ("MySQL", "Postgres"),
    ("Elasticsearch", "OpenSearch"), ("Datadog", "Grafana"), ("RabbitMQ", "Kafka"),
    ("Heroku", "Kubernetes"), ("Redis", "Valkey"), ("Terraform", "OpenTofu"),
)
TOOLS = ("Linear", "Notion", "Confluence", "a shared Google Doc", "GitHub Discussions")
EVENTS = (
    "launch", "design review", "security review", "retrospective", "beta release",
    "migration cutover", "customer demo", "planning session", "load test",
)
TEAMS = ("platform", "growth", "data", "infrastructure", "payments", "mobile")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
MONTHS = (
    "January", "February", "March", "April", "June", "July", "August", "September",
    "October", "November", "December",
)  # "May" is left out: docs/decision.md §9: the literal guards read the modal "may" as a month.
TIMES = ("09:00", "09:30", "10:00", "11:15", "13:00", "14:00", "15:30", "16:45")
ROOMS = ("the Orion room", "the third-floor lab", "the Lisbon office", "the main video call", "room 4B")
CITIES = ("Berlin", "Lisbon", "Toronto", "Nairobi", "Osaka", "Austin", "Melbourne")


def slots(rng: random.Random) -> dict[str, str]:
    """One random filling of every template slot (the same draws, in the same order, for a given ``rng`` state)."""
    p1, p2 = rng.sample(PEOPLE, 2)
    old, new = rng.choice(MIGRATIONS)
    weekday, other_weekday = rng.sample(WEEKDAYS, 2)
    low = rng.randrange(80, 400, 5)
    return {
        "p1": p1,
        "p2": p2,
        "project": rng.choice(PROJECTS),
        "system": rng.choice(SYSTEMS),
        "old": old,
        "new": new,
        "tool": rng.choice(TOOLS),
        "event": rng.choice(EVENTS),
        "team": rng.choice(TEAMS),
        "weekday": weekday,
        "other_weekday": other_weekday,
        "month": rng.choice(MONTHS),
        "day": str(rng.randint(2, 28)),
        "time": rng.choice(TIMES),
        "room": rng.choice(ROOMS),
        "city": rng.choice(CITIES),
        "pct": str(rng.randrange(20, 95, 5)),
        "n": str(rng.randint(4, 45)),
        "k": str(rng.randrange(40, 400, 10)),
        "low": str(low),
        "high": str(low + rng.randrange(60, 500, 10)),
    }


# Fact templates: (passage, claim it supports). Passages and claims are written
# so the supporting passage passes the entailment guard (docs/decision.md §4.4): no
# speech-act mode the claim lacks, no negated clause.
FACTS: tuple[tuple[str, str], ...] = (
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
# guard (docs/decision.md §4.6) lets the scripted contradiction through because the claim
# and the passage name different weekdays.
REFUTABLE: tuple[tuple[str, str], ...] = (
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
PAIR_FACTS: tuple[tuple[str, str, str], ...] = (
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
DISTRACTORS: tuple[str, ...] = (
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

LONG_EXTRA: tuple[str, ...] = (
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
