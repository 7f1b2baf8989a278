"""Which references a rendered context cites (docs/decision.md §7), found in one pass over it.

A reference ``ref`` is cited when the context contains ``"ref"``, ``[ref]`` or
``"id":"ref"`` (PRME 0.15.0's substring rule, :func:`is_cited`; the third form
contains the first). :class:`CitationIndex` answers that rule for every
reference of a bundle at once, in time linear in the context and the
references, and with memory a small, bounded multiple of what the references
themselves take (the context is never copied or split into pieces):

* a reference without ``"``, ``[`` or ``]`` (every ordinary one) is cited
  exactly when it is the text between a double quote and the next special
  character (``"``, ``[`` or ``]``), that character being a double quote, or
  between a ``[`` and the next special character, being a ``]``. The context
  is read in slices of :data:`SLICE` characters; each slice's such texts are
  found at C speed (``str.split`` at ``"``, a regular expression for ``[``)
  and intersected with the references;
* a reference with one of those characters is matched as a sequence of
  *tokens* (each special character, and each maximal run between two of
  them): since its forms begin and end with a special character, every
  occurrence in the context lines up with the context's tokens, so one
  Aho-Corasick automaton over the forms' tokens reads the context's tokens once.
  Such references may hold :data:`MAX_SPECIAL_REFERENCE_CHARS` characters in
  all (more is refused: the automaton's size follows them).
"""

from __future__ import annotations

import re
from array import array
from typing import Iterable, Optional

from ..validation import InputError

__all__ = ["SLICE", "MAX_SPECIAL_REFERENCE_CHARS", "citation_forms", "is_cited", "CitationIndex"]

#: Characters of the context read at a time for ordinary references (what the regex engine's list of
#: matches holds at once).
SLICE = 1 << 16

_SPECIAL = '"[]'
_SPECIAL_RE = re.compile(r'["\[\]]')
#: The text after each ``[`` up to the next special character, when that is a ``]``.
_BRACKETED = re.compile(r'\[(?=([^"\[\]]*)\])')
_TOKENS = re.compile(r'["\[\]]|[^"\[\]]+')


def citation_forms(reference: str) -> tuple[str, ...]:
    """The strings whose presence in a rendered context cites ``reference`` (PRME 0.15.0's three).

    Args:
        reference: a candidate reference, exactly as the bundle names it.

    Returns:
        ``('"ref"', '[ref]', '"id":"ref"')``. (The third contains the first; it
        is listed because the reference lists it.)
    """
    return (f'"{reference}"', f"[{reference}]", f'"id":"{reference}"')


def is_cited(reference: str, rendered_context: str) -> bool:
    """Whether ``rendered_context`` cites ``reference`` (docs/decision.md §7).

    Args:
        reference: a candidate reference, exactly as the bundle names it (not stripped).
        rendered_context: the exact rendered context string.

    Returns:
        ``True`` when the context contains ``"ref"``, ``[ref]`` or
        ``"id":"ref"`` (see :func:`citation_forms`). Matching is exact and
        case-sensitive; a bare ``ref`` without quotes or brackets is not a citation.

    Example:
        >>> is_cited("M1", '[{"id":"M1","text":"..."}]')
        True
        >>> is_cited("M1", "[M10] text")
        False
    """
    return any(form in rendered_context for form in citation_forms(reference))


def _slices(context: str) -> Iterable[tuple[int, int]]:
    """``(start, end)`` slices of about :data:`SLICE` characters, each ending just past a special character (or at
    the end), so that a text between two special characters of a slice never continues into the next one."""
    start = 0
    while start < len(context):
        found = _SPECIAL_RE.search(context, min(start + SLICE, len(context)))
        end = found.start() + 1 if found is not None else len(context)
        yield start, end
        start = end - 1 if found is not None and end < len(context) else end


def _token_slices(context: str) -> Iterable[tuple[int, int]]:
    """``(start, end)`` slices of about :data:`SLICE` characters that split no token: each ends just past a
    special character (or at the end), the next starts there."""
    start = 0
    while start < len(context):
        found = _SPECIAL_RE.search(context, min(start + SLICE, len(context)))
        end = found.start() + 1 if found is not None else len(context)
        yield start, end
        start = end


def _ordinary(context: str, references: set[str]) -> set[str]:
    """Which of ``references`` (none with a special character) ``context`` cites."""
    cited: set[str] = set()
    for start, end in _slices(context):
        piece = context[start:end]
        # the text between two double quotes: one with a special character is no reference anyway, and one
        # cut at the slice's end runs on past a special character (a slice ends just past one)
        cited.update(references.intersection(piece.split('"')[1:-1]))
        if "[" in piece:
            cited.update(references.intersection(_BRACKETED.findall(piece)))
        if len(cited) == len(references):
            break
    return cited


def _tokens(form: str) -> list[str]:
    return _TOKENS.findall(form)


