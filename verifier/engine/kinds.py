"""What a model kind is: the one place that says how each kind of exported model turns text into scores.

Two kinds of model directory exist (docs/grounding.md, docs/model-directory.md):

* ``"nli"`` -- a three-label NLI cross-encoder (the default, PRME's): a (premise,
  hypothesis) *pair*, tokenized as a text pair, ``longest_first`` truncation,
  softmax over contradiction/entailment/neutral.
* ``"grounding"`` -- a two-label grounding checker (MiniCheck, FactCG): a
  (document, claim) pair rendered into *one* string by the template the model
  was trained with, tokenized as a single sequence with the tokenizer's special
  tokens, cut from the right at the maximum length, softmax over (unsupported,
  supported). The manifest records the template, the maximum length, the
  truncation side and the support column (:class:`GroundingRecord`).

:data:`KNOWN_GROUNDING_MODELS` recognises the published checkers by hub id
(each row cites its source); any other two-label model needs its template and
support label stated at export. ``{eos}`` in a known template is replaced at
export by the tokenizer's own end-of-sequence token, so the manifest records
the literal text the model reads.

This module imports pydantic only: the manifest schema, the exporter and the
runtime all read it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "ModelKind",
    "MODEL_KINDS",
    "GROUNDING_LABELS",
    "SUPPORT_THRESHOLD",
    "GroundingArchitecture",
    "ChunkUnit",
    "GroundingRecord",
    "KnownGroundingModel",
    "KNOWN_GROUNDING_MODELS",
    "known_grounding_model",
    "fill_eos",
    "render",
    "describe_kind",
]

#: The kinds of exported model directory.
ModelKind = Literal["nli", "grounding"]
MODEL_KINDS: tuple[ModelKind, ...] = ("nli", "grounding")
#: The manifest's label names of a grounding model, in the column order the runtime reads
#: (column ``support_column`` is ``"supported"``; the other ``"unsupported"``).
GROUNDING_LABELS: tuple[str, str] = ("unsupported", "supported")
#: A document supports a claim when P(support) is strictly above this (MiniCheck's published
#: threshold: Liyan06/MiniCheck ``minicheck/minicheck.py``, ``pred_label = 1 if prob > 0.5``).
SUPPORT_THRESHOLD = 0.5

#: How the graph reads a rendered text: a sequence classifier's two logits, or a seq2seq model's
#: encoder plus one decoder step, reading the logits of two label tokens (MiniCheck-Flan-T5).
GroundingArchitecture = Literal["sequence-classification", "label-tokens"]
#: What MiniCheck's chunker counts: model tokens (DeBERTa, RoBERTa) or whitespace words (Flan-T5).
ChunkUnit = Literal["tokens", "words"]

_PLACEHOLDER = re.compile(r"\{document\}|\{claim\}")


class GroundingRecord(BaseModel):
    """How a grounding model reads a (document, claim) pair: the manifest's ``grounding`` field.

    Attributes:
        architecture: :data:`GroundingArchitecture`.
        template: the text the model reads, with ``{document}`` and ``{claim}`` each exactly
            once (special tokens such as ``[SEP]`` or ``</s>`` written literally: the tokenizer
            matches them as its special tokens).
        truncation_side: ``"right"``: a rendered text longer than the manifest's ``max_length``
            loses its end (what transformers does for one sequence with ``truncation=True``).
        support_column: the logit column of "supported" (MiniCheck: 1).
        label_token_ids: for ``label-tokens``: the vocabulary ids whose logits are
            (unsupported, supported) (MiniCheck-Flan-T5: 3 and 209); ``None`` otherwise.
        decoder_start_token_id: for ``label-tokens``: the one decoder input id (0).
        chunk_unit, chunk_size: MiniCheck's default chunking for this model (400 tokens, or 500
            words for Flan-T5); ``score(..., chunk_size=...)`` overrides the size.
        source: where the template and settings come from (a repository and path, or
            ``"stated at export"``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    architecture: GroundingArchitecture
    template: str = Field(min_length=1, max_length=4096)
    truncation_side: Literal["right"] = "right"
    support_column: int = Field(ge=0, le=1)
    label_token_ids: Optional[tuple[int, int]] = None
    decoder_start_token_id: Optional[int] = Field(default=None, ge=0)
    chunk_unit: ChunkUnit = "tokens"
    chunk_size: int = Field(default=400, ge=1, le=100_000)
    source: str = Field(min_length=1, max_length=500)

    @field_validator("template")
    @classmethod
    def _one_of_each(cls, template: str) -> str:
        found = _PLACEHOLDER.findall(template)
        if sorted(found) != ["{claim}", "{document}"]:
            raise ValueError("template must hold {document} and {claim} exactly once each")
        return template


def fill_eos(template: str, eos_token: Optional[str], where: str) -> str:
    """``template`` with ``{eos}`` replaced by the tokenizer's end-of-sequence token (the text MiniCheck joins
    document and claim with: ``tokenizer.eos_token``).

    Raises:
        ValueError: the template holds ``{eos}`` and ``eos_token`` is empty (names ``where``).
    """
    if "{eos}" not in template:
        return template
    if not eos_token:
        raise ValueError(f"{where}: the template joins document and claim with the tokenizer's end-of-sequence token, "
                         "and the tokenizer has none")
    return template.replace("{eos}", eos_token)


def render(template: str, document: str, claim: str) -> str:
    """The text a grounding model reads: ``template`` with ``{document}`` and ``{claim}`` filled in.

    One pass over the template, so a document that itself contains ``{claim}`` stays as written.

    Example:
        >>> render("{document}[SEP]{claim}", "The sky is blue.", "The sky is {claim}?")
        'The sky is blue.[SEP]The sky is {claim}?'
    """
    values = {"{document}": document, "{claim}": claim}
    return _PLACEHOLDER.sub(lambda match: values[match.group(0)], template)


@dataclass(frozen=True)
class KnownGroundingModel:
    """A published grounding checker the exporter recognises by hub id.

    ``template`` may hold ``{eos}``, replaced at export by the tokenizer's end-of-sequence token.
    """

    model_id: str
    architecture: GroundingArchitecture
    template: str
    max_length: int
    chunk_unit: ChunkUnit
    chunk_size: int
    source: str
    support_column: int = 1
    label_token_ids: Optional[tuple[int, int]] = None
    decoder_start_token_id: Optional[int] = None

    def record(self, eos_token: Optional[str]) -> GroundingRecord:
        """The manifest record, ``{eos}`` replaced by ``eos_token``.

        Raises:
            ValueError: the template needs an end-of-sequence token and ``eos_token`` is ``None``.
        """
        return GroundingRecord(
            architecture=self.architecture, template=fill_eos(self.template, eos_token, self.model_id), support_column=self.support_column,
            label_token_ids=self.label_token_ids, decoder_start_token_id=self.decoder_start_token_id,
            chunk_unit=self.chunk_unit, chunk_size=self.chunk_size, source=self.source,
        )


_MINICHECK = "Liyan06/MiniCheck minicheck/inference.py and minicheck/minicheck.py"
#: FactCG's instruction template (derenlei/FactCG ``factcg/utils.py``, ``INSTRUCTION_TEMPLATE``).
FACTCG_TEMPLATE = (
    "{document}\n\nChoose your answer: based on the paragraph above can we conclude that \"{claim}\"?"
    "\n\nOPTIONS:\n- Yes\n- No\nI think the answer is "
)

#: The grounding checkers recognised by hub id, with their sources (docs/grounding.md).
KNOWN_GROUNDING_MODELS: dict[str, KnownGroundingModel] = {
    known.model_id: known
    for known in (
        # MiniCheck: doc + tokenizer.eos_token + claim as one sequence; max length 2048 (DeBERTa:
        # relative positions) or 512 (RoBERTa); chunks of 400 tokens; index 1 = supported.
        KnownGroundingModel("lytang/MiniCheck-DeBERTa-v3-Large", "sequence-classification", "{document}{eos}{claim}",
                            2048, "tokens", 400, _MINICHECK),
        KnownGroundingModel("lytang/MiniCheck-RoBERTa-Large", "sequence-classification", "{document}{eos}{claim}",
                            512, "tokens", 400, _MINICHECK),
        # Flan-T5: "predict: " + doc + "</s>" + claim, decoder input id 0, label tokens 3 and 209; 500-word chunks.
        KnownGroundingModel("lytang/MiniCheck-Flan-T5-Large", "label-tokens", "predict: {document}{eos}{claim}",
                            2048, "words", 500, _MINICHECK, label_token_ids=(3, 209), decoder_start_token_id=0),
        # FactCG: its instruction template, max length 2048, index 1 = supported (FactCG chunks differently:
        # NLTK sentences up to 550 word_tokenize tokens; docs/grounding.md says what this package does).
        KnownGroundingModel("yaxili96/FactCG-DeBERTa-v3-Large", "sequence-classification", FACTCG_TEMPLATE,
                            2048, "tokens", 400,
                            "derenlei/FactCG factcg/inference.py and factcg/utils.py (INSTRUCTION_TEMPLATE)"),
    )
}


def known_grounding_model(model_id: Optional[str]) -> Optional[KnownGroundingModel]:
    """The table's row for ``model_id`` (exact hub id), or ``None``."""
    return KNOWN_GROUNDING_MODELS.get(model_id or "")


def describe_kind(kind: str) -> str:
    """A kind in words for messages: ``"a three-label NLI model"`` or ``"a two-label grounding model"``."""
    return "a two-label grounding model" if kind == "grounding" else "a three-label NLI model"
