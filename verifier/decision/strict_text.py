"""Text analysis of the strict policy (docs/policy.md): normalisation, content tokens and stems,
speech-act modes, negation scope, self-reports.

Pure functions of text, like :mod:`verifier.decision.guards`, and never used by the
reference policies. Every pattern is compiled once and has no nested
quantifiers, so each function runs in time linear in its input.

Texts are matched after :func:`normalise`: Unicode NFKC (full-width letters
become ASCII), curly apostrophes and quotes become straight ones, and the
minus sign U+2212 becomes ``-``. Values live in :mod:`verifier.decision.strict_values`.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

from .guards import ATTEMPT, UNCERTAINTY, singular
from .guards import speech_act_modes as reference_modes
from .strict_quotes import reading_claim, view
from .strict_reports import WORD_VERB_STEM, words_on_facts
from .strict_values import MONTH_MAY_CONTEXT, canonical_number, has_total_cue, normal_text, strict_values, values_conflict

__all__ = [
    "reading_claim",
    "normalise",
    "view",
    "strict_tokens",
    "stems",
    "strict_modes",
    "unit_modes",
    "opens_question",
    "claim_modes",
    "modes_compatible",
    "is_past_claim",
    "Clause",
    "polarity_clauses",
    "negated_clauses",
    "negation_cores",
    "is_negated",
    "SCOPE_BOUNDARY",
    "claim_cue",
    "double_negation_only",
    "strict_values",
    "values_conflict",
    "has_total_cue",
    "ATTRIBUTION",
    "ATTITUDE",
    "PAST",
    "QUESTION",
    "SPEAKER",
]

ATTRIBUTION = "attribution"
ATTITUDE = "attitude"
PAST = "past"
QUESTION = "question"
#: The holder of a first-person attitude ("I think"), and of the user's ("the user thinks").
SPEAKER = "speaker"

_I = re.IGNORECASE

#: NFKC, straight apostrophes and quotes, ASCII minus (docs/policy.md, "Normalisation and self-reports").
normalise = normal_text


# ---------------------------------------------------------------- words, content tokens and stems

_TOKEN = re.compile(r"[^\W_][\w'-]*(?:[.,]\d+)*")
_CONTRACTIONS = {
    "dont": "do", "doesnt": "does", "didnt": "did", "isnt": "is", "wasnt": "was", "arent": "are",
    "werent": "were", "cant": "can", "cannot": "can", "wont": "will", "hasnt": "has", "havent": "have",
    "hadnt": "had", "couldnt": "could", "shouldnt": "should", "wouldnt": "would",
}
_NEGATION_WORDS = frozenset({"not", "never", "no", "nobody", "none", "nothing", "neither", "nor"})
#: The reference's generic words (docs/decision.md §4.5) plus auxiliaries and fillers.
_GENERIC = frozenset(
    """a an and app application are at be by currently did do does for from in i is it longer no not
    of on pipeline project service system that team the this to user was were we will with you
    has have had been can anymore any""".split()
)
#: Words that carry no content for scoping (docs/policy.md, "Normalisation and self-reports"): pronouns and fillers.
_STOP = frozenset(
    """he she they them his her hers their theirs its i'm i've i'd i'll me my mine us our ours your yours
    these those there here who whom whose which what when where why how also too still yet ever just
    only even very really all some such other else anything something everything either both each
    more most much many than then so as if whether but or about after before over into onto up down
    out off again same would could should may might must shall it's that's""".split()
)
_IRREGULAR = {
    "led": "lead", "ran": "run", "wrote": "write", "written": "write", "took": "take", "taken": "take",
    "made": "make", "built": "build", "sold": "sell", "bought": "buy", "paid": "pay", "sent": "send",
    "spent": "spend", "won": "win", "lost": "lose", "held": "hold", "met": "meet", "found": "find",
    "gave": "give", "given": "give", "went": "go", "gone": "go", "began": "begin", "begun": "begin",
    "chose": "choose", "chosen": "choose", "knew": "know", "known": "know", "shown": "show", "told": "tell",
    "thought": "think", "brought": "bring", "kept": "keep", "felt": "feel", "got": "get", "gotten": "get",
    "became": "become", "came": "come", "drove": "drive", "spoke": "speak", "spoken": "speak",
    "used": "use", "using": "use", "stood": "stand", "taught": "teach", "caught": "catch", "fought": "fight",
    "grew": "grow", "grown": "grow",
}
#: Near-synonym verbs read as one relation: "works on" and "runs on" (docs/policy.md, "Normalisation and self-reports").
_SYNONYMS = {"work": "run", "operat": "run", "function": "run"}


def strict_tokens(text: str) -> frozenset[str]:
    """Content tokens (docs/policy.md): like the reference's, but over every Unicode word and number
    (numbers canonical: ``1,000`` = ``1000``, ``3.0`` = ``3``), with contractions read as their
    auxiliary and negation words left out."""
    found = {_token(word) for word in _TOKEN.findall(normalise(text))}
    found.discard("")
    return frozenset(found)


@functools.lru_cache(maxsize=1 << 16)
def _token(word: str) -> str:
    """One word's content token ("" for none); cached per word: words repeat in any text, and
    this keeps the strict policy's reading of a long passage linear and cheap (docs/performance.md)."""
    folded = word.casefold().rstrip("'")
    if folded.endswith("'s"):
        folded = folded[:-2]
    if not folded:
        return ""
    if folded[0].isdigit():
        return canonical_number(folded) if re.fullmatch(r"\d[\d,]*(?:\.\d+)?", folded) else folded
    if folded.endswith("n't"):
        folded = {"can't": "can", "won't": "will"}.get(folded, folded[:-3])
    folded = _CONTRACTIONS.get(folded, folded)
    if folded in _GENERIC or folded in _NEGATION_WORDS:
        return ""
    return singular(folded)


