"""Write tests/data/prose_corpus.json: ordinary encyclopedic and news prose for the strict policy
(described in tests/data/prose_corpus.md).

Every sentence here was written by hand for this corpus; nothing was downloaded. The generator
composes passages from hand-written sentence pools, one pool set per kind of article
(footballer, actor, musician, scientist, politician, town, company, transport project, match
report, science news, river, building): a fact sentence that states the claim plainly, and
surrounding sentences — background, career, reception — of which many carry an ordinary
negation, a reporting verb ("said", "told reporters", "reported"), a hedge, a question or a
status word (draft, proposed, rejected, pending approval) in a sentence that does not govern the
fact sentence. Passages vary in length (5-20 sentences), in where the fact sits, in paragraph
breaks and in whether the fact sentence names its subject or opens with a pronoun.

Controls put the trigger where it does govern the fact sentence: inside it ("The club said that
…"), or as a frame that introduces it (a status label line above it, a header ending in a colon,
a status sentence opening the passage, a quote it belongs to). A strict ruling must fire on each.

Thirty further plain rows (:data:`HELD`) were written one by one, not composed.

Run ``python tests/data/make_prose_corpus.py`` to rewrite the file (deterministic: seed 35).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Callable

SEED = 35
OUT = Path(__file__).with_name("prose_corpus.json")

FIRST_M = "Daniel Marco Tomás Kwame Lukas Oliver Rafael Jonas Mateo Samuel Ibrahim Felix Andrei Hugo Viktor Callum".split()
FIRST_F = "Sofia Amara Ingrid Lucia Hannah Mei Elena Nadia Clara Freya Leila Zofia Aisha Greta Yasmin Ines".split()
LAST = (
    "Okafor Lindqvist Moreau Brennan Haddad Novak Castellano Whitfield Adeyemi Sørensen Kowalczyk Ferreira "
    "Takahashi Delacroix Mbeki Fitzgerald Hallström Rinaldi Oyelaran Petrescu Vasquez Nakamura Ellison Albrecht"
).split()
CLUBS = "Rovers|Athletic|Wanderers|City|United|Albion|Harriers|County".split("|")
TOWNS = "Dunmore Kessington Valbrook Ardmoor Hollins Brackley Marlow Eastleigh Corran Felsted Tarrow Linwick".split()
MONTHS = "January February March April May June July August September October November December".split()
COUNTRIES = "Portugal Ghana Sweden Ireland Poland Brazil Norway Kenya Austria Chile".split()
FIRMS = "Halvard Systems|Norcliffe Foods|Brightwater Energy|Castell Logistics|Ardent Biotech|Meridian Rail|Tessel Software|Kinmont Mining".split("|")
CITIES = "Leeds Bristol Porto Gdansk Bergen Nairobi Cork Graz Valparaíso Malmö".split()


class Person:
    def __init__(self, rng: random.Random) -> None:
        self.female = rng.random() < 0.45
        self.first = rng.choice(FIRST_F if self.female else FIRST_M)
        self.last = rng.choice(LAST)
        self.name = f"{self.first} {self.last}"
        self.he, self.his, self.him = ("She", "her", "her") if self.female else ("He", "his", "him")


def date(rng: random.Random, lo: int = 1990, hi: int = 2023) -> tuple[str, int]:
    year = rng.randint(lo, hi)
    return f"{rng.randint(1, 28)} {rng.choice(MONTHS)} {year}", year


# ------------------------------------------------------------------ article kinds
# Each returns (claim, fact sentence variants [(sentence, key)], filler sentences, controls).
# A control is (passage builder, family, trigger) where the builder gets the fact sentence.


def footballer(rng: random.Random) -> dict:
    p = Person(rng)
    club, rival = rng.sample([f"{t} {c}" for t in TOWNS for c in CLUBS], 2)
    d, year = date(rng, 1998, 2022)
    born, byear = date(rng, year - 22, year - 17)
    claim = f"{p.name} made {p.his} debut for {club} on {d}."
    facts = [
        f"{p.name} made {p.his} debut for {club} on {d} in the game against {rival}.",
        f"{p.last} made {p.his} debut for {club} on {d}, coming on as a substitute against {rival}.",
        f"On {d}, {p.name} made {p.his} debut for {club} in a 2–1 win over {rival}.",
        f"{p.he} made {p.his} debut for {club} on {d} in the game against {rival}.",
    ]
    fillers = [
        f"{p.name} (born {born}) is a professional footballer who plays as a {rng.choice(['midfielder', 'defender', 'winger', 'striker'])}.",
        f"{p.he} came through the youth academy at {club} after joining at the age of {rng.randint(9, 14)}.",
        f"{p.he} did not play again that season because of a knee injury.",
        f"{p.he} was not included in the squad for the cup final.",
        f"The manager said {p.last} had been one of the most promising players in the academy.",
        f"{p.he} told reporters that {p.his} family had travelled from {rng.choice(TOWNS)} to watch.",
        f"Local newspapers reported that several clubs had shown interest in {p.him} the following summer.",
        f"{p.he} signed {p.his} first professional contract in {year - 1}.",
        f"{p.he} scored {p.his} first goal in a league match against {rival} later that year.",
        f"{club} finished {rng.choice(['third', 'fifth', 'eighth', 'eleventh'])} in the league that season.",
        f"A proposed move to a club in {rng.choice(COUNTRIES)} was rejected by the board in {year + 2}.",
        f"{p.he} never scored for the national under-21 team.",
        f"No fee was disclosed when {p.he.lower()} moved on loan in {year + 1}.",
        f"{p.his.capitalize()} contract was extended until {year + 4}.",
        f"The club is expected to offer {p.him} a new deal, according to the local press.",
        f"{p.he} is likely to miss the start of the next season after surgery.",
        f"Supporters asked whether {p.he.lower()} would stay after relegation.",
        f"{p.he} didn’t feature in the league in {year + 3}.",
        f"{club} failed to win promotion that year.",
        f"{p.he} has made {rng.randint(40, 220)} appearances for the club in all competitions.",
        f"In {year + 2}, {p.he.lower()} was named the club's young player of the year.",
        f"Nobody at the club had expected {p.him} to break into the first team so quickly.",
        f"The transfer was not confirmed until the end of the window.",
    ]
    return {"domain": "sports biography", "claim": claim, "facts": facts, "fillers": fillers, "person": p,
            "controls": _controls(p, claim, facts[0])}


def actor(rng: random.Random) -> dict:
    p = Person(rng)
    film = rng.choice(["The Long Harbour", "Glass Orchard", "Northern Lights Express", "The Ninth Winter", "Paper Kingdoms", "A Quiet Tide"])
    role = rng.choice(["Captain Rhea Voss", "the Lighthouse Keeper", "Detective Ilsa Marr", "King Aldric", "the narrator", "Doctor Fenn"])
    d, year = date(rng, 2008, 2024)
    claim = f"{p.name} has been cast to voice {role} in {film}."
    facts = [
        f"In {year}, {p.name} was cast to voice {role} in the animated film {film}.",
        f"{p.name} has been cast to voice {role} in {film}, which is due out in {year + 1}.",
        f"{p.he} has been cast to voice {role} in {film}.",
    ]
    fillers = [
        f"{p.name} is an actor and voice artist from {rng.choice(TOWNS)}.",
        f"{p.he} trained at a drama school in {rng.choice(CITIES)} before moving into television.",
        f"{p.his.capitalize()} first screen role was a small part in a police drama in {year - 9}.",
        f"{p.he} did not return for the second series of the show.",
        f"The director said the studio had auditioned more than two hundred actors for the part.",
        f"Entertainment websites reported that the budget for the film was around $60 million.",
        f"{p.he} told an interviewer that {p.he.lower()} had grown up watching animated films.",
        f"A sequel was proposed in {year + 2} but the studio has not approved it.",
        f"The film is probably going to be released in the autumn.",
        f"Critics wondered whether the story would work for older audiences.",
        f"{p.he} has never appeared in a musical.",
        f"{p.he} won a regional theatre award in {year - 4}.",
        f"The casting was not announced until the trailer came out.",
        f"{p.he} lives in {rng.choice(CITIES)} with {p.his} partner.",
        f"Production was delayed by several months, according to the studio.",
        f"{p.he} wasn’t the first choice for the role.",
        f"No release date has been set for the international version.",
        f"{p.he} appeared in {rng.randint(3, 30)} stage productions before {p.his} first film.",
        f"The studio is based in {rng.choice(CITIES)}.",
    ]
    return {"domain": "film biography", "claim": claim, "facts": facts, "fillers": fillers, "person": p,
            "controls": _controls(p, claim, facts[0])}


def politician(rng: random.Random) -> dict:
    p = Person(rng)
    office = rng.choice(["Minister of Transport", "Minister of Health", "mayor of " + rng.choice(TOWNS), "chair of the finance committee", "ambassador to " + rng.choice(COUNTRIES)])
    d, year = date(rng, 1995, 2023)
    claim = f"{p.name} was appointed {office} on {d}."
    facts = [
        f"{p.name} was appointed {office} on {d}.",
        f"On {d}, {p.last} was appointed {office}, replacing a colleague who had resigned.",
        f"{p.he} was appointed {office} on {d}, a post {p.he.lower()} held for three years.",
    ]
    fillers = [
        f"{p.name} is a politician who has represented {rng.choice(TOWNS)} since {year - 6}.",
        f"Before entering politics {p.he.lower()} worked as a teacher and later as a union official.",
        f"{p.he} was first elected in {year - 6} with a majority of {rng.randint(800, 9000)} votes.",
        f"{p.he} did not stand for the party leadership in {year + 2}.",
        f"The prime minister said {p.he.lower()} had the experience the department needed.",
        f"Opposition members claimed that the appointment had been agreed months earlier.",
        f"A newspaper reported that {p.he.lower()} had turned down a different post.",
        f"A draft bill on regional funding, introduced by {p.him}, has not been approved by parliament.",
        f"The proposed reform of the licensing system was rejected in committee.",
        f"{p.he} never served in the cabinet before {year}.",
        f"Journalists asked whether {p.he.lower()} would resign over the budget dispute.",
        f"{p.he} is expected to seek re-election in {year + 4}.",
        f"{p.he} voted against the measure, which did not pass.",
        f"{p.he} is married and has two children.",
        f"{p.he} studied law at the university in {rng.choice(CITIES)}.",
        f"The motion of no confidence failed by eleven votes.",
        f"Nobody from the opposition attended the ceremony.",
        f"The plan is still pending approval from the regional assembly.",
        f"{p.he} hasn’t commented on the report.",
    ]
    return {"domain": "political biography", "claim": claim, "facts": facts, "fillers": fillers, "person": p,
            "controls": _controls(p, claim, facts[0])}


def scientist(rng: random.Random) -> dict:
    p = Person(rng)
    prize = rng.choice(["the Halden Medal", "the Royal Society's Darwin Award", "the Nordic Prize in Chemistry", "the Carver Fellowship"])
    d, year = date(rng, 1975, 2023)
    field = rng.choice(["marine biology", "materials science", "atmospheric chemistry", "number theory", "neuroscience"])
    claim = f"{p.name} received {prize} in {year}."
    facts = [
        f"{p.name} received {prize} in {year} for {p.his} work in {field}.",
        f"In {year}, {p.last} received {prize}.",
        f"{p.he} received {prize} in {year}, the youngest recipient at the time.",
    ]
    fillers = [
        f"{p.name} is a researcher in {field} at the University of {rng.choice(CITIES)}.",
        f"{p.he} completed {p.his} doctorate in {year - 8}.",
        f"{p.his.capitalize()} early papers did not attract much attention.",
        f"{p.he} said in a lecture that the results had surprised the whole group.",
        f"Colleagues reported that the experiments took nearly four years.",
        f"A proposal to fund a new laboratory was shelved in {year + 3}.",
        f"The findings have not been replicated by an independent team.",
        f"The method is likely to be used in clinical trials.",
        f"Reviewers asked whether the sample size was large enough.",
        f"{p.he} has never held a post outside Europe.",
        f"No other member of the department had been shortlisted.",
        f"{p.he} has published more than {rng.randint(40, 300)} papers.",
        f"{p.he} was elected a fellow of the national academy in {year + 4}.",
        f"The draft report of the review panel is still pending approval.",
        "The theory wasn’t widely accepted at first.",
        f"{p.he} teaches an introductory course every spring.",
        f"According to the university, {p.his} group has trained {rng.randint(10, 60)} doctoral students.",
        f"The committee did not publish its reasons.",
    ]
    return {"domain": "science biography", "claim": claim, "facts": facts, "fillers": fillers, "person": p,
            "controls": _controls(p, claim, facts[0])}


def musician(rng: random.Random) -> dict:
    p = Person(rng)
    album = rng.choice(["Salt and Ember", "Night Ferry", "The Quiet Year", "Paper Moons", "Harbour Songs", "Low Sun"])
    d, year = date(rng, 1985, 2024)
    label = rng.choice(["Greyline Records", "Northmoor Music", "Sable Tone", "Harrow Street Records"])
    claim = f"{p.name} released the album {album} in {year}."
    facts = [
        f"{p.name} released the album {album} in {year} on {label}.",
        f"{p.his.capitalize()} second album, {album}, was released by {p.name} in {year}.",
        f"{p.he} released the album {album} in {year}, recorded over six weeks in {rng.choice(CITIES)}.",
    ]
    fillers = [
        f"{p.name} is a singer and songwriter from {rng.choice(TOWNS)}.",
        f"{p.he} began performing in folk clubs while still at school.",
        f"{p.his.capitalize()} debut single did not chart.",
        f"{p.he} told a radio interviewer that the songs were written during a long winter.",
        f"Music magazines reported that the tour sold out in two days.",
        f"The band's manager said the group would take a break after the tour.",
        f"A proposed collaboration with an orchestra was cancelled.",
        f"{p.he} has never released a live album.",
        f"The record is probably {p.his} best-known work.",
        f"Fans asked whether a vinyl edition would follow.",
        f"No music video was made for the lead single.",
        f"{p.he} plays guitar, piano and the fiddle.",
        f"{p.he} was nominated for a national music prize in {year + 1}.",
        f"The label wasn’t able to release the record in North America.",
        f"{p.he} did not tour in {year + 2} because of illness.",
        f"{p.he} has lived in {rng.choice(CITIES)} since {year - 3}.",
        f"The remastered edition has not been approved by the estate.",
    ]
    return {"domain": "music biography", "claim": claim, "facts": facts, "fillers": fillers, "person": p,
            "controls": _controls(p, claim, facts[0])}


def town(rng: random.Random) -> dict:
    name = rng.choice(TOWNS) + rng.choice(["", " on Sea", " Bridge", "ton"])
    river = rng.choice(["Aller", "Wend", "Corry", "Tamsin", "Lune", "Brath"])
    pop = rng.randint(2000, 90000)
    year = rng.randint(2001, 2022)
    claim = f"{name} had a population of {pop:,} at the {year} census."
    facts = [
        f"{name} had a population of {pop:,} at the {year} census.",
        f"At the {year} census, {name} had a population of {pop:,}.",
        f"The town had a population of {pop:,} at the {year} census, up from the previous count.",
    ]
    fillers = [
        f"{name} is a market town on the River {river}.",
        f"The town grew around a wool market in the fourteenth century.",
        f"It did not have a railway station until {rng.randint(1850, 1890)}.",
        f"The council said that a new bypass would reduce traffic in the centre.",
        f"Local papers reported that the old mill would be converted into flats.",
        f"A proposed wind farm on the hills above the town was rejected in {year + 1}.",
        f"The plan for a new secondary school is still pending approval.",
        f"The town has never had a professional football club.",
        f"Residents asked whether the library would reopen.",
        f"The bridge is probably the oldest surviving structure in the parish.",
        f"No part of the medieval wall survives.",
        f"The parish church dates from the twelfth century.",
        f"The weekly market is held on Thursdays.",
        f"Flooding in {year - 3} did not reach the high street.",
        f"The museum wasn’t open during the winter months.",
        f"The town is twinned with a town in {rng.choice(COUNTRIES)}.",
        f"Tourism is the main source of income.",
        f"The draft local plan has not been adopted.",
    ]
    return {"domain": "place", "claim": claim, "facts": facts, "fillers": fillers, "person": None,
            "controls": _controls(None, claim, facts[0])}


def company(rng: random.Random) -> dict:
    firm = rng.choice(FIRMS)
    city = rng.choice(CITIES)
    year = rng.randint(1960, 2021)
    boss = Person(rng)
    claim = f"{firm} is headquartered in {city}."
    facts = [
        f"{firm} is headquartered in {city}, where it employs about {rng.randint(200, 4000)} people.",
        f"The company is headquartered in {city}.",
        f"{firm} is headquartered in {city} and has offices in {rng.randint(3, 30)} countries.",
    ]
    fillers = [
        f"{firm} was founded in {year} by two engineers.",
        f"Its chief executive is {boss.name}.",
        f"{boss.name} said the company would focus on its core markets.",
        f"Analysts reported that revenue fell by {rng.randint(2, 18)} percent in the last quarter.",
        f"The company did not pay a dividend that year.",
        f"A proposed merger with a rival was blocked by regulators.",
        f"The takeover bid was rejected by shareholders in {year + 20 if year < 2000 else year + 2}.",
        f"It has never been listed on a foreign stock exchange.",
        f"The firm is expected to announce job cuts.",
        f"Investors asked whether the new factory would open on time.",
        f"No details of the settlement were made public.",
        f"The new plant is still awaiting approval from planning authorities.",
        f"It wasn’t profitable until its tenth year.",
        f"The company makes products for the energy and transport sectors.",
        f"{boss.he} told shareholders that the results were disappointing.",
        f"The draft sustainability report has not been signed off by the board.",
        f"Its shares are traded on the stock exchange in {city}.",
    ]
    return {"domain": "company", "claim": claim, "facts": facts, "fillers": fillers, "person": None,
            "controls": _controls(None, claim, facts[0])}


def transport(rng: random.Random) -> dict:
    town_a, town_b = rng.sample(TOWNS, 2)
    d, year = date(rng, 2005, 2024)
    cost = rng.randint(40, 900)
    claim = f"The {town_a} to {town_b} tram line opened on {d}."
    facts = [
        f"The {town_a} to {town_b} tram line opened on {d}.",
        f"The tram line between {town_a} and {town_b} opened on {d}, two years late.",
        f"The line opened on {d} with twelve stops.",
    ]
    fillers = [
        f"The project cost £{cost} million.",
        f"Construction began in {year - 4}.",
        f"The transport authority said passenger numbers were higher than forecast.",
        f"Residents reported that noise from the works had disturbed them at night.",
        f"An extension to the airport was proposed but has not been approved.",
        f"A plan to run trams through the old town was rejected.",
        f"The line does not run on Christmas Day.",
        f"Trams have never run on the northern section.",
        f"The council is likely to review the fares next year.",
        f"Campaigners asked whether the depot would be moved.",
        f"No trams run after midnight.",
        f"The contractor failed to finish the depot on time.",
        f"Services run every ten minutes during the day.",
        f"The trams were built in {rng.choice(COUNTRIES)}.",
        f"The mayor told reporters that the line was a success.",
        f"The stop near the hospital wasn’t ready for the opening.",
        f"The second phase is pending approval from the ministry.",
    ]
    return {"domain": "transport news", "claim": claim, "facts": facts, "fillers": fillers, "person": None,
            "controls": _controls(None, claim, facts[0])}


def match(rng: random.Random) -> dict:
    home, away = rng.sample([f"{t} {c}" for t in TOWNS for c in CLUBS], 2)
    a, b = rng.randint(1, 5), rng.randint(0, 3)
    scorer = Person(rng)
    claim = f"{home} beat {away} {a}–{b}."
    if a <= b:
        a, b = b + 1, b
        claim = f"{home} beat {away} {a}–{b}."
    facts = [
        f"{home} beat {away} {a}–{b} in front of a crowd of {rng.randint(3, 40)},{rng.randint(100, 999)}.",
        f"{home} beat {away} {a}–{b} on Saturday.",
        f"In the end {home} beat {away} {a}–{b}.",
    ]
    fillers = [
        f"{scorer.name} opened the scoring after {rng.randint(3, 40)} minutes.",
        f"{away} did not have a shot on target in the first half.",
        f"The home side never looked in danger after the interval.",
        f"The {away} manager said his team had been second best.",
        f"{scorer.last} told reporters that {scorer.he.lower()} was delighted with the result.",
        f"It was reported that the referee had been replaced shortly before kick-off.",
        f"A proposed change to the kick-off time had been rejected by the league.",
        f"{away} are likely to appeal against the red card.",
        f"Supporters wondered whether the striker would be fit for the derby.",
        f"No goals were scored in the final twenty minutes.",
        f"The visitors failed to win for the fifth game in a row.",
        f"The result moves {home} up to fourth in the table.",
        f"The match was played in heavy rain.",
        f"{away} haven’t won away from home since August.",
        f"Nobody was sent off.",
        f"The attendance was the highest of the season.",
    ]
    return {"domain": "match report", "claim": claim, "facts": facts, "fillers": fillers, "person": scorer,
            "controls": _controls(None, claim, facts[1])}


def science(rng: random.Random) -> dict:
    team_city = rng.choice(CITIES)
    species = rng.choice(["a new species of frog", "a new species of beetle", "a previously unknown orchid", "a new species of gecko"])
    region = rng.choice(["the Andes", "northern Borneo", "the Congo Basin", "the highlands of Madagascar"])
    year = rng.randint(2010, 2024)
    lead = Person(rng)
    claim = f"Researchers from {team_city} described {species} from {region} in {year}."
    facts = [
        f"Researchers from {team_city} described {species} from {region} in {year}.",
        f"In {year}, researchers from {team_city} described {species} from {region} in a peer-reviewed journal.",
        f"Researchers from {team_city} described {species} from {region} in {year}, naming it after a local river.",
    ]
    fillers = [
        f"The team was led by {lead.name}.",
        f"The animals were found during a survey of {rng.randint(3, 40)} remote sites.",
        f"{lead.last} said the discovery showed how little was known about the region.",
        f"The journal reported that the specimens had been collected over three seasons.",
        f"The species has not been recorded anywhere else.",
        f"It does not appear in any earlier museum collection.",
        f"A proposal to protect the forest was rejected by the provincial government.",
        f"The population is probably very small.",
        f"Other scientists asked whether it could be a hybrid.",
        f"No photographs of a living animal were published.",
        f"DNA analysis placed it in a distinct lineage.",
        f"The survey was funded by a conservation charity.",
        f"The team has never worked in the lowland forest.",
        f"The protected area plan is still pending approval.",
        f"The species wasn’t given a common name.",
        f"{lead.he} told a news agency that more surveys were needed.",
    ]
    return {"domain": "science news", "claim": claim, "facts": facts, "fillers": fillers, "person": lead,
            "controls": _controls(None, claim, facts[0])}


def building(rng: random.Random) -> dict:
    name = rng.choice(["St Aldhelm's Church", "the Corn Exchange", "Harrowgate Hall", "the Old Customs House", "the Victoria Baths", "Castle Mill"])
    arch = Person(rng)
    year = rng.randint(1780, 1935)
    claim = f"{name[0].upper() + name[1:]} was designed by the architect {arch.name}."
    facts = [
        f"{name[0].upper() + name[1:]} was designed by the architect {arch.name} and completed in {year}.",
        f"The building was designed by the architect {arch.name}.",
        f"Completed in {year}, {name} was designed by the architect {arch.name}.",
    ]
    fillers = [
        f"It stands on the site of an earlier timber building.",
        f"The foundation stone was laid in {year - 3}.",
        f"It was not used for its original purpose after {year + 60}.",
        f"The council said the roof would be repaired by the end of the year.",
        f"A local historian reported that the clock was a later addition.",
        f"A proposed conversion into a hotel was rejected in the 1990s.",
        f"The interior has never been open to the public.",
        f"The tower was probably added in the nineteenth century.",
        f"Visitors often ask whether the crypt can be visited.",
        f"No original drawings survive.",
        f"It is a listed building.",
        f"The restoration plan is pending approval from the heritage body.",
        f"The east wing wasn’t rebuilt after the fire.",
        f"The stone came from a quarry near {rng.choice(TOWNS)}.",
        f"{arch.last} did not live to see it finished.",
    ]
    return {"domain": "architecture", "claim": claim, "facts": facts, "fillers": fillers, "person": arch,
            "controls": _controls(None, claim, facts[0])}


def river(rng: random.Random) -> dict:
    name = rng.choice(["Aller", "Wend", "Corry", "Tamsin", "Lune", "Brath", "Sorrel", "Kenna"])
    length = rng.randint(20, 260)
    sea = rng.choice(["the North Sea", "the Irish Sea", "the Baltic", "the Atlantic"])
    claim = f"The River {name} is {length} kilometres long."
    facts = [
        f"The River {name} is {length} kilometres long and flows into {sea}.",
        f"The river is {length} kilometres long.",
        f"Rising in the hills above {rng.choice(TOWNS)}, the River {name} is {length} kilometres long.",
    ]
    fillers = [
        f"It rises in upland moorland at about {rng.randint(200, 700)} metres.",
        f"The river is not navigable above {rng.choice(TOWNS)}.",
        f"The environment agency said water quality had improved.",
        f"Anglers reported that salmon had returned to the upper reaches.",
        f"A proposed dam on the river was rejected in the 1970s.",
        f"The river has never frozen over in recorded history.",
        f"The lower valley was probably settled in the Bronze Age.",
        f"Locals asked whether the weir would be removed.",
        f"No bridge crossed the estuary until {rng.randint(1900, 1980)}.",
        f"Its main tributary joins it near {rng.choice(TOWNS)}.",
        f"The flood defence scheme is pending approval.",
        f"The old ferry doesn’t run in winter.",
        f"Otters are found along most of its length.",
        f"The estuary is a protected area for birds.",
    ]
    return {"domain": "geography", "claim": claim, "facts": facts, "fillers": fillers, "person": None,
            "controls": _controls(None, claim, facts[0])}


KINDS: list[Callable[[random.Random], dict]] = [
    footballer, actor, politician, scientist, musician, town, company, transport, match, science, building, river,
]

# ------------------------------------------------------------------ controls


def _controls(person: object, claim: str, fact: str) -> list[tuple[str, str, str, str]]:
    """(family, passage template with {fact}, the trigger, the key the model reads). ``{fact}`` is
    the fact sentence; the passage's other sentences are added around it by :func:`compose`."""
    lower = fact[0].lower() + fact[1:] if fact.startswith(("The ", "In ", "On ", "At ", "Completed ", "Rising ")) else fact
    bare = fact.rstrip(".")
    return [
        ("attribution_in_sentence", "A spokesperson said that " + lower, "said that", bare[1:]),
        ("hedge_in_sentence", bare + ", most likely.", "most likely", bare[1:]),
        ("status_label_line", "Unapproved draft for the press release:\n" + fact, "Unapproved draft", bare[1:]),
        ("status_sentences", "Draft proposal from J. Not approved by Finance. " + fact, "Draft proposal", bare[1:]),
        ("status_heading", "DRAFT - for internal review only\n" + fact, "DRAFT", bare[1:]),
        ("quote_frame", "The official statement said: \"" + fact + "\"", "said:", bare[1:]),
        ("header_colon", "Rumours we have not been able to confirm:\n- " + fact, "not been able to confirm", bare[1:]),
        ("curly_negation", _curly(fact), "n’t", None),
    ]