class _Automaton:
    """Aho-Corasick over token ids: special characters are 0, 1, 2; a run is its id in ``runs`` (3, 4, ...).

    Compact: one dict of edges keyed by ``node * width + token`` and arrays of ints, about 100 bytes a node.
    """

    def __init__(self, forms: dict[str, list[list[str]]]) -> None:
        self.runs: dict[str, int] = {}
        for spelled in forms.values():
            for tokens in spelled:
                for token in tokens:
                    if token not in _SPECIAL:
                        self.runs.setdefault(token, len(self.runs) + 3)
        width = self.width = len(self.runs) + 4  # the last id is a run no form has
        ids = {**self.runs, '"': 0, "[": 1, "]": 2}
        edges: dict[int, int] = {}
        children: list[list[int]] = [[]]  # for the breadth-first pass only
        self.ends: dict[int, list[str]] = {}
        for reference, spelled in forms.items():
            for tokens in spelled:
                node = 0
                for token in tokens:
                    key = node * width + ids[token]
                    following = edges.get(key)
                    if following is None:
                        following = edges[key] = len(children)
                        children[node].append(ids[token])
                        children.append([])
                    node = following
                self.ends.setdefault(node, []).append(reference)
        count = len(children)
        fail = array("l", bytes(8 * count))
        output = array("l", bytes(8 * count))  # the nearest node down the fail chain where a form ends (0: none)
        queue = [edges[key] for key in children[0]]
        for node in queue:  # breadth first: a node's fail link is set before its children's
            for key in children[node]:
                child = edges[node * width + key]
                queue.append(child)
                back = fail[node]
                while back and back * width + key not in edges:
                    back = fail[back]
                target = edges.get(back * width + key, 0)
                fail[child] = target if target != child else 0
                output[child] = target if target in self.ends else output[target]
        self.edges, self.fail, self.output, self.ids, self.count = edges, fail, output, ids, count

    def cited(self, context: str) -> set[str]:
        """The references one of whose forms occurs in ``context`` (its tokens read once, a slice at a time)."""
        edges, fail, output, ends, ids, width = self.edges, self.fail, self.output, self.ends, self.ids, self.width
        dead = width - 1
        hit = bytearray(self.count)
        for node in range(self.count):
            hit[node] = node in ends or output[node] != 0
        marked = bytearray(self.count)
        node = 0
        for start, end in _token_slices(context):
            for token in _TOKENS.findall(context, start, end):
                key = ids.get(token, dead)
                following = edges.get(node * width + key)
                while following is None and node:
                    node = fail[node]
                    following = edges.get(node * width + key)
                node = following or 0
                if hit[node]:
                    found = node if node in ends else output[node]
                    while found and not marked[found]:
                        marked[found] = 1
                        found = output[found]
        return {reference for node, references in ends.items() if marked[node] for reference in references}


#: Characters that the references with ``"``, ``[`` or ``]`` of one bundle may hold in all: their automaton is
#: built from them (about 100 bytes a character), and no real citation label has such characters at all.
MAX_SPECIAL_REFERENCE_CHARS = 32_768


def _special_cited(context: str, references: set[str]) -> set[str]:
    """Which of ``references`` (each with ``"``, ``[`` or ``]``) ``context`` cites: one automaton of their forms
    over the context's tokens.

    Raises:
        InputError: the references hold more than :data:`MAX_SPECIAL_REFERENCE_CHARS` characters in all.
    """
    total = sum(len(reference) for reference in references)
    if total > MAX_SPECIAL_REFERENCE_CHARS:
        raise InputError(
            f"bundle candidate references with '\"', '[' or ']' hold {total:,} characters in all, more than "
            f"{MAX_SPECIAL_REFERENCE_CHARS:,}: a citation label needs none of them (its forms are \"ref\" and [ref])",
            field="bundle",
        )
    forms = {
        reference: [_tokens(form) for form in citation_forms(reference)[:2] if len(form) <= len(context)]
        for reference in references
    }
    forms = {reference: spelled for reference, spelled in forms.items() if spelled}  # too long to occur: not cited
    return _Automaton(forms).cited(context) if forms else set()


class CitationIndex:
    """Which references one rendered context cites; :meth:`cites` is :func:`is_cited`.

    Args:
        rendered_context: the exact rendered context.
        references: the references to find, all at once (one pass over the context for the
            ordinary ones, one for those with ``"``, ``[`` or ``]``; module docstring). A reference
            not among them is answered by :func:`is_cited` (a substring search of the context,
            remembered).

    Raises:
        InputError: the references with ``"``, ``[`` or ``]`` hold more than
            :data:`MAX_SPECIAL_REFERENCE_CHARS` characters in all.
    """

    def __init__(self, rendered_context: str, references: Optional[Iterable[str]] = None) -> None:
        self._context = rendered_context
        known = set(references) if references is not None else set()
        special = {ref for ref in known if any(char in ref for char in _SPECIAL)}
        ordinary = known - special
        cited = _ordinary(rendered_context, ordinary) if ordinary else set()
        if special:
            cited |= _special_cited(rendered_context, special)
        self._answers = {reference: reference in cited for reference in known}

    def cites(self, reference: str) -> bool:
        """Whether the context cites ``reference`` (exactly :func:`is_cited`)."""
        answer = self._answers.get(reference)
        if answer is None:
            answer = self._answers[reference] = is_cited(reference, self._context)
        return answer
