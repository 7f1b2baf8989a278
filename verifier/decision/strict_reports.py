"""The strict policy's reading of someone's word on a fact: "Priya denied that she approved it", "Omar
doubts that Priya approved it" (docs/policy.md, "Speech-act modes" and "Denials, doubts and takebacks").

A verb of writing, denying, doubting or guessing says what someone holds, not that it is so, when
"that" opens a clause after it; the same verbs before a noun ("wrote that Medium post", "denied that
Monday") or in a relative clause ("the email I wrote that the client loved") report nothing.
"""

from __future__ import annotations

import re
from typing import Optional

__all__ = ["WORD_ON_FACT", "WORD_VERB_STEM", "words_on_facts"]

_I = re.IGNORECASE

#: Someone's word on a fact, not the fact (docs/policy.md, "Speech-act modes"): a verb of writing, denying,
#: doubting or guessing, then "that" and a clause: a subject (a pronoun, a capitalised name, or a determiner
#: and a noun) and, within two more words, a finite verb ("Priya denied that she approved it", "Omar doubts
#: that Priya approved it"). Not "wrote that Medium post", "denied that Friday", "the dispute that Carla
#: had", "no doubt that": no clause, or a noun. A relative clause ("the email I wrote that the client loved")
#: is left out by :func:`words_on_facts`.
_WORD_VERB = (r"(?:wrote|writes|deny|denied|denies|doubt|doubts|doubted|dispute|disputed|disputes|suggest|suggested|"
              r"suggests|assume|assumed|assumes|guess|guessed|guesses|speculate|speculated|speculates|suspect|"
              r"suspected|suspects)")
_CLAUSE_SUBJECT = (r"(?:i|we|you|he|she|it|they|there|(?-i:[A-Z])[\w'-]*|"
                   r"(?:the|a|an|his|her|their|our|my|your|its|this|these|those|some|every|all)\s+[\w'-]+)")
_FINITE_VERB = (r"(?:is|was|are|were|has|had|have|will|would|could|can|should|might|must|did|does|do|never|"
                r"\w+n't|(?-i:[a-z])\w*ed|ate|went|took|made|said|got|gave|saw|knew|came|left|paid|sent|told|won|"
                r"lost|bought|sold|broke|stole|drove|ran|met|kept|spent|began|became|forgot|found|brought|felt|quit)")
WORD_ON_FACT = re.compile(
    r"(?<!\bthe\s)(?<!\ba\s)(?<!\bno\s)(?<!\bany\s)(?<!\bof\s)(?<!\bbeyond\s)(?<!\bwithout\s)\b" + _WORD_VERB
    + r"\s+that\s+" + _CLAUSE_SUBJECT + r"(?:(?:\s+[\w'-]+){0,2}?\s+" + _FINITE_VERB
    # or a present-tense verb right after the subject: "that the store closes at 9"
    + r"|\s+(?-i:[a-z])[a-z]+s)\b",
    _I,
)
#: Before a verb of :data:`WORD_ON_FACT`, the head of a relative clause: "the email I | wrote that …".
_RELATIVE_HEAD = re.compile(
    r"\b(?:the|a|an|my|our|his|her|their|your|this|these|those|every)\s+(?:[\w'-]+\s+){1,3}?"
    r"(?:i|we|you|he|she|they|(?-i:[A-Z])[\w'-]*)\s+$",
    _I,
)
#: A claim that itself uses such a verb ("Tom suggested trying the Thai place") reports a word too; the verbs
#: only, so "The report was written in 2020" or "the suggestion box" stay plain claims.
WORD_VERB_STEM = re.compile(r"\b" + _WORD_VERB + r"\b", _I)


def words_on_facts(piece: str) -> Optional[str]:
    """The first cue of :data:`WORD_ON_FACT` in ``piece`` that is no relative clause's verb, or ``None``."""
    for match in WORD_ON_FACT.finditer(piece):
        if not _RELATIVE_HEAD.search(piece, 0, match.start()):
            return match.group(0)
    return None