def _curly(fact: str) -> str:
    # A negation the reference does not read (curly apostrophe): "X didn’t make his debut …".
    for verb, neg in (("made", "didn’t make"), ("was appointed", "wasn’t appointed"), ("received", "didn’t receive"),
                      ("released", "didn’t release"), ("has been cast", "hasn’t been cast"), ("was cast", "wasn’t cast"), ("is headquartered", "isn’t headquartered"),
                      ("had a population", "didn’t have a population"), ("opened", "didn’t open"), ("beat", "didn’t beat"),
                      ("described", "didn’t describe"), ("was designed", "wasn’t designed"), ("is ", "isn’t ")):
        if verb in fact:
            return fact.replace(verb, neg, 1)
    raise ValueError(fact)


def compose(rng: random.Random, fact: str, fillers: list[str], size: int) -> str:
    """A passage of ``size`` sentences: fillers in a shuffled order with the fact placed at a random
    position, broken into one to three paragraphs."""
    # Most articles open with their lead sentence (the first filler); the rest come in any order.
    lead = rng.random() < 0.8
    rest = fillers[1:] if lead else fillers
    chosen = rng.sample(rest, min(size - 1 - lead, len(rest)))
    position = rng.randint(0, len(chosen))
    chosen.insert(position, fact)
    if lead:
        chosen.insert(0, fillers[0])
    paragraphs = rng.choice([1, 1, 2, 2, 3])
    cuts = sorted(rng.sample(range(1, len(chosen)), paragraphs - 1)) if paragraphs > 1 else []
    parts, start = [], 0
    for cut in cuts + [len(chosen)]:
        parts.append(" ".join(chosen[start:cut]))
        start = cut
    return "\n\n".join(parts) if rng.random() < 0.7 else "\n".join(parts)