@functools.lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if not word.isalpha():
        return word
    for suffix, shortest in (("ing", 6), ("ed", 5)):
        if word.endswith(suffix) and len(word) >= shortest:
            word = word[: -len(suffix)]
            if len(word) >= 4 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]  # shipped → ship, running → run
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return _SYNONYMS.get(word, word)


def stems(text: str) -> frozenset[str]:
    """Strict content tokens, crudely stemmed (``shipped`` = ``ships`` = ``ship``, ``led`` = ``lead``),
    near-synonym verbs merged (``works`` = ``runs``) and pronouns and fillers left out: the words
    the scoping rules compare (docs/policy.md, "Normalisation and self-reports")."""
    found = set(map(_word_stem, _TOKEN.findall(normalise(text))))
    found.discard("")
    return frozenset(found)


@functools.lru_cache(maxsize=1 << 16)
def _word_stem(word: str) -> str:
    """One word's stem ("" for none): :func:`_token`, then :func:`_stem` unless a filler."""
    token = _token(word)
    return "" if not token or token in _STOP else _stem(token)


# ---------------------------------------------------------------- clauses and negation scope

_AUXILIARY = (
    r"(?:(?:do|does|did|is|are|was|were|has|have|had|will|would|can|could|should)(?:n't|\s+not)?|never|not|"
    r"no\s+longer|cannot|dont|doesnt|didnt|isnt|wasnt)\b"
)
_CLAUSE = re.compile(
    r"[;:!?()]|[.,](?!\d)|\s[—–-]\s|\b(?:but|however|whereas|although|though|because)\b|"
    r"\b(?:and|or)\b(?=\s+(?:" + _AUXILIARY + r"|no\b))",
    _I,
)
SCOPE_BOUNDARY = re.compile(r"[;:!?]|[.,](?!\d)|\b(?:so|because|but|and|while|although|though|whereas|however)\b", _I)
_QUOTED = re.compile(r'"[^"\n]*"' r"|(?<!\w)'(?:[^'\n]|(?<=\w)'(?=\w)){1,200}'(?!\w)")
_RELATIVE_NEGATION = re.compile(
    r"\b(?:that|which|who)\s+(?:(?:is|was|were|are|has|had|have|been|did|does|do)\s+)*"
    r"(?:not|never|\w+n't)\s+\w+",
    _I,
)
_NEGATION_CUE = re.compile(
    r"\b(?:not(?!\s+(?:only|just)\b)|never|no\s+longer|cannot|\w+n't|dont|doesnt|didnt|isnt|wasnt|arent|"
    r"werent|cant|wont|hasnt|havent|hadnt|couldnt|shouldnt|wouldnt|nobody|none|nothing|neither|nor|"
    r"(?:has|have|had|is|are|was|were)\s+yet\s+to|fail(?:s|ed)?\s+to|"
    r"(?:is|'s|was|are|were)\s+(?:false|untrue)\s+that|\bit(?:'s|\s+is|\s+was)\s+a\s+(?:lie|myth)\s+that|"
    r"(?<!\bwith\s)no(?!\s+longer)(?=\s+\w))\b",
    _I,
)
#: Negative predicates: after a negation they make a double negation ("never forgets to" = always).
#: "fails to" and "has yet to" are negation cues of their own, so "never fails to" is two cues.
_NEGATIVE_PREDICATE = re.compile(
    r"\b(?:failing\s+to|forg(?:et|ets|ot|otten|etting)\s+to|neglect(?:s|ed|ing)?\s+to|"
    r"ceas(?:e|es|ed|ing)\s+to|hesitat(?:e|es|ed|ing)\s+to|un(?:common|usual|like|reasonable|important|"
    r"true|known|familiar|aware|able|available|related|successful|typical|expected))\b",
    _I,
)


