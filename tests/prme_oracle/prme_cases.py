"""Seeded case generator and scripted scores shared by oracle.py (PRME) and project.py.

Pure standard library: both interpreters import it. Every case is a JSON-serialisable
dict; the scripted scores are a deterministic function of (case seed, premise,
hypothesis) plus explicit overrides keyed by exact premise (or (premise, hypothesis)).

    generate(seed, n) -> list[dict]
    score_rows(case, pairs) -> list[[e, c, n]]      (float64 values, pure Python)
    build_output(case, pairs, np, order)            the scorer/model return value
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import uuid

# --------------------------------------------------------------------------- text pools

RT = ["rather than", "rather  than", "rather\nthan", "rather\tthan", "rather\u00a0than"]
SF = ["switched from", "switched  from", "switched\tfrom", "switched\nfrom"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS = ["January", "March", "May", "June", "July", "October", "December"]

# Each topic: positive facts (claims / entailing passages), negations, other values,
# non-actual (speech-act) variants, correction-cue sentences.  {RT} and {SF} are replaced
# with a spacing variant of "rather than" / "switched from"; {W}/{W2} weekdays, {M}/{M2}
# months, {N}/{N2} numbers.
TOPICS = [
    dict(
        pos=["The launch is on {W}.", "The launch moved to {W}."],
        neg=["The launch is not on {W}.", "The launch is no longer on {W}.", "The launch isn't on {W}.",
             "The launch isn\u2019t on {W}.", "The launch is no\nlonger on {W}.", "The launch won't be on {W}."],
        alt=["The launch is on {W2}.", "The launch moved to {W2}.", "The launch is on {W} or {W2}."],
        modal=["We hope the launch is on {W}.", "The launch might be on {W}.", "Is the launch on {W}?",
               "If the review passes, the launch is on {W}.", "The team plans to launch on {W}.",
               "Reportedly the launch is on {W}.", "The team asked whether the launch is on {W}."],
        corr=["The launch is on {W} {RT} {W2}.", "The team {SF} {W2} to {W} for the launch.",
              "The launch is on {W} instead.", "The launch date was replaced with {W}."],
    ),
    dict(
        pos=["Ravi owns the ingestion pipeline.", "Ravi owns ingestion."],
        neg=["Ravi no longer owns ingestion; Tessa owns it.", "Ravi does not own the ingestion pipeline.",
             "Ravi never owned ingestion.", "Ravi can't own ingestion.", "Ravi can\u2019t own ingestion.",
             "Ravi doesn\u2019t own ingestion.", "Ravi did not attend an ingestion review.",
             "Ravi no  longer owns ingestion.", "Ravi, who is not on call, owns ingestion."],
        alt=["Tessa owns the ingestion pipeline.", "Tessa owns ingestion now."],
        modal=["Ravi wants to own ingestion.", "Ravi would like to own ingestion.", "Ravi tried to own ingestion.",
               "Ravi is working on ingestion.", "Ravi should own ingestion.", "Maybe Ravi owns ingestion.",
               "Ravi\u2019d like to own ingestion.", "Ravi'd like to own ingestion.", "Does Ravi own ingestion?",
               "Ravi wonders whether he owns ingestion.", "Allegedly Ravi owns ingestion."],
        corr=["Tessa owns ingestion {RT} Ravi.", "Ingestion {SF} Ravi to Tessa.", "Tessa replaced Ravi on ingestion."],
    ),
    dict(
        pos=["The service listens on port {N}.", "The API listens on port {N}."],
        neg=["The service does not listen on port {N}.", "The service is not listening on port {N}."],
        alt=["The service listens on port {N2}.", "The service listens on ports {N} and {N2}.",
             "The service listens on port -{N}.", "The service listens on port {N}.5."],
        modal=["The service should listen on port {N}.", "The service may listen on port {N}.",
               "We are considering port {N} for the service.", "If needed, the service listens on port {N}."],
        corr=["The service listens on port {N} {RT} {N2}.", "The service {SF} port {N2} to {N}."],
    ),
    dict(
        pos=["Release {N} shipped in {M}.", "Release {N} was deployed in {M}."],
        neg=["Release {N} did not ship in {M}.", "Release {N} wasn't deployed in {M}."],
        alt=["Release {N} shipped in {M2}.", "Release {N2} shipped in {M}.", "Release {N} shipped in {M} and {M2}."],
        modal=["Release {N} is scheduled for {M}.", "We intend to ship release {N} in {M}.",
               "Release {N} possibly shipped in {M}.", "Release {N} is unconfirmed for {M}."],
        corr=["Release {N} shipped in {M} {RT} {M2}.", "Release {N} was replaced in {M}."],
    ),
    dict(
        pos=["Alice uses Jira.", "Alice uses Jira for planning."],
        neg=["Alice does not use Jira.", "Alice doesn't use Jira anymore.", "Alice never uses Jira.",
             "Alice cannot use Jira.", "Alice isn't using Jira."],
        alt=["Alice uses Linear.", "Alice {SF} Jira to Linear.", "Alice uses Linear instead of Jira.",
             "Alice replaced Jira with Linear.", "Alice uses Linear {RT} Jira."],
        modal=["Alice wants to use Jira.", "Alice is evaluating Jira.", "Alice recommends Jira.",
               "Alice needs Jira.", "Alice is exploring Jira.", "Alice seeks a Jira license."],
        corr=["Alice uses Linear {RT} Jira.", "Alice {SF} Jira to Linear.", "Alice uses Linear instead.",
              "Alice replaced Jira."],
    ),
    dict(
        pos=["The user enabled passkeys.", "The user turned on passkeys."],
        neg=["The user did not enable passkeys.", "The user never enabled passkeys."],
        alt=["The user enabled passwords.", "The user disabled passkeys."],
        modal=["I want to enable passkeys after the security review.", "The user plans to enable passkeys.",
               "The user should enable passkeys.", "Maybe the user enabled passkeys.",
               "If the review passes, the user will enable passkeys.", "Reportedly the user enabled passkeys.",
               "Did the user enable passkeys?", "The user asked whether passkeys were enabled.",
               "The user tried to enable passkeys.", "I'd like to enable passkeys.", "I\u2019d like to enable passkeys.",
               "The user wanted passkeys.", "The user is wanting passkeys.", "In case of trouble, the user enabled passkeys.",
               "Provided that it works, the user enabled passkeys.", "Provided\nthat it works, the user enabled passkeys."],
        corr=["The user enabled passkeys {RT} passwords.", "The user {SF} passwords to passkeys."],
    ),
    dict(
        pos=["The deployment happens after approval.", "The deployment happened after approval."],
        neg=["The deployment does not happen after approval.", "The deployment never happens after approval."],
        alt=["The deployment happens before approval."],
        modal=["The deployment could happen after approval.", "The deployment might happen after approval.",
               "Unless blocked, the deployment happens after approval.", "The deployment is unverified."],
        corr=["The deployment happens after approval {RT} before it."],
    ),
    dict(
        pos=["Nadia leads the Atlas project.", "Nadia leads Atlas."],
        neg=["Nadia did not attend the Atlas project review.", "Nadia no longer leads Atlas.",
             "Nadia does not lead the Atlas project.", "Nadia doesn't lead Atlas."],
        alt=["Omar leads the Atlas project.", "Nadia leads the Borealis project."],
        modal=["Nadia aims to lead Atlas.", "Nadia hoped to lead Atlas.", "Nadia wishes to lead Atlas.",
               "Nadia is advised to lead Atlas."],
        corr=["Omar leads Atlas {RT} Nadia.", "Atlas {SF} Nadia to Omar."],
    ),
    dict(
        pos=["The team deployed the release.", "The team shipped the release on {W}."],
        neg=["The team didn't deploy the release.", "The team has not deployed the release."],
        alt=["The team deployed the release on {W2}.", "The team deployed release {N2}."],
        modal=["The team wants to deploy the release.", "The team is trying to deploy the release.",
               "The team works on deploying the release.", "The team suggested deploying the release.",
               "The team ought to deploy the release.", "The team is potentially deploying the release."],
        corr=["The team deployed the release {RT} the hotfix."],
    ),
    dict(
        pos=["The meeting is at {N} pm on {W}.", "The meeting is in {M}."],
        neg=["The meeting is not at {N} pm.", "The meeting is no longer in {M}."],
        alt=["The meeting is at {N2} pm on {W}.", "The meeting is at {N} pm on {W2}.", "The meeting is in {M2}.",
             "The meeting is at {N}.0 pm on {W}.", "The meeting is at 0{N} pm on {W}."],
        modal=["The meeting might be at {N} pm.", "We should meet in {M}."],
        corr=["The meeting is at {N} pm {RT} {N2} pm."],
    ),
    dict(
        pos=["The trip starts in Austin.", "Tulsa follows Austin on the trip."],
        neg=["The trip does not start in Austin."],
        alt=["The trip starts in Dallas.", "The next stop after Austin is Tulsa."],
        modal=["The trip might start in Austin.", "We plan to start the trip in Austin."],
        corr=["The trip starts in Austin {RT} Dallas."],
    ),
    dict(
        pos=["Users prefer dark mode.", "The users prefer dark mode.", "Studies show users prefer dark mode."],
        neg=["Users do not prefer dark mode.", "The users no longer prefer dark mode.", "Users don't prefer modes."],
        alt=["Users prefer light mode."],
        modal=["Users might prefer dark mode.", "Users asked for dark mode."],
        corr=["Users prefer dark mode {RT} light mode."],
    ),
]

FILLER = [
    "Topically related only.", "The weather was nice.", "Bob likes tea.", "The office has a new printer.",
    "4 engineers reviewed the plan.", "42 is the answer.", "Q3 planning is underway.",
    "Nothing else happened.", "The cafe closed early.",
]

# Sentence separators used inside multi-sentence passages (the rule under test: where the
# localized recheck splits).  The opener is put right before the next sentence start.
SEPARATORS = [" ", "  ", "\n", "\r\n", "\r", "\u2028", "\u2029", "\x0b", "\x0c", "\x85", "\t", "\n\n",
              "\r\r", " \n ", "\x1c", "\x1d", "\x1e", "\u00a0", "\u3000", "; ", ", "]
OPENERS = ["", "", "", '"', "\u201c", "\u2018", "(", "[", "{", "\u00ab", '("', "((", "'", "[\"", "\u201c("]
EDGE_WS = ["", "", "", "", " ", "\n", "\t", "\u00a0", "\u3000", "\ufeff", "\u200b", "\x85", "\u2028",
           "\x1f", "\x1c", "\x0b", "  \r\n"]

SOURCE_TYPES = ["user_stated", "user_demonstrated", "system_inferred", "external_document", "tool_output"]
EPISTEMIC = ["observed", "asserted", "inferred", "hypothetical", "conditional", "deprecated", "unverified"]
LIFECYCLE = ["tentative", "stable", "contested", "superseded", "deprecated", "archived"]
DATETIMES = ["2026-03-02T09:30:00Z", "2026-03-02T09:30:00+02:00", "2026-03-02T09:30:00", "2026-03-02",
             "2026-03-02T09:30:00.123456Z", 1772443800, "1772443800", "2026-03-02 09:30:00Z",
             "2025-12-31T23:59:59-05:00", "2027-01-01T00:00:00Z"]

MODELS = ["cross-encoder/nli-deberta-v3-base", " cross-encoder/nli-deberta-v3-base ",
          "\u00a0cross-encoder/nli-deberta-v3-base\u3000", "\ufeffcross-encoder/nli-deberta-v3-base",
          "\u200bcross-encoder/nli-deberta-v3-base", "\x1fcross-encoder/nli-deberta-v3-base",
          "cross-encoder/nli-deberta-v3-base\x1e", "local/model", "\x85local/model\u2028", "\x1f", " ", "\u200b"]
REVISIONS = ["6c749ce3425cd33b46d187e45b92bbf96ee12ec7", " 6c749ce3425cd33b46d187e45b92bbf96ee12ec7\n",
             "\u3000rev-1", "\ufeffrev-1", "\x1drev-1", "rev-1\x1f", "\x1c", "\t", "main"]


def _fill(template: str, rnd: random.Random, slots: dict) -> str:
    out = template
    for key in ("RT", "SF", "W2", "M2", "N2", "W", "M", "N"):
        out = out.replace("{" + key + "}", slots[key])
    return out


def _slots(rnd: random.Random, gen=None) -> dict:
    w, w2 = rnd.sample(WEEKDAYS, 2)
    m, m2 = rnd.sample(MONTHS, 2)
    n = rnd.choice(["4", "8080", "3", "12", "2.5", "443", "7"])
    n2 = rnd.choice([x for x in ["5", "8443", "4", "13", "2.50", "80", "07"] if x != n])
    if rnd.random() < 0.1:  # case variants of names (values are case-folded)
        w, m = w.upper(), m.lower()
    rt, sf = (gen.pool("RT"), gen.pool("SF")) if gen is not None else (RT, SF)
    return dict(W=w, W2=w2, M=m, M2=m2, N=n, N2=n2, RT=rnd.choice(rt), SF=rnd.choice(sf))


# --------------------------------------------------------------------------- segmentation (for overrides)
# Approximations of both implementations' segmenters, used only to choose which premises
# get explicit scores; the harness never trusts them for a verdict.
_PRME_SEG = re.compile(r"(?:\r?\n)+|(?<=[.!?])\s+(?=[\"'([{]*[A-Z0-9])")
_PROJ_SEG = re.compile(r"(?<=[.!?])\s+(?=[\"'\u201c\u2018(\[{]?[A-Z0-9])")


def _segments(text: str) -> list[str]:
    out: list[str] = []
    for piece in _PRME_SEG.split(text):
        if piece.strip():
            out.append(piece.strip())
    for line in text.splitlines():
        for piece in _PROJ_SEG.split(line):
            if piece.strip():
                out.append(piece.strip())
    return list(dict.fromkeys(out))


# --------------------------------------------------------------------------- scores


def _u(*parts) -> float:
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def row_for(kind: str, u: float, v: float) -> list[float]:
    """(entailment, contradiction, neutral) summing to 1 in float64 arithmetic (n = 1 - e - c)."""
    if kind == "ent":
        e = 0.8 + 0.199 * u
        c = (1 - e) * 0.4 * v
    elif kind == "con":
        c = 0.8 + 0.199 * u
        e = (1 - c) * 0.4 * v
    elif kind == "edge_ent":
        e = [0.8, 0.79999999, 0.8000000001, 0.9, 0.95, 1.0, 0.5][int(u * 7)]
        c = (1 - e) * v * 0.5
    elif kind == "edge_con":
        c = [0.8, 0.79999999, 0.8000000001, 0.9, 0.95, 1.0, 0.5][int(u * 7)]
        e = (1 - c) * v * 0.5
    elif kind == "half":
        return [0.5, 0.5, 0.0]
    elif kind == "both":
        e = 0.5 + 0.1 * u
        c = 1 - e - 0.01 * v
    else:  # low
        e = 0.02 + 0.2 * u
        c = 0.01 + 0.2 * v
    n = 1.0 - e - c
    if n < 0:
        n = 0.0
        c = 1.0 - e
    return [e, c, n]


_CANON_DROP = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\x00\"'\u201c\u201d\u2018\u2019()[]{}\u00ab\u00bb"), None)
_CANON_MAP: dict = {}


def canon(text: str) -> str:
    """What the default (hash) scores depend on: whitespace runs (str.split: also \\x1c-\\x1f,
    U+2028...) collapsed, zero-width characters, quotes and brackets dropped, so the
    neutralised variants of a case (explain.py) keep their default scores."""
    return " ".join(text.translate(_CANON_DROP).translate(_CANON_MAP).split())


def default_row(seed: int, premise: str, hypothesis: str) -> list[float]:
    premise, hypothesis = canon(premise), canon(hypothesis)
    u = _u(seed, "k", premise, hypothesis)
    kind = "ent" if u < 0.14 else "con" if u < 0.24 else "edge_ent" if u < 0.27 else "edge_con" if u < 0.29 else "low"
    return row_for(kind, _u(seed, "u", premise, hypothesis), _u(seed, "v", premise, hypothesis))


def score_rows(case: dict, pairs) -> list[list[float]]:
    scores = case["scores"]
    by_pair = {(p, h): r for p, h, r in scores.get("pair_overrides", [])}
    by_premise = scores.get("overrides", {})
    rows = []
    for premise, hypothesis in pairs:
        row = by_pair.get((premise, hypothesis))
        if row is None:
            row = by_premise.get(premise)
        if row is None:
            row = default_row(case["seed"], premise, hypothesis)
        rows.append(list(row))
    return rows


def _perturb(row: list[float], kind: str) -> list[float]:
    e, c, n = row
    if kind == "plus1e-7":
        return [e, c, n + 1e-7]
    if kind == "plus1e-4":
        return [e, c, n + 1e-4]
    if kind == "minus1e-4":
        return [e, c, n - 1e-4] if n >= 1e-4 else [e - 1e-4, c, n]
    if kind == "neg1e-9":
        return [e + 1e-9, c, -1e-9]
    if kind == "over1e-9":
        return [1.0 + 1e-9, 0.0, 0.0]
    if kind == "over1e-9_sum1":
        return [1.0 + 1e-9, 0.0, -1e-9]
    if kind == "nan":
        return [float("nan"), c, n]
    if kind == "inf":
        return [float("inf"), c, n]
    if kind == "plus1.5e-5":
        return [e, c, n + 1.5e-5]
    if kind == "minus1.5e-5":
        return [e, c, n - 1.5e-5] if n > 2e-5 else [e - 1.5e-5, c, n]
    if kind == "plus1.000005e-5":
        return [e, c, n + 1.000005e-5]
    if kind == "minus1.000005e-5":
        return [e, c, n - 1.000005e-5] if n > 2e-5 else [e - 1.000005e-5, c, n]
    if kind == "plus9e-6":
        return [e, c, n + 9e-6]
    if kind == "plus2.5e-5":
        return [e, c, n + 2.5e-5]
    if kind == "neg1e-6":
        return [e + 1e-6, c, -1e-6] if n < 1e-6 else [e, c + n + 1e-6, -1e-6]
    if kind == "over1e-6":
        return [1.0 + 1e-6, 0.0, -1e-6]
    if kind == "negzero":
        return [e, c + n, -0.0]
    if kind == "neg_ulp":  # neutral computed as 1 - e - c can land just below zero
        return [e, 1.0 - e + 2.8e-17, -2.8e-17]
    if kind == "neg0.5":
        return [e + 0.5, c, n - 0.5]
    raise ValueError(kind)


PERTURBATIONS = ["plus1e-7", "plus1e-4", "minus1e-4", "neg1e-9", "over1e-9", "over1e-9_sum1", "nan", "inf",
                 "plus1.5e-5", "minus1.5e-5", "plus1.000005e-5", "minus1.000005e-5", "plus9e-6", "plus2.5e-5",
                 "neg1e-6", "over1e-6", "neg0.5", "negzero", "neg_ulp"]


def build_output(case: dict, pairs, np, order: str = "ecn"):
    """What the scorer (project) or the fake model's predict (PRME) returns for ``pairs``.

    ``order`` is the column order: "ecn" for the project's scorer, "cen" for PRME's fake
    model (the real nli-deberta-v3-base id2label order contradiction, entailment, neutral).
    """
    spec = case["scores"]
    rows = score_rows(case, pairs)
    perturb = spec.get("perturb") or {}
    for index, (premise, _h) in enumerate(pairs):
        kind = perturb.get(premise) or perturb.get("*")
        if kind:
            rows[index] = _perturb(rows[index], kind)
    container = spec.get("container", "float64")
    if container == "softmax32":
        out = []
        old_err = np.seterr(invalid="ignore")
        for r in rows:
            logits = np.log(np.clip(np.asarray(r, dtype=np.float64), 1e-12, None)).astype(np.float32)
            ex = np.exp(logits - logits.max())
            out.append((ex / ex.sum(dtype=np.float32)).astype(np.float32).tolist())
        np.seterr(**old_err)
        rows = out
    perm = {"ecn": (0, 1, 2), "cen": (1, 0, 2)}[order]
    rows = [[r[perm[0]], r[perm[1]], r[perm[2]]] for r in rows]
    shape = spec.get("shape", "ok")
    if shape == "drop_row" and rows:
        rows = rows[:-1]
    elif shape == "extra_row":
        rows = rows + [rows[-1] if rows else [1.0, 0.0, 0.0]]
    elif shape == "extra_col":
        rows = [r + [0.0] for r in rows]
    elif shape == "two_col":
        rows = [r[:2] for r in rows]
    if shape == "ragged" and rows:
        rows = [rows[0][:2]] + rows[1:]
        return rows  # a ragged Python list
    if shape == "flat":
        return np.asarray(rows, dtype=np.float64).reshape(-1)
    if shape == "transpose":
        return np.asarray(rows, dtype=np.float64).T
    if container in ("float64", "softmax32_as64"):
        return np.asarray(rows, dtype=np.float64).reshape(len(rows), -1) if rows else np.zeros((0, 3))
    if container in ("float32", "softmax32"):
        return np.asarray(rows, dtype=np.float32).reshape(len(rows), -1) if rows else np.zeros((0, 3), np.float32)
    if container == "float16":
        return np.asarray(rows, dtype=np.float16).reshape(len(rows), -1) if rows else np.zeros((0, 3), np.float16)
    if container == "list":
        return rows
    if container == "tuple_rows":
        return [tuple(r) for r in rows]
    if container == "int":
        return np.asarray([[int(round(x)) for x in r] for r in rows], dtype=np.int64).reshape(len(rows), -1)
    if container == "bool":
        return np.asarray([[x >= 0.5 for x in r] for r in rows], dtype=bool).reshape(len(rows), -1)
    if container == "str":
        return np.asarray([[repr(x) for x in r] for r in rows]).reshape(len(rows), -1)
    if container == "object":
        return np.asarray(rows, dtype=object).reshape(len(rows), -1)
    if container == "none_row":
        return [None for _ in rows]
    raise ValueError(container)


# --------------------------------------------------------------------------- generation


def _uuid(rnd: random.Random) -> str:
    return str(uuid.UUID(int=rnd.getrandbits(128), version=4))


def _uuid_variant(u: str, rnd: random.Random) -> str:
    k = rnd.random()
    if k < 0.25:
        return u.upper()
    if k < 0.5:
        return u.replace("-", "")
    if k < 0.75:
        return "{" + u + "}"
    return "urn:uuid:" + u


def _decorate(text: str, rnd: random.Random, p: float, pool=EDGE_WS) -> str:
    if rnd.random() >= p:
        return text
    return rnd.choice(pool) + text + rnd.choice(pool)


X1C = set("\x1c\x1d\x1e\x1f")
EXTRA_LINEBREAKS = set("\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
MULTI_OR_CURLY_OPENERS = {"\u201c", "\u2018", '("', "((", "[\"", "\u201c("}

#: Trigger groups that generate(..., exclude=...) can leave out, to look for new families
#: once the known ones are understood.
EXCLUDABLE = ("x1c", "linebreaks", "openers", "rt", "scores", "bad", "bundle_quirks", "bundle", "many")


class _Gen:
    def __init__(self, seed: int, index: int, exclude=()) -> None:
        self.exclude = set(exclude)
        self.rnd = random.Random(f"case:{seed}:{index}")
        self.seed = seed * 1_000_003 + index
        self.tags: set[str] = set()
        self.overrides: dict[str, list[float]] = {}
        self.pair_overrides: list = []

    # ---- texts
    def pool(self, name: str) -> list:
        items = list(globals()[name])
        ex = self.exclude
        if "x1c" in ex:
            items = [x for x in items if not (isinstance(x, str) and set(x) & X1C)]
        if "linebreaks" in ex and name == "SEPARATORS":
            items = [x for x in items if not set(x) & EXTRA_LINEBREAKS]
        if "openers" in ex and name == "OPENERS":
            items = [x for x in items if x not in MULTI_OR_CURLY_OPENERS]
        if "rt" in ex and name in ("RT", "SF"):
            items = items[:1]
        return items

    def sentence(self, topic: dict, slots: dict, role: str) -> str:
        rnd = self.rnd
        if role == "filler":
            return rnd.choice(FILLER)
        s = _fill(rnd.choice(topic[role]), rnd, slots)
        self.tags.add("role:" + role)
        return s

    def passage(self, topic: dict, slots: dict) -> tuple[str, str]:
        rnd = self.rnd
        k = rnd.random()
        roles = ["pos", "neg", "alt", "modal", "corr", "filler"]
        weights = [3, 2, 2, 3, 1, 1]
        if k < 0.55:
            role = rnd.choices(roles, weights)[0]
            return self.sentence(topic, slots, role), role
        # multi-sentence passage
        count = rnd.choice([2, 2, 3, 3, 4])
        parts = [self.sentence(topic, slots, rnd.choices(roles, weights)[0]) for _ in range(count)]
        if rnd.random() < 0.6:
            parts[rnd.randrange(count)] = self.sentence(topic, slots, "pos")
        text = parts[0]
        for part in parts[1:]:
            sep = rnd.choice(self.pool("SEPARATORS"))
            opener = rnd.choice(self.pool("OPENERS"))
            if opener:
                self.tags.add("opener")
                closer = {"\"": "\"", "\u201c": "\u201d", "\u2018": "\u2019", "(": ")", "[": "]", "{": "}",
                          "\u00ab": "\u00bb", "'": "'"}
                close = "".join(closer.get(ch, "") for ch in reversed(opener))
                part = opener + part + close
            self.tags.add("sep:" + repr(sep))
            if rnd.random() < 0.15:  # sentence end without a period before the separator
                text = text.rstrip(".")
            text = text + sep + part
        self.tags.add("multi")
        return text, "multi"

    def claim(self, topic: dict, slots: dict) -> str:
        rnd = self.rnd
        role = rnd.choices(["pos", "neg", "modal", "corr", "alt"], [5, 2, 2, 2, 1])[0]
        self.tags.add("claim:" + role)
        return _fill(rnd.choice(topic[role]), rnd, slots)

    # ---- scores
    def score_passage(self, text: str, role: str) -> None:
        rnd = self.rnd
        key = text.strip()
        p = rnd.random()
        if role in ("pos", "multi", "modal"):
            kind = "ent" if p < 0.6 else "edge_ent" if p < 0.7 else "con" if p < 0.75 else "low"
        elif role in ("neg", "alt", "corr"):
            kind = "con" if p < 0.55 else "ent" if p < 0.7 else "edge_con" if p < 0.75 else "low"
        else:
            kind = "low" if p < 0.85 else "con"
        if rnd.random() < 0.03:
            kind = "half"
        self.overrides[key] = row_for(kind, rnd.random(), rnd.random())
        if role == "multi" or rnd.random() < 0.3:
            for seg in _segments(text):
                if rnd.random() < 0.65:
                    self.overrides.setdefault(seg, row_for(rnd.choice(["ent", "ent", "con", "low"]), rnd.random(), rnd.random()))
            segs = _segments(text)
            for i in range(len(segs) - 1):
                if rnd.random() < 0.3:
                    self.overrides.setdefault(segs[i] + "\n" + segs[i + 1], row_for("ent", rnd.random(), rnd.random()))

    def score_groups(self, texts: list[str]) -> None:
        rnd = self.rnd
        stripped = [t.strip() for t in texts]
        for i in range(len(stripped)):
            for j in range(i + 1, len(stripped)):
                if rnd.random() < 0.35:
                    premise = f"[E1] {stripped[i]}\n[E2] {stripped[j]}"
                    self.overrides[premise] = row_for(rnd.choice(["ent", "ent", "con", "low", "edge_ent"]), rnd.random(), rnd.random())
                    self.tags.add("pair_override")
        if len(stripped) >= 3 and rnd.random() < 0.5:
            i, j, k = sorted(rnd.sample(range(len(stripped)), 3))
            premise = f"[E1] {stripped[i]}\n[E2] {stripped[j]}\n[E3] {stripped[k]}"
            self.overrides[premise] = row_for(rnd.choice(["ent", "con"]), rnd.random(), rnd.random())
            self.tags.add("triple_override")

    # ---- evidence
    def evidence(self, topic: dict, slots: dict, count: int) -> list[dict]:
        rnd = self.rnd
        items = []
        for i in range(count):
            text, role = self.passage(topic, slots)
            self.score_passage(text, role)
            item = {"reference": rnd.choice([f"m{i + 1}", f"M{i + 1}", f"mem-{i + 1}", f"E{i + 1}"]),
                    "memory_id": _uuid(rnd), "text": _decorate(text, rnd, 0.2, self.pool("EDGE_WS"))}
            if item["text"] != text:
                self.tags.add("text_edge_ws")
            if rnd.random() < 0.35:
                item["epistemic_type"] = rnd.choice(EPISTEMIC + [None])
                self.tags.add("typed")
            if rnd.random() < 0.3:
                item["lifecycle_state"] = rnd.choice(LIFECYCLE + [None])
                self.tags.add("lifecycle")
            if rnd.random() < 0.2:
                item["source_type"] = rnd.choice(SOURCE_TYPES)
            for field in ("event_time", "valid_from", "valid_to"):
                if rnd.random() < 0.12:
                    item[field] = rnd.choice(DATETIMES)
                    self.tags.add("datetime")
            items.append(item)
        # unique references
        seen = set()
        for i, item in enumerate(items):
            while item["reference"] in seen:
                item["reference"] += f"x{i}"
            seen.add(item["reference"])
        if rnd.random() < 0.08 and items:
            items[rnd.randrange(len(items))]["reference"] = _decorate(items[0]["reference"] + "r", rnd, 1.0, self.pool("EDGE_WS"))
            self.tags.add("ref_edge_ws")
        if rnd.random() < 0.05 and items:
            items[rnd.randrange(len(items))]["memory_id"] = _uuid_variant(items[0]["memory_id"], rnd)
            self.tags.add("uuid_variant")
        self.score_groups([it["text"] for it in items])
        return items

    def bad_input(self, request: dict, config: dict) -> None:
        rnd = self.rnd
        ev = request["evidence"]
        options = [
            "claim_empty", "claim_ws", "claim_zw", "claim_bom", "claim_nul", "claim_nul_inside", "claim_x1f",
            "claim_surrogate", "claim_long", "claim_edge_unicode", "text_ws", "text_zw", "text_nul", "text_x1f_only",
            "text_x1f_prefix", "text_long", "ref_collide_space", "ref_collide_nbsp", "ref_collide_x1f",
            "ref_collide_bom", "ref_empty", "ref_x1f_only", "ref_zw_only", "ref_nul", "too_many", "dup_id",
            "dup_id_upper", "model_ws", "revision_ws", "cfg_str_threshold", "cfg_float_int", "cfg_bool",
            "cfg_strict_policy", "cfg_unknown", "rcs_int", "rcs_str", "rcs_zero", "rcs_none", "ref_long",
            "text_empty", "claim_only_ws_unicode", "bad_uuid", "bad_enum", "claim_x1f_inner",
            "claim_nonstr", "evidence_none", "evidence_mapping", "evidence_extra_field",
        ]
        if "x1c" in self.exclude:
            options = [o for o in options if "x1f" not in o]
        choice = rnd.choice(options)
        self.tags.add("bad:" + choice)
        if choice == "claim_empty":
            request["claim"] = ""
        elif choice == "claim_ws":
            request["claim"] = rnd.choice([" \t\n", "\u00a0\u3000", "\x85\u2028\u2029", "\x1c\x1d"])
        elif choice == "claim_zw":
            request["claim"] = rnd.choice(["\u200b", " \u200b ", "\u200d\u200c", "\u2060"])
        elif choice == "claim_bom":
            request["claim"] = "\ufeff"
        elif choice == "claim_nul":
            request["claim"] = "\x00"
        elif choice == "claim_nul_inside":
            request["claim"] = request["claim"] + "\x00"
        elif choice == "claim_x1f":
            request["claim"] = "\x1f" + request["claim"] + "\x1e"
        elif choice == "claim_x1f_inner":
            request["claim"] = request["claim"].replace(" ", "\x1f", 1)
        elif choice == "claim_surrogate":
            request["claim"] = request["claim"] + " \ud800"
        elif choice == "claim_long":
            request["claim"] = (request["claim"] + " ") * (10001 // (len(request["claim"]) + 1) + 1)
        elif choice == "claim_edge_unicode":
            request["claim"] = rnd.choice(["\u00a0", "\u3000", "\ufeff", "\u200b", "\x85", "\u2028"]) + request["claim"] + rnd.choice(["\u00a0", "\u3000", "\ufeff", "\u200b", "\x1f"])
        elif choice == "claim_only_ws_unicode":
            request["claim"] = "\u3000\ufeff\u00a0"
        elif choice.startswith("text_") and ev:
            item = rnd.choice(ev)
            item["text"] = {
                "text_ws": " \t ", "text_zw": "\u200b\u200c", "text_nul": item["text"] + "\x00tail",
                "text_x1f_only": "\x1f", "text_x1f_prefix": "\x1f" + item["text"] + "\x1d", "text_empty": "",
                "text_long": (item["text"] + " ") * (100001 // (len(item["text"]) + 1) + 1),
            }[choice]
        elif choice.startswith("ref_") and ev:
            item = rnd.choice(ev)
            if choice.startswith("ref_collide") and len(ev) >= 2:
                other = ev[0] if item is not ev[0] else ev[1]
                pad = {"ref_collide_space": " ", "ref_collide_nbsp": "\u00a0", "ref_collide_x1f": "\x1f",
                       "ref_collide_bom": "\ufeff"}[choice]
                item["reference"] = pad + other["reference"] + pad
            else:
                item["reference"] = {"ref_empty": " ", "ref_x1f_only": "\x1f", "ref_zw_only": "\u200b",
                                     "ref_nul": "m\x001", "ref_long": "r" * 1001,
                                     "ref_collide_space": " ", "ref_collide_nbsp": "\u00a0",
                                     "ref_collide_x1f": "\x1f", "ref_collide_bom": "\ufeff"}[choice]
        elif choice == "too_many":
            config["max_evidence"] = max(1, len(ev) - 1) if ev else 1
            if not ev:
                request["evidence"] = [{"reference": "a", "memory_id": _uuid(rnd), "text": "A."},
                                       {"reference": "b", "memory_id": _uuid(rnd), "text": "B."}]
        elif choice in ("dup_id", "dup_id_upper") and len(ev) >= 2:
            ev[1]["memory_id"] = ev[0]["memory_id"] if choice == "dup_id" else ev[0]["memory_id"].upper()
        elif choice == "model_ws":
            config["model"] = rnd.choice(self.pool("MODELS"))
        elif choice == "revision_ws":
            config["revision"] = rnd.choice(self.pool("REVISIONS"))
        elif choice == "cfg_str_threshold":
            config["entailment_threshold"] = rnd.choice(["0.9", "0.8", " 0.85 "])
        elif choice == "cfg_float_int":
            config[rnd.choice(["max_group_size", "group_candidate_limit", "max_evidence", "batch_size"])] = rnd.choice([2.0, 3.0, "2"])
        elif choice == "cfg_bool":
            config[rnd.choice(["entailment_threshold", "max_group_size"])] = True
        elif choice == "cfg_strict_policy":
            config[rnd.choice(["entailment_policy", "refutation_policy"])] = "strict"
        elif choice == "cfg_unknown":
            config["schedule"] = "eager"
        elif choice == "rcs_int":
            request["requires_complete_set"] = 1
        elif choice == "rcs_str":
            request["requires_complete_set"] = "yes"
        elif choice == "rcs_zero":
            request["requires_complete_set"] = 0
        elif choice == "rcs_none":
            request["requires_complete_set"] = None
        elif choice == "claim_nonstr":
            request["claim"] = rnd.choice([42, None, ["x"], 1.5])
        elif choice == "evidence_none":
            request["evidence"] = None
            self.tags.add("evidence_raw")
        elif choice == "evidence_mapping":
            request["evidence"] = ev[0] if ev else {"reference": "a", "memory_id": _uuid(rnd), "text": "A."}
            self.tags.add("evidence_raw")
        elif choice == "evidence_extra_field" and ev:
            ev[0]["confidence"] = 0.5
        elif choice == "bad_uuid" and ev:
            ev[0]["memory_id"] = "not-a-uuid"
        elif choice == "bad_enum" and ev:
            ev[0]["epistemic_type"] = "Hypothetical"

    def config(self) -> dict:
        rnd = self.rnd
        cfg: dict = {}
        if rnd.random() < 0.3:
            cfg["entailment_threshold"] = rnd.choice([0.5, 0.6, 0.8, 0.85, 0.9, 0.95, 1.0, 1])
        if rnd.random() < 0.3:
            cfg["contradiction_threshold"] = rnd.choice([0.5, 0.6, 0.8, 0.85, 0.9, 0.95, 1.0, 1])
        if rnd.random() < 0.5:
            cfg["max_group_size"] = rnd.choice([1, 2, 3, 3])
        if rnd.random() < 0.3:
            cfg["group_candidate_limit"] = rnd.choice([2, 3, 4, 8, 16])
        if rnd.random() < 0.15:
            cfg["max_evidence"] = rnd.choice([1, 2, 3, 6, 64, 256])
        if rnd.random() < 0.1:
            cfg["batch_size"] = rnd.choice([1, 2, 256])
        if rnd.random() < 0.25:
            cfg["entailment_policy"] = rnd.choice(["speech_act_guarded", "model_only"])
        if rnd.random() < 0.25:
            cfg["refutation_policy"] = rnd.choice(["explicit_corroboration", "model_only"])
        if rnd.random() < 0.06:
            cfg["model"] = rnd.choice(self.pool("MODELS")[:8])
        if rnd.random() < 0.06:
            cfg["revision"] = rnd.choice(self.pool("REVISIONS")[:5] + ["main"])
        for key, value in cfg.items():
            self.tags.add(f"cfg:{key}={value!r}"[:60])
        return cfg

    def scores_spec(self, case: dict) -> dict:
        rnd = self.rnd
        spec: dict = {"overrides": self.overrides, "pair_overrides": self.pair_overrides}
        k = rnd.random()
        if "scores" in self.exclude:
            spec["container"] = "float64"
            self.tags.add("container:float64")
            return spec
        spec["container"] = ("float64" if k < 0.72 else "float32" if k < 0.8 else "softmax32" if k < 0.86
                             else "list" if k < 0.89 else "tuple_rows" if k < 0.9 else "float16" if k < 0.92
                             else "int" if k < 0.93 else "bool" if k < 0.94 else "str" if k < 0.95
                             else "object" if k < 0.955 else "none_row" if k < 0.96 else "float64")
        if rnd.random() < 0.12:
            premises = list(self.overrides) or ["*"]
            target = "*" if rnd.random() < 0.4 else rnd.choice(premises)
            spec["perturb"] = {target: rnd.choice(PERTURBATIONS)}
        if rnd.random() < 0.03:
            spec["shape"] = rnd.choice(["drop_row", "extra_row", "extra_col", "two_col", "ragged", "flat", "transpose"])
        self.tags.add("container:" + spec["container"])
        if spec.get("perturb"):
            self.tags.add("perturb:" + list(spec["perturb"].values())[0])
        if spec.get("shape"):
            self.tags.add("shape:" + spec["shape"])
        return spec

    def request(self) -> dict:
        rnd = self.rnd
        topic = rnd.choice(TOPICS)
        slots = _slots(rnd, self)
        claim = self.claim(topic, slots)
        count = rnd.choices([0, 1, 2, 3, 4, 5, 6, 9], [1, 6, 6, 5, 4, 2, 1, 1])[0]
        evidence = self.evidence(topic, slots, count)
        if rnd.random() < 0.1 and evidence:  # a passage identical to another one's text
            dup = dict(evidence[0])
            dup["reference"] = "dup-" + dup["reference"]
            dup["memory_id"] = _uuid(rnd)
            evidence.append(dup)
            self.tags.add("dup_text")
        request = {"claim": _decorate(claim, rnd, 0.15, self.pool("EDGE_WS")), "evidence": evidence,
                   "requires_complete_set": rnd.random() < 0.07}
        return request

    def bundle(self, config: dict) -> dict:
        rnd = self.rnd
        topic = rnd.choice(TOPICS)
        slots = _slots(rnd, self)
        claim = self.claim(topic, slots)
        count = rnd.choice([0, 1, 2, 3, 3, 4, 5])
        fmt = rnd.choice(["auditable", "compact", "reader", "reader"])
        candidates = []
        section_names = ["facts", "events", "system_instructions"]
        section = 0
        context_lines = []
        for i in range(count):
            text, role = self.passage(topic, slots)
            self.score_passage(text, role)
            quirks = "bundle_quirks" not in self.exclude
            ref_kind = rnd.random() if quirks else rnd.random() * 0.72
            if ref_kind < 0.65:
                reference = f"M{i + 1}"
            elif ref_kind < 0.72:
                reference = None  # no context reference: PRME uses str(node.id)
                self.tags.add("bundle:ref_none")
            elif ref_kind < 0.8:
                reference = rnd.choice([" M%d" % (i + 1), "M%d " % (i + 1), "\u00a0M%d" % (i + 1), "\x1fM%d" % (i + 1)])
                self.tags.add("bundle:ref_ws")
            elif ref_kind < 0.87:
                reference = rnd.choice(['M"%d' % (i + 1), "M\\%d" % (i + 1), "M\t%d" % (i + 1), "M%d]" % (i + 1)])
                self.tags.add("bundle:ref_special")
            else:
                reference = f"m{i + 1}" if rnd.random() < 0.6 else "ABCDEFG"[i]
            mid = _uuid(rnd)
            rt_kind = rnd.random() if quirks else rnd.random() * 0.78
            if rt_kind < 0.78:
                rendered = _decorate(text, rnd, 0.1, self.pool("EDGE_WS"))
            elif rt_kind < 0.84:
                rendered = None
                self.tags.add("bundle:rt_none")
            else:
                rendered = rnd.choice(["", "   ", "\u200b", "\x1f", text + "\x00", "\ufeff" + text])
                self.tags.add("bundle:rt_odd")
            if i and rnd.random() < 0.3 and section < 2:
                section += 1
            cand = {"section": section_names[section], "reference": reference, "memory_id": mid,
                    "rendered_text": rendered, "content": text}
            if rnd.random() < 0.4:
                cand["epistemic_type"] = rnd.choice(EPISTEMIC)
            if rnd.random() < 0.3:
                cand["lifecycle_state"] = rnd.choice(LIFECYCLE)
            if rnd.random() < 0.2:
                cand["source_type"] = rnd.choice(SOURCE_TYPES)
            cand["valid_from"] = rnd.choice(["2026-01-01T00:00:00Z", "2025-06-01T12:00:00+00:00"])
            if rnd.random() < 0.15:
                cand["event_time"] = rnd.choice(DATETIMES[:2])
            if rnd.random() < 0.1:
                cand["valid_to"] = "2027-01-01T00:00:00Z"
            candidates.append(cand)
            # how it is cited in the rendered context
            shown_ref = reference if reference is not None else mid
            cite = rnd.random() if quirks else rnd.random() * 0.7
            body = rendered if rendered is not None else ""
            if cite < 0.45:
                context_lines.append(f"[{shown_ref.strip() if rnd.random() < 0.5 else shown_ref}] {body}")
            elif cite < 0.6:
                context_lines.append(json.dumps({"id": shown_ref, "text": body}, ensure_ascii=False, separators=(",", ":")))
            elif cite < 0.7:
                context_lines.append(f'"{shown_ref}": {body}')
            elif cite < 0.78:
                context_lines.append(f"[{shown_ref.lower()}0] {body}")
                self.tags.add("bundle:miscited")
            else:
                context_lines.append(body)
                self.tags.add("bundle:uncited")
        quirks = "bundle_quirks" not in self.exclude
        if quirks and count and rnd.random() < 0.06:  # the same memory in two sections
            dup = dict(candidates[0])
            dup["section"] = "zz_dup"
            candidates.append(dup)
            self.tags.add("bundle:dup_node")
        aliases = {}
        if quirks and count and rnd.random() < 0.05:
            aliases["alias"] = candidates[0]["memory_id"]
            context_lines.append("[alias]")
            self.tags.add("bundle:alias")
        sep = rnd.choice(["\n", "\n\n", " "])
        rendered_context = sep.join(context_lines)
        refs_kind = rnd.random()
        evidence_refs = None
        derived = derive_references(candidates, aliases)
        if refs_kind < 0.5:
            evidence_refs = None
        elif not quirks:
            evidence_refs = [r for r in derived if rnd.random() < 0.6]
            self.tags.add("bundle:refs_bundle_order")
        else:
            pool = list(derived)
            rnd.shuffle(pool)
            k = rnd.random()
            if k < 0.4:
                evidence_refs = list(reversed(derived))
                self.tags.add("bundle:refs_reversed")
            elif k < 0.6:
                evidence_refs = pool[: max(1, len(pool) // 2)] if pool else []
                self.tags.add("bundle:refs_subset")
            elif k < 0.7:
                evidence_refs = pool + pool[:1]
                self.tags.add("bundle:refs_dup")
            elif k < 0.8:
                evidence_refs = pool + ["M99"]
                self.tags.add("bundle:refs_unknown")
            elif k < 0.86:
                evidence_refs = [" " + r + " " for r in pool]
                self.tags.add("bundle:refs_ws")
            elif k < 0.9:
                evidence_refs = "".join(r for r in pool if len(r) == 1) or (pool[0] if pool else "M1")
                self.tags.add("bundle:refs_string")
            else:
                evidence_refs = []
                self.tags.add("bundle:refs_empty")
        self.score_groups([c["rendered_text"] or "" for c in candidates])
        self.tags.add("bundle:format=" + fmt)
        return {"claim": _decorate(claim, rnd, 0.1, self.pool("EDGE_WS")), "rendered_context": rendered_context, "context_format": fmt,
                "candidates": candidates, "aliases": aliases, "evidence_refs": evidence_refs,
                "requires_complete_set": rnd.random() < 0.05}

    def case(self, case_id: str) -> dict:
        rnd = self.rnd
        weights = [4, 4, 2, 1.5, 1.5]
        if "bundle" in self.exclude:
            weights[3] = weights[4] = 0
        if "many" in self.exclude:
            weights[2] = 0
        kind = rnd.choices(["verify", "verify_sync", "verify_many", "bundle", "bundle_sync"], weights)[0]
        config = self.config()
        case: dict = {"id": case_id, "seed": self.seed, "kind": kind, "config": config,
                      "schedule": "eager" if rnd.random() < 0.3 else "staged",
                      "evidence_as": rnd.choices(["model", "dict", "generator", "raw"], [30, 66, 2, 2])[0]}
        if kind in ("bundle", "bundle_sync"):
            case["bundle"] = self.bundle(config)
        else:
            count = 1 if kind != "verify_many" else rnd.choice([1, 2, 3, 4])
            requests = [self.request() for _ in range(count)]
            if kind == "verify_many" and count > 1 and rnd.random() < 0.4:
                # the same passages for a second claim, with hypothesis-specific scores
                requests[1]["evidence"] = [dict(e) for e in requests[0]["evidence"]]
                for e in requests[1]["evidence"]:
                    self.pair_overrides.append([e["text"].strip(), requests[1]["claim"].strip(),
                                                row_for(rnd.choice(["ent", "con", "low"]), rnd.random(), rnd.random())])
                self.tags.add("many:shared_evidence")
            if rnd.random() < 0.15 and "bad" not in self.exclude:
                self.bad_input(rnd.choice(requests), config)
            case["requests"] = requests
            if "evidence_raw" in self.tags:
                case["evidence_as"] = "raw"
        case["scores"] = self.scores_spec(case)
        case["tags"] = sorted(self.tags)
        return case


def derive_references(candidates: list[dict], aliases: dict) -> list[str]:
    """PRME's reference per candidate (bundle_evidence): the context reference mapped to the
    node id (last one wins), else str(node.id).  One entry per candidate, bundle order."""
    context_references = context_reference_map(candidates, aliases)
    by_id = {}
    for reference, memory_id in context_references.items():
        by_id[str(uuid.UUID(memory_id))] = reference
    return [by_id.get(str(uuid.UUID(c["memory_id"])), str(uuid.UUID(c["memory_id"]))) for c in candidates]


def context_reference_map(candidates: list[dict], aliases: dict) -> dict:
    refs: dict = {}
    for c in candidates:
        if c["reference"] is not None:
            refs[c["reference"]] = c["memory_id"]
    refs.update(aliases)
    return refs


def generate(seed: int, n: int, exclude=()) -> list[dict]:
    unknown = set(exclude) - set(EXCLUDABLE)
    if unknown:
        raise ValueError(f"unknown exclusions {sorted(unknown)}; known: {EXCLUDABLE}")
    return [_Gen(seed, i, exclude).case(f"s{seed}-{i}") for i in range(n)]


def dumps(case: dict) -> str:
    return json.dumps(case, ensure_ascii=True)


if __name__ == "__main__":
    import sys

    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    for case in generate(seed, n):
        print(dumps(case))