#: Thirty passages written one by one (not composed from the pools), in other styles: section
#: headings, quotes, "according to", "it is unclear whether", "reportedly", numbers in figures.
#: Written after the step-3 rules and measured once, not tuned on (docs/policy.md).
HELD = [
("Marta Kowal won the 2014 Dunmore Marathon.",
 "Marta Kowal (born 1988) is a Polish long-distance runner. She won the 2014 Dunmore Marathon in a course record of 2:24:10. Kowal had not run a marathon before 2012, and she did not finish her first attempt. Her coach told the press that she 'never gives up'. It is unclear whether she will defend her title next year. She was not selected for the 2016 Olympic team, a decision the federation later said it regretted.",
 "She won the 2014 Dunmore Marathon in a course record of 2:24:10."),
("The Hollins Bridge opened to traffic in 1932.",
 "The Hollins Bridge is a steel arch bridge over the River Lune.\nConstruction was delayed by a strike, and the council reportedly considered abandoning the project. The Hollins Bridge opened to traffic in 1932. A proposal to widen it in the 1970s was never approved. Engineers said in 2019 that the deck would need replacing; no date has been set.",
 "The Hollins Bridge opened to traffic in 1932."),
("Tessel Software was acquired by Norcliffe in 2021.",
 "Tessel Software was founded in 2009 in Cork. The company did not turn a profit until 2015. According to its founders, the first product was written in a garage. Tessel Software was acquired by Norcliffe in 2021 for an undisclosed sum. Rumours of a sale had circulated for years, but the board denied them. Analysts asked whether the brand would survive; it has not been retired.",
 "Tessel Software was acquired by Norcliffe in 2021 for an undisclosed sum."),
("Ingrid Haldor was elected mayor of Bergen in 2019.",
 "Ingrid Haldor is a Norwegian politician. Before politics, she worked as a nurse. Haldor was elected mayor of Bergen in 2019, defeating the incumbent by 412 votes. Her opponent alleged irregularities, which the electoral commission rejected. She has said she will not seek a third term. The city's draft budget for 2024 has not yet been adopted.",
 "Haldor was elected mayor of Bergen in 2019, defeating the incumbent by 412 votes."),
("The album Low Sun reached number three in the UK charts.",
 "Low Sun is the third studio album by the band Greyline. Recorded in Malmö, it was produced by the band itself after their label refused to fund a producer. The album Low Sun reached number three in the UK charts. Critics were divided: one reviewer wrote that it 'doesn't quite hold together'. The band did not tour the album in the United States. A deluxe edition was proposed but never released.",
 "The album Low Sun reached number three in the UK charts."),
("Felix Amundsen scored twice in the final.",
 "City won the cup for the first time in forty years. Felix Amundsen scored twice in the final, both goals coming in the second half. The opposing manager said his side had not deserved to lose. \"We never stopped believing,\" Amundsen told reporters after the match. Nobody from the club would confirm whether he will sign a new contract.",
 "Felix Amundsen scored twice in the final, both goals coming in the second half."),
("The Corran Museum holds more than 20,000 objects.",
 "The Corran Museum is a local history museum in a former grain store. The museum holds more than 20,000 objects, from Bronze Age tools to 1960s shop signs. Entry is free, although donations are encouraged. The museum does not open on Mondays. Plans for a new wing were rejected in 2018 and have not been revived. Staff say they are unsure whether the roof will last another winter.",
 "The museum holds more than 20,000 objects, from Bronze Age tools to 1960s shop signs."),
("Kenji Arakawa discovered the comet in 1996.",
 "Kenji Arakawa is an amateur astronomer from Sapporo. Arakawa discovered the comet in 1996 using a 25 cm reflector in his garden. Professional observatories did not confirm the sighting until two days later. He has never worked as a professional astronomer. He said the discovery was 'pure luck'. The comet is not expected to return for about 4,000 years.",
 "Arakawa discovered the comet in 1996 using a 25 cm reflector in his garden."),
("The Brackley line was electrified in 1987.",
 "The Brackley line runs for 42 km between Brackley and the coast.\n\nHistory\nThe line was built in the 1860s by a private company. It was nationalised in 1948. The Brackley line was electrified in 1987, the last major line in the region to be converted. Passenger numbers did not recover after the closure of the steelworks. A proposed extension to the airport is awaiting approval.",
 "The Brackley line was electrified in 1987, the last major line in the region to be converted."),
("Amara Osei plays the cello.",
 "Amara Osei is a Ghanaian-born musician based in Leeds. Osei plays the cello and the piano, and sings in a chamber choir. She did not take up music seriously until university. In an interview she said she could not imagine another career. Her debut recording has not been released yet; her label has given no date.",
 "Osei plays the cello and the piano, and sings in a chamber choir."),
("The Valbrook dam is 85 metres high.",
 "The Valbrook dam is a concrete gravity dam completed in 1961. The dam is 85 metres high and holds back a reservoir of 40 million cubic metres. It was not designed for power generation; a turbine hall was added later. Environmental groups claimed that the reservoir had damaged the fishery. A plan to raise the dam was shelved in 2009.",
 "The dam is 85 metres high and holds back a reservoir of 40 million cubic metres."),
("Rafael Duarte became head coach of Athletic in 2020.",
 "Rafael Duarte is a Portuguese football manager and former defender. As a player, he never won a major trophy. Rafael Duarte became head coach of Athletic in 2020 after the club's previous manager was dismissed. The appointment was not universally welcomed; some supporters asked whether he had enough experience. The club said it had \"full confidence\" in him. His contract, which was extended in 2022, runs until 2025.",
 "Rafael Duarte became head coach of Athletic in 2020 after the club's previous manager was dismissed."),
("The festival attracted 60,000 visitors in 2023.",
 "The Eastleigh Folk Festival has been held every August since 1974. It was not held in 2020 or 2021. The festival attracted 60,000 visitors in 2023, a record. Organisers reported that hotel bookings in the town had doubled. A proposed move to a larger site has been rejected by residents. Tickets for next year have not gone on sale.",
 "The festival attracted 60,000 visitors in 2023, a record."),
("Meridian Rail operates 140 trains.",
 "Meridian Rail is a train operating company. Meridian Rail operates 140 trains on routes between the capital and the north-east. It does not own its trains; they are leased. The company said punctuality had improved, but passenger groups disputed the figures. Its franchise is due to end in 2027, and it is unclear whether it will bid again.",
 "Meridian Rail operates 140 trains on routes between the capital and the north-east."),
("Hugo Lindqvist was born in Uppsala.",
 "Hugo Lindqvist (1902–1977) was a Swedish chemist. Lindqvist was born in Uppsala, the son of a bookbinder. He did not attend university until he was 24. Colleagues described him as shy; he rarely gave interviews. His proposed theory of catalysis was not accepted in his lifetime. He never married.",
 "Lindqvist was born in Uppsala, the son of a bookbinder."),
("The novel was translated into 30 languages.",
 "The Glass Orchard is a 1998 novel by Clara Moreau. The novel was translated into 30 languages and sold over two million copies. Moreau has said she did not expect it to be published at all. A film adaptation was announced in 2010 but has not been made. Fans have long wondered whether a sequel exists; Moreau has denied it.",
 "The novel was translated into 30 languages and sold over two million copies."),
("Kessington has a population of 12,400.",
 "Kessington is a small town in the west of the county. Kessington has a population of 12,400, according to the 2021 census. The town has no railway station; the nearest is 11 km away. The council says it cannot afford a new bus route. A draft neighbourhood plan was published in 2022 but has not been approved.",
 "Kessington has a population of 12,400, according to the 2021 census."),
("Sofia Rinaldi won the gold medal in the 200 metres.",
 "At the 2022 championships, Sofia Rinaldi won the gold medal in the 200 metres. She had not been considered a favourite. Her time of 22.31 seconds was not a championship record. Rinaldi told journalists that she had \"no idea\" she had won until she saw the screen. Her coach said she would not compete again that season.",
 "At the 2022 championships, Sofia Rinaldi won the gold medal in the 200 metres."),
("The company employs 3,200 people.",
 "Castell Logistics is a freight company based in Cork. The company employs 3,200 people across 14 depots. It was not affected by the 2019 strike, which the union said was the largest in a decade. Reports that the company was for sale were denied. Its planned depot near the port is still awaiting planning permission.",
 "The company employs 3,200 people across 14 depots."),
("The church was rebuilt in 1854.",
 "St Aldhelm's is the parish church of Tarrow. The medieval building was badly damaged by fire in 1850. The church was rebuilt in 1854 to designs by a local architect. Little of the medieval fabric survives, and the tower was not rebuilt. Historians disagree about whether the font is original. The church is not open on weekdays.",
 "The church was rebuilt in 1854 to designs by a local architect."),
("Zofia Nowak was appointed chief executive in March 2018.",
 "Zofia Nowak is a Polish business executive.\nCareer\nShe joined Brightwater Energy in 2009 as an engineer. Zofia Nowak was appointed chief executive in March 2018. Under her leadership the company did not pay a dividend for three years. Shareholders asked whether the strategy would change; she said it would not. A proposed merger with a rival was withdrawn in 2021.",
 "Zofia Nowak was appointed chief executive in March 2018."),
("The species feeds mainly on beetles.",
 "The Andean tree frog is a small frog found in cloud forest. The species feeds mainly on beetles and other small insects. It is not known to breed in captivity. Researchers say its population is probably declining, but there are no reliable counts. A proposal to list it as endangered has not been decided.",
 "The species feeds mainly on beetles and other small insects."),
("Daniel Okafor played 212 league games for Rovers.",
 "Daniel Okafor is a retired English footballer. Okafor played 212 league games for Rovers between 2005 and 2013. He did not score in his first two seasons. After retiring he said he had no regrets. Rumours that he would return as a coach were never confirmed.",
 "Okafor played 212 league games for Rovers between 2005 and 2013."),
("The school was founded in 1573.",
 "Felsted Grammar School is an independent school. The school was founded in 1573 by a local merchant. Girls were not admitted until 1976. The head teacher said that fees would not rise next year. A proposed new sports hall was rejected by the planning committee.",
 "The school was founded in 1573 by a local merchant."),
("The river flows into the North Sea.",
 "The Wend rises on the moors above Ardmoor. After 96 km the river flows into the North Sea at Eastleigh. It is not navigable for most of its length. Anglers said last year that salmon numbers had fallen. It is unknown whether beavers, released upstream in 2020, have survived.",
 "After 96 km the river flows into the North Sea at Eastleigh."),
("Nadia Haddad directed the film.",
 "Paper Kingdoms is a 2017 drama. Nadia Haddad directed the film from her own screenplay. It was not released in cinemas in the United States. Haddad told an interviewer that she did not want a happy ending. The studio reportedly asked whether the running time could be cut.",
 "Nadia Haddad directed the film from her own screenplay."),
("The airport handled 4.2 million passengers in 2019.",
 "Linwick Airport is a regional airport. The airport handled 4.2 million passengers in 2019, its busiest year. Traffic did not return to that level after the pandemic. The operator claims a new terminal is needed; the government has not agreed. No decision on a second runway is expected before 2030.",
 "The airport handled 4.2 million passengers in 2019, its busiest year."),
("Oliver Brennan invented the folding ladder.",
 "Oliver Brennan (1841–1910) was an Irish carpenter and inventor. Brennan invented the folding ladder, which he patented in 1879. He did not profit from it; the patent was sold for a small sum. Some sources say that an American had filed a similar design first, but this has never been proven. His workshop in Cork still stands.",
 "Brennan invented the folding ladder, which he patented in 1879."),
("The tournament is held every four years.",
 "The Nordic Cup is an international football tournament for women's teams. The tournament is held every four years, alternating between the member countries. It was not held in 1991 because of a funding dispute. Organisers said in 2023 that they would consider expanding it; no proposal has been approved. Norway has won it five times.",
 "The tournament is held every four years, alternating between the member countries."),
("The lighthouse was automated in 1989.",
 "Corran Point lighthouse stands on a rocky headland.\nThe lighthouse was automated in 1989, and the last keeper left that year. The keepers' cottages were not sold until 2004. Locals asked whether the light would be switched off; the authority said it would not. A plan to turn the tower into a museum is pending approval.",
 "The lighthouse was automated in 1989, and the last keeper left that year."),
]