#: A double negation that may span a comma ("never fails to", "has never, in forty years, failed
#: to", "did not forget to"): it asserts, so it is read as its positive (docs/policy.md).
_DOUBLE_NEGATION = re.compile(
    r"\b(?:never|not|\w+n't|cannot)\b([^.;!?\n]{0,60}?)\b(?:fail(?:s|ed|ing)?|forg(?:et|ets|ot|otten|etting)|"
    r"neglect(?:s|ed|ing)?|ceas(?:e|es|ed|ing))\s+to\b",
    _I,
)


def _positive_double_negation(text: str) -> str:
    return _DOUBLE_NEGATION.sub(lambda match: "always" + match.group(1), text)


_ELLIPSIS = re.compile(r"\s*(?:not|never)\b(?!\s+(?:only|just)\b)", _I)


class Clause(NamedTuple):
    """One clause of a passage: its text, whether it is negated, and the clause it leans on: the
    conjunct before it when it was cut at "and/or" before an auxiliary ("Alice uses Jira | and does
    not use Asana"), or the clause whose predicate it elides ("Tests pass on Linux | but not on Windows")."""

    text: str
    negated: bool
    lead: str


def _negated(clause: str) -> bool:
    count = len(_NEGATION_CUE.findall(clause))
    if count % 2 == 1 and _NEGATIVE_PREDICATE.search(clause):
        count += 1
    return count % 2 == 1


def polarity_clauses(text: str) -> list[Clause]:
    """Every clause with its polarity (docs/policy.md, "Negation scope").

    Quoted spans (double quotes, or single quotes around words) are mentions, not assertions,
    and are left out; a negation in a relative clause (``that was not tested``) is cut out with it;
    clauses end at ``. ; : ! ? ,``, at but/however/whereas/although/though, and at "and"/"or"
    before an auxiliary or a negation; "not only" and "with no" are not negations; two negations
    in one clause cancel, and so do a negation and a negative predicate ("never fails to").
    """
    text = _RELATIVE_NEGATION.sub(" ", _QUOTED.sub(" ", _positive_double_negation(normalise(text))))
    clauses: list[Clause] = []
    start, lead = 0, ""
    previous = ""
    for match in [*_CLAUSE.finditer(text), None]:
        piece = text[start : match.start() if match else len(text)]
        if not piece.strip():
            start = match.end() if match else start
            continue
        negated = _negated(piece)
        if negated and not lead and _ELLIPSIS.match(piece) and previous and not _negated(previous):
            lead = previous  # "X, not Y" / "X but not Y": the predicate of Y is X's
        clauses.append(Clause(piece, negated, lead))
        previous = piece
        lead = piece if match and match.group(0).lower() in ("and", "or") else ""
        start = match.end() if match else start
    return clauses


def negated_clauses(text: str) -> list[str]:
    """The negated clauses of :func:`polarity_clauses`."""
    return [clause.text for clause in polarity_clauses(text) if clause.negated]


