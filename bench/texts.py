"""The text of the benchmark workloads: template slots, facts, distractors, meeting notes, encyclopedia.

Passages of workloads (a)-(d) read like what an assistant's memory store holds
about a software team -- decisions, schedules, roles, incidents, budgets,
status notes -- and claims are short declarative statements. :mod:`bench.workloads`
fills these templates from a seeded :class:`random.Random` (:func:`slots`), so
every run sees byte-identical text. Section references are to docs/decision.md.

Workload (e) uses longer, realistic text: encyclopedia-style passages of one
to three sentences about (invented) places, people, dates, numbers and
organisations, and one-sentence claims (:func:`encyclopedia_slots`,
:func:`encyclopedia_case`). No external data: every name is drawn from the
lists below, every number from the seeded generator. The supporting passages
avoid every speech-act cue and negation of docs/decision.md §4 (no "considered",
"planned", "explorer", "not", ...), so the scripted probabilities take each
case down its designed path; refuting claims change a year or a number
(§4.6, differing values).
"""

from __future__ import annotations

import random
from typing import Optional

__all__ = [
    "slots",
    "FACTS",
    "REFUTABLE",
    "PAIR_FACTS",
    "DISTRACTORS",
    "LONG_EXTRA",
    "encyclopedia_slots",
    "encyclopedia_case",
    "ENC_FACTS",
    "ENC_REFUTABLE",
    "ENC_PAIR_FACTS",
    "ENC_EXTRA",
    "ENC_DISTRACTORS",
    "ENC_UNSETTLED_CLAIMS",
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


# --------------------------------------------------------------------------- encyclopedia (workload e)

ENC_TOWNS = (
    "Kaldern", "Marisport", "Elvendale", "Tarrow", "Brenmouth", "Sollingen", "Averhill", "Corvasa",
    "Dunmere", "Ravelstad", "Quillon", "Westerby", "Hallowmere", "Ostmark", "Varenna", "Lindholm",
    "Pellarin", "Graustadt", "Saint-Orlac", "Maelbrook",
)
ENC_REGIONS = (
    "the Varn Valley", "the northern highlands", "the Esk coast", "Lower Marrow province", "the Tessel plateau",
    "the Aldine lakes district", "West Carrow", "the Brisa delta",
)
ENC_COUNTRIES = ("Norland", "Estavia", "Caldera", "Vessmark", "Aurelia", "Dravonia")
ENC_RIVERS = ("Vell", "Ostra", "Marne", "Tavy", "Seline", "Oder", "Ambra", "Kessel")
ENC_FIRST = (
    "Amalia", "Johannes", "Teodor", "Ines", "Margit", "Rafael", "Helena", "Viktor", "Sofia", "Anselm",
    "Clara", "Emil", "Louisa", "Matteo", "Greta", "Oskar", "Ilse", "Tobias", "Maren", "Casimir",
)
ENC_LAST = (
    "Hartwell", "Strand", "Vasek", "Caldeira", "Lund", "Odum", "Brandt", "Moreau", "Kovacs", "Ellery",
    "Fenwick", "Aldana", "Rosen", "Whitlock", "Marek", "Soren", "Delacroix", "Ibarra", "Holm", "Pryce",
)
ENC_PROFESSIONS = (
    "botanist", "architect", "cartographer", "composer", "civil engineer", "physician", "historian",
    "astronomer", "geologist", "painter", "chemist", "novelist",
)
ENC_FIELDS = (
    "alpine flora", "railway bridges", "coastal charts", "choral music", "water supply", "tropical medicine",
    "medieval trade", "variable stars", "glacial deposits", "harbour landscapes", "dye chemistry", "rural life",
)
ENC_ORGS = (
    "the Royal Geographical Society of {country}", "the {town} Institute of Technology",
    "the Northern Railway Company", "the {country} Academy of Sciences", "the {town} Municipal Library",
    "the Society of Naval Architects", "the {country} National Museum", "the University of {town}",
)
ENC_BUILDINGS = (
    "cathedral", "town hall", "observatory", "railway station", "opera house", "lighthouse",
    "covered market", "botanical garden",
)
ENC_INDUSTRIES = ("textile mills", "shipbuilding", "salt mining", "paper making", "wine growing", "glassworks")
ENC_MONTHS = MONTHS  # "May" is left out here too (read as a month by the literal guards)


def encyclopedia_slots(rng: random.Random) -> dict[str, str]:
    """One random filling of every encyclopedia template slot (same draws, same order, for a given ``rng`` state)."""
    town, town2 = rng.sample(ENC_TOWNS, 2)
    country = rng.choice(ENC_COUNTRIES)
    first, first2 = rng.sample(ENC_FIRST, 2)
    last, last2 = rng.sample(ENC_LAST, 2)
    year = rng.randint(1780, 1935)
    profession, field = rng.choice(tuple(zip(ENC_PROFESSIONS, ENC_FIELDS)))
    org = rng.choice(ENC_ORGS).format(town=town, country=country)
    population = rng.randrange(2_000, 90_000, 100)
    return {
        "town": town,
        "town2": town2,
        "region": rng.choice(ENC_REGIONS),
        "country": country,
        "river": rng.choice(ENC_RIVERS),
        "person": f"{first} {last}",
        "person2": f"{first2} {last2}",
        "last": last,
        "profession": profession,
        "field": field,
        "org": org,
        "building": rng.choice(ENC_BUILDINGS),
        "industry": rng.choice(ENC_INDUSTRIES),
        "month": rng.choice(ENC_MONTHS),
        "day": str(rng.randint(2, 28)),
        "year": str(year),
        "year2": str(year + rng.randint(8, 45)),
        "year3": str(year + rng.randint(46, 70)),
        "other_year": str(year + rng.choice((-7, -4, -2, 3, 5, 9))),
        "population": f"{population:,}",
        "other_population": f"{population + rng.choice((-1, 1)) * rng.randrange(1_000, 40_000, 100):,}",
        "height": str(rng.randrange(18, 140)),
        "other_height": str(rng.randrange(141, 260)),
        "length": str(rng.randrange(120, 2_400, 10)),
        "elevation": str(rng.randrange(40, 2_100, 5)),
        "count": str(rng.randint(3, 60)),
        "ordinal": rng.choice(("second", "third", "fourth", "fifth")),
    }


# (passage sentence, claim it supports): the deciding sentence of a single-support case.
ENC_FACTS: tuple[tuple[str, str], ...] = (
    (
        "{town} is a market town on the left bank of the {river} in {region}, and with a population of "
        "{population} at the last census it is the {ordinal} largest settlement of {country}.",
        "{town} lies on the {river}.",
    ),
    (
        "{person} (born {month} {day}, {year}, in {town}) was a {profession} from {country} whose surveys of "
        "{field} were published by {org} over more than two decades.",
        "{person} was born in {town}.",
    ),
    (
        "The {building} of {town} was completed in {year} to a design by the {profession} {person}, and its "
        "tower, {height} metres tall, remained the highest structure in {region} until {year3}.",
        "{person} designed the {building} of {town}.",
    ),
    (
        "{org} was founded in {town} in {year} by a group of merchants and scholars, and it moved to its present "
        "building on the {river} embankment in {year2}.",
        "{org} was founded in {town}.",
    ),
    (
        "During the nineteenth century the economy of {town} rested on {industry}, which employed about {count} "
        "hundred workers at its height, until the opening of the railway to {town2} in {year2}.",
        "{industry} once dominated the economy of {town}.",
    ),
    (
        "The railway bridge over the {river} at {town}, {length} metres long, opened to traffic on {month} {day}, "
        "{year}, and carried the main line from {town2} to the coast.",
        "A railway bridge crosses the {river} at {town}.",
    ),
    (
        "{person} served as director of {org} from {year} to {year2}, a period in which its collections grew "
        "to more than {count} thousand items.",
        "{person} directed {org}.",
    ),
)

# (passage sentence, claim with a different year or number): single-refute cases (§4.6 values differ).
ENC_REFUTABLE: tuple[tuple[str, str], ...] = (
    (
        "The {building} of {town} was completed in {year} to a design by the {profession} {person}, and its "
        "tower, {height} metres tall, remained the highest structure in {region} until {year3}.",
        "The {building} of {town} was completed in {other_year}.",
    ),
    (
        "{org} was founded in {town} in {year} by a group of merchants and scholars, and it moved to its present "
        "building on the {river} embankment in {year2}.",
        "{org} was founded in {other_year}.",
    ),
    (
        "{town} is a market town on the left bank of the {river} in {region}, and with a population of "
        "{population} at the last census it is the {ordinal} largest settlement of {country}.",
        "{town} had a population of {other_population} at the last census.",
    ),
)

# (passage A, passage B, claim): only the pair supports the claim.
ENC_PAIR_FACTS: tuple[tuple[str, str, str], ...] = (
    (
        "{person} was born in {town} in {year} and studied {field} at the university there.",
        "{town} is the administrative centre of {region}, a district known for its {industry}.",
        "{person} was born in the administrative centre of {region}.",
    ),
    (
        "The {building} of {town} was designed by the {profession} {person} and completed in {year}.",
        "{person} was a member of {org} from {year2} until {year3}.",
        "A member of {org} designed the {building} of {town}.",
    ),
    (
        "In {year2} {org} moved its headquarters to {town2}.",
        "{town2} lies at the mouth of the {river}, where the river reaches the sea after a course of {length} kilometres.",
        "{org} has its headquarters at the mouth of the {river}.",
    ),
)

# Neutral sentences about the same place or person, to make a passage one to three sentences long.
ENC_EXTRA: tuple[str, ...] = (
    "The old town keeps much of its original street layout, with narrow lanes running down to the {river}.",
    "Its climate is temperate, with cool winters and an average elevation of {elevation} metres above sea level.",
    "The surrounding countryside of {region} is mostly farmland, orchards and mixed woodland, crossed by old drove roads and dotted with small stone villages.",
    "A weekly market has been held in the main square since the late Middle Ages, and the guild houses around it date from the sixteenth and seventeenth centuries.",
    "The town is twinned with {town2} and hosts a music festival every {month}, which draws several thousand visitors to its churches and squares.",
    "Several of the letters and drawings are now held in the archive of {org}.",
    "A street and a secondary school in {town2} are named after the {profession}.",
    "The building was restored between {year2} and {year3} after damage in a severe storm, when the roof, the windows and much of the interior were renewed.",
    "Regional trains connect the station with {town2} about every hour, and a ferry crosses the {river} in the summer months.",
    "The collection includes maps, instruments and some {count} thousand photographs.",
)

# Distractor passages: other places, people and organisations (neutral, some with speech acts).
ENC_DISTRACTORS: tuple[str, ...] = (
    "{town2} grew rapidly after {year2}, when a canal linked it to the {river} and to the ports of {country}, and by {year3} its harbour handled more grain than any other on the coast.",
    "{person2} was a {profession} from {town2} who wrote a three-volume history of {region}, drawing on parish records, tax rolls and the letters of local families.",
    "The {country} census of {year3} counted {population} inhabitants in the districts of {region}.",
    "Historians still debate whether the {building} of {town2} predates the great fire of {year}.",
    "The {river} is navigable for {length} kilometres from its mouth, carries timber and grain barges in summer, and freezes over in most winters.",
    "{org} publishes an annual report on {field} and awards a medal every {ordinal} year.",
    "Plans for a second bridge at {town2} were discussed in {year2} and again in {year3}.",
    "{person2} is reported to have visited {town2} in {month} {year} on a journey through {region}.",
    "The highest point of {region} rises to {elevation} metres and is covered in snow for much of the year.",
    "The {industry} of {town2} declined after {year3}, and many of the old works became museums.",
    "{person2} married into a family of {town2} merchants in {year2} and spent the later years abroad, first in {country} and then on the southern coast.",
    "The {country} parliament met in the old assembly hall of {town2} for {count} sessions between {year} and {year2}, before the capital moved south.",
)

# Claims a related passage does not settle (insufficient cases).
ENC_UNSETTLED_CLAIMS: tuple[str, ...] = (
    "{person} received the gold medal of {org}.",
    "{town} was the capital of {country} for a time.",
    "{person} taught at the University of {town2}.",
)


def _enc_passage(rng: random.Random, core: str, values: dict[str, str], sentences: int) -> str:
    """``core`` plus ``sentences - 1`` neutral sentences about the same subject (core first or in the middle)."""
    extra: list[str] = []
    while len(extra) < sentences - 1:
        sentence = _capital(rng.choice(ENC_EXTRA).format(**values))
        if sentence not in extra:
            extra.append(sentence)
    parts = [_capital(core), *extra]
    if len(parts) > 1 and rng.random() < 0.5:
        parts[0], parts[1] = parts[1], parts[0]
    return " ".join(parts)


def _sentence_count(rng: random.Random) -> int:
    """1, 2 or 3 sentences (weights 3 : 4 : 3)."""
    return rng.choices((1, 2, 3), weights=(3, 4, 3))[0]


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def encyclopedia_case(rng: random.Random, path: str, passages: int) -> tuple[list[str], str, tuple[int, ...]]:
    """The passages, claim and deciding indices of one encyclopedia case taking ``path``.

    Args:
        rng: the seeded generator (the only source of randomness).
        path: ``single-support``, ``single-refute``, ``pair-support`` or ``insufficient``.
        passages: passages per claim.

    Returns:
        ``(texts, claim, deciding)``: ``passages`` distinct passage texts of one to
        three sentences, the one-sentence claim, and the indices of the passage
        (or pair) that decides it (empty for ``insufficient``).
    """
    values = encyclopedia_slots(rng)
    texts: list[Optional[str]] = [None] * passages
    deciding: tuple[int, ...] = ()
    if path in ("single-support", "single-refute"):
        sentence, claim = rng.choice(ENC_FACTS if path == "single-support" else ENC_REFUTABLE)
        deciding = (rng.randrange(passages),)
        texts[deciding[0]] = _enc_passage(rng, sentence.format(**values), values, _sentence_count(rng))
    elif path == "pair-support":
        first, second, claim = rng.choice(ENC_PAIR_FACTS)
        deciding = tuple(sorted(rng.sample(range(passages), 2)))
        texts[deciding[0]] = _enc_passage(rng, first.format(**values), values, _sentence_count(rng))
        texts[deciding[1]] = _enc_passage(rng, second.format(**values), values, _sentence_count(rng))
    else:  # insufficient: a related passage that does not settle the claim, plus distractors
        sentence, _ = rng.choice(ENC_FACTS)
        claim = rng.choice(ENC_UNSETTLED_CLAIMS)
        texts[rng.randrange(passages)] = _enc_passage(rng, sentence.format(**values), values, _sentence_count(rng))
    taken = {text for text in texts if text is not None}
    for index, text in enumerate(texts):
        if text is not None:
            continue
        while True:
            other = encyclopedia_slots(rng)
            count = _sentence_count(rng)
            parts = rng.sample(ENC_DISTRACTORS, count)
            candidate = " ".join(_capital(part.format(**other)) for part in parts)
            if candidate not in taken:
                break
        texts[index] = candidate
        taken.add(candidate)
    return [str(text) for text in texts], _capital(claim.format(**values)), deciding