def build() -> list[dict]:
    rng = random.Random(SEED)
    rows: list[dict] = []
    plain = 0
    while plain < 336:
        kind = KINDS[plain % len(KINDS)]
        article = kind(rng)
        fact = rng.choice(article["facts"])
        size = rng.randint(5, min(20, len(article["fillers"]) + 1))
        rows.append({
            "id": f"P{plain + 1:03d}", "kind": "plain", "domain": article["domain"], "family": "plain",
            "claim": article["claim"], "passage": compose(rng, fact, article["fillers"], size), "key": fact,
        })
        plain += 1
    for index, (claim, passage, key) in enumerate(HELD, start=1):
        rows.append({
            "id": f"H{index:03d}", "kind": "plain", "domain": "hand-written", "family": "hand_written",
            "claim": claim, "passage": passage, "key": key,
        })
    control = 0
    for index in range(72):
        kind = KINDS[index % len(KINDS)]
        article = kind(rng)
        family, text, trigger, key = article["controls"][index % len(article["controls"])]
        fact_key = key if key is not None else text
        # Neutral sentences only around a control, so that only the governing trigger can fire.
        neutral = [f for f in article["fillers"] if not _trigger_words(f)]
        size = rng.randint(5, min(12, len(neutral) + 1))
        before = rng.sample(neutral, size - 1)
        if family in {"status_label_line", "status_sentences", "status_heading", "header_colon", "quote_frame"}:
            passage = text + "\n" + " ".join(before)
        else:
            cut = rng.randint(0, len(before))
            passage = " ".join(before[:cut] + [text] + before[cut:])
        control += 1
        rows.append({
            "id": f"C{control:03d}", "kind": "control", "domain": article["domain"], "family": family,
            "claim": article["claim"], "passage": passage, "key": fact_key, "trigger": trigger,
        })
    return rows


_TRIGGERS = ("not", "never", "n't", "n’t", "no", "nobody", "said", "told", "reported", "according", "asked", "wondered",
             "likely", "probably", "expected", "proposed", "proposal", "draft", "rejected", "pending", "approval", "approved",
             "failed", "shelved", "cancelled", "blocked", "awaiting", "claimed", "ask")


def _trigger_words(sentence: str) -> bool:
    words = sentence.lower().replace("’", "'").replace(",", " ").replace(".", " ").split()
    return any(word in _TRIGGERS or word.endswith(("n't", "n’t")) for word in words)


if __name__ == "__main__":
    data = build()
    OUT.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(data)} rows to {OUT}")