def negation_cores(text: str) -> list[frozenset[str]]:
    """For each negated clause, its stems without the word the negation applies to first (the
    verb of "does not use Jira", the noun of "no issues were found"): what a passage must name for
    the negation to be about it (docs/policy.md, "Scope")."""
    cores = []
    for clause in polarity_clauses(text):
        if not clause.negated:
            continue
        cues = list(_NEGATION_CUE.finditer(clause.text))
        head: frozenset[str] = frozenset()
        for word in clause.text[cues[-1].end() :].split() if cues else []:
            head = stems(word)
            if head:
                break
        cores.append(stems(clause.text) - head)
    return cores


def is_negated(text: str) -> bool:
    """Whether ``text`` has a negated clause in the strict sense."""
    return any(clause.negated for clause in polarity_clauses(text))


_CLAIM_CUE = re.compile(
    r"\b(?:neither|nor|without|instead|rather\s+than|switched\s+from|replaced|incorrect|false)\b", _I
)


def claim_cue(claim: str) -> bool:
    """The strict negation or correction cue of a claim: the reference's cues read after
    :func:`normalise`, plus every strict negation cue (docs/policy.md)."""
    text = _positive_double_negation(normalise(claim))
    return bool(_CLAIM_CUE.search(text) or _NEGATION_CUE.search(text))


def double_negation_only(claim: str) -> bool:
    """Whether every negation of ``claim`` is part of a double negation ("never fails to"): the
    claim asserts, and the reference's negation cue in it is no negation (docs/policy.md)."""
    text = normalise(claim)
    return text != _positive_double_negation(text) and not _NEGATION_CUE.search(_positive_double_negation(text))


# ---------------------------------------------------------------- speech acts

_ATTEMPT = re.compile(r"\b(?:try|tries|tried|trying|attempt\w*|work(?:s|ed|ing)?\s+(?:on|to))\b", _I)
_CAPABILITY = re.compile(
    r"(?<!')\b(?:[Ii]t|[Tt]his|[Tt]hat|(?!(?:does|do|did|not|never|still|also|only|now)\b)[a-z][\w-]*)\s+"
    r"(?:(?:still|also|only|now|does|do|did|doesn't|don't|didn't|dont|doesnt|didnt|not|never)\s+){0,3}"
    r"(?:works|work|worked)\s+on$"
)
_PEOPLE = frozenset("i we you he she they team teams people staff everyone someone engineer engineers developer developers".split())


def speech_act_modes(text: str) -> frozenset[str]:
    """The reference modes of ``text``, except that a thing that "works on" something (``the app
    works on Postgres``: it runs there) is no attempt; a person who works on something still is."""
    modes = reference_modes(text)
    if ATTEMPT not in modes:
        return modes
    for match in _ATTEMPT.finditer(text):
        found = _CAPABILITY.search(text[max(0, match.start() - 40) : match.end()])
        if not found or found.group(0).split()[0].lower() in _PEOPLE:
            return modes
    return modes - {ATTEMPT}


_HEDGE = re.compile(
    r"\b(?:probably|likely|unlikely|could|expected\s+to|seems?|seemed|appears?\s+to|apparently|"
    r"presumably|supposedly|seemingly|not\s+sure|unsure|sounds\s+like|looks\s+like|looks\s+as\s+if|"
    r"supposed\s+to|meant\s+to|rumou?r\s+has\s+it|(?:so\s+)?i\s+(?:heard|hear)|word\s+is|in\s+theory|"
    r"(?:fairly|pretty|reasonably|quite)\s+(?:sure|certain|confident)|would\s+have|(?:would|'d)\s+love\s+to|"
    r"dream(?:ed|t)\s+(?:that|(?:I|we|he|she|they)\b)|had\s+a\s+dream\s+(?:that|about|where|in\s+which)|"
    r"in\s+(?:my|a|the|his|her|their|our)\s+dream)\b",
    _I,
)
#: The modal "may": lower case and followed by a lower-case word ("May Chen" is a name, "May saw
#: the launch" the month), and not in a month context.
_MODAL_MAY = re.compile(r"\bmay\s+(?:not\s+)?[a-z]")
#: Public records are no one's say-so: "according to the 2010 census" is not an attribution.
_RECORDS = r"\s+(?:the\s+)?(?:\d{4}\s+)?(?:official\s+)?(?:census|records|statistics|figures|registry|register)\b"
#: "said goodbye", "I said yes", "like I said": a greeting, the user's own answer, or the user repeating
#: themself reports nothing ("Omar said yes" reports Omar's answer).
_NOT_REPORTED = (r"(?<!\blike\sI\s)(?<!\bas\sI\s)(?!\w+\s+(?:goodbye|hello|hi|thanks|sorry)\b)"
                 r"(?!(?<=\bI\s)\w+\s+(?:yes|no)\b)(?!(?<=\bwe\s)\w+\s+(?:yes|no)\b)")
_ATTRIBUTION = re.compile(
    r"\b(?:claim(?:s|ed)?\s+that|claimed|" + _NOT_REPORTED + r"(?:said|says)|stated|states\s+that|told|"
    r"according\s+to(?!" + _RECORDS + ")|"
    r"reported\s+that|argued|insisted|alleged|rumou?red|heard\s+that)\b",
    _I,
)
#: An attitude and its holder: "I think", "the user believes", "Priya thinks".
_ATTITUDE = re.compile(
    r"\b(?:(i|we)|(?:the\s+)?(user|customer|client)|([^\W\d_][\w'-]*))\s+(?:really\s+|still\s+|also\s+)?"
    r"(?:think|thinks|thought|believe|believes|believed|guess|guesses|suppose|supposes|feel|feels|"
    r"reckon|reckons|suspect|suspects|assume|assumes)\b",
    _I,
)
_PAST = re.compile(
    r"\b(?:used\s+to|formerly|former|previously)\b|\b(?:was|were|had)\s+once\b"
    r"|\buntil\s+(?:(?:19|20)\d\d|last|recently)\b",
    _I,
)
#: What follows a question's opening auxiliary: its subject. After is/are/were/do/does/can/could/would/
#: should/shall any word but "not" is read as one ("is dinner at 8", "do cats eat grapes"); after
#: has/have/had/was/did only a pronoun (u, ur too), a determiner (not a/an after has/have/had), a number
#: or a capitalised name ("did the backup run", "was 2024 a leap year"): "Had lunch with Maria.", "Was at
#: the dentist", "Had a great day" drop their subject and are statements (docs/policy.md, "Speech-act modes");
#: without a full stop or "!" at its end any word counts again ("did ravi finish the report").
_ASKED_SUBJECT = (r"(?:(?:i|you|u|ur|he|she|it|we|they|there|this|that|these|those|one|any\w*|some\w*|every\w*|"
                  r"no\s?one|nobody|nothing|the|my|your|his|her|its|our|their|each|all|both|either|neither)\b|\d|(?-i:[A-Z]))")
_QUESTION_START = re.compile(
    r"^\W*(?:(?:do|does|is|are|were|can|could|would|should|shall)\s+(?!not\b)\w|"
    r"(?:was|did)\s+(?:(?:a|an)\b|" + _ASKED_SUBJECT + r")|(?:has|have|had)\s+" + _ASKED_SUBJECT + r"|"
    r"(?:has|have|had|was|did)\s+(?!not\b)(?![^\n]*[.!][\s\"')\]]*$)\w)"
    r"|^\W*may\s+(?:i|we|you|he|she|it|they)\b|\b(?:can|could)\s+you\b"
    r"|\b(?:please|pls|plz)\s+(?:confirm|check|verify|let\s+me\s+know)\b",
    _I,
)


def _hedged(clause: str) -> bool:
    if _HEDGE.search(clause):
        return True
    return any(
        not MONTH_MAY_CONTEXT.search(clause[max(0, match.start() - 12) : match.end()])
        for match in _MODAL_MAY.finditer(clause)
    )


def _attitudes(piece: str) -> set[str]:
    holders = set()
    for match in _ATTITUDE.finditer(piece):
        first, user, other = match.groups()
        holders.add(f"{ATTITUDE}:{SPEAKER if (first or user) else other.casefold()}")
    return holders


def _extra_modes(text: str, claim_tokens: frozenset[str] | None, questions: bool = True) -> set[str]:
    """The strict policy's extra modes of ``text``: hedges (as uncertainty), attribution, attitudes
    with their holder, past state, questions without "?". With ``claim_tokens``, only clauses (and,
    for questions, lines and sentences) sharing a content token with the claim count: an unrelated
    "could" does not block."""
    modes: set[str] = set()
    for line in text.splitlines():
        for sentence in re.split(r"(?<=[.!?])\s+", line):
            if questions and _QUESTION_START.search(sentence) and (claim_tokens is None or strict_tokens(sentence) & claim_tokens):
                modes.add(QUESTION)
        for piece in [line] if claim_tokens is None else SCOPE_BOUNDARY.split(line):
            if claim_tokens is not None and not strict_tokens(piece) & claim_tokens:
                continue
            if _hedged(piece):
                modes.add(UNCERTAINTY)
            if _ATTRIBUTION.search(piece) or words_on_facts(piece) is not None:
                modes.add(ATTRIBUTION)
            modes |= _attitudes(piece)
            if _PAST.search(piece):
                modes.add(PAST)
    return modes


_PAST_CUE = re.compile(r"\b(?:used\s+to|formerly|former|previously|back\s+then|at\s+the\s+time)\b", _I)
_PRESENT = re.compile(
    r"\b(?:is|are|am|isn't|aren't|now|currently|still|today|anymore|any\s+more|no\s+longer|has|have|"
    r"hasn't|haven't|does|do|doesn't|don't)\b",
    _I,
)
_PAST_VERB = re.compile(r"\b(?:was|were|had|did|wasn't|weren't|hadn't|didn't|" + "|".join(_IRREGULAR) + r")\b", _I)
_REGULAR_PAST = re.compile(r"^\W*(?:(?:the|a|an|our|my|his|her|their)\s+)?(?:[\w'-]+\s+){0,2}?[a-z]{2,}ed\b", _I)


def is_past_claim(claim: str) -> bool:
    """Whether a claim is about the past (docs/policy.md, "Speech-act modes"): a past cue (used to,
    formerly, former, previously, back then, at the time), or a past-tense verb (was, were, had,
    did, an irregular past, or an "-ed" verb right after the subject) and no present-tense marker
    (is, are, has, does, now, currently, still, today, anymore, no longer)."""
    text = normalise(claim)
    if _PAST_CUE.search(text):
        return True
    return bool((_PAST_VERB.search(text) or _REGULAR_PAST.search(text)) and not _PRESENT.search(text))


def claim_modes(claim: str) -> frozenset[str]:
    """A claim's modes under the strict policy: the reference modes of the normalised claim plus
    every extra mode anywhere in it, and ``past`` for a claim about the past (which a passage
    saying "used to" or "former" can then support)."""
    text = normalise(claim)
    modes = speech_act_modes(text) | frozenset(_extra_modes(text, None))
    if WORD_VERB_STEM.search(text):  # "Tom suggested trying the Thai place" is about what Tom suggested
        modes |= {ATTRIBUTION}
    if _attitudes(text) & {f"{ATTITUDE}:{SPEAKER}"}:
        modes |= {UNCERTAINTY}
    return modes | ({PAST} if is_past_claim(claim) else frozenset())


def unit_modes(text: str, *, questions: bool = True) -> frozenset[str]:
    """The modes of one clause, unscoped: the reference modes of the normalised text plus every
    extra mode in it (the speech-act scoping of docs/policy.md reads clauses one by one).
    ``questions=False`` leaves out the question put without "?" (it is read from the sentence)."""
    normal = normalise(text)
    return speech_act_modes(normal) | frozenset(_extra_modes(normal, None, questions))


def opens_question(sentence: str) -> bool:
    """Whether a sentence is put as a question without "?" ("did the backup run", "can you confirm")."""
    return bool(_QUESTION_START.search(normalise(sentence)))


def strict_modes(text: str, claim_tokens: frozenset[str]) -> frozenset[str]:
    """A passage's modes under the strict policy: the reference modes of the normalised text plus
    the extra modes of the clauses that share a content token with the claim."""
    normal = normalise(text)
    return speech_act_modes(normal) | frozenset(_extra_modes(normal, claim_tokens))


def modes_compatible(passage_modes: frozenset[str], modes: frozenset[str]) -> bool:
    """Every passage mode is a claim mode; the speaker's own attitude ("I think") also fits a
    claim that is itself uncertain."""
    speaker = f"{ATTITUDE}:{SPEAKER}"
    return all(mode in modes or (mode == speaker and UNCERTAINTY in modes) for mode in passage_modes)
