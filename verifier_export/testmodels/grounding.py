"""The seeded tiny *grounding checkers*: two-label (document, claim) models shaped like MiniCheck and FactCG.

Internal test support (see :mod:`verifier_export.testmodels`). A grounding
checker reads a document and a claim and says whether the document supports
the claim: two labels, index 1 = supported. Three shapes, each tiny (hidden
32, two layers) and randomly initialised, written as an ordinary Hugging Face
model directory (``config.json``, ``model.safetensors``, ``tokenizer.json``,
``tokenizer_config.json``, ``special_tokens_map.json``) with
:data:`verifier.engine.manifest.RANDOM_WEIGHTS_CONFIG_KEY` set in
``config.json``:

* ``"deberta-v2"`` -- ``DebertaV2ForSequenceClassification`` with the
  configuration shape of ``lytang/MiniCheck-DeBERTa-v3-Large`` (FactCG's
  DeBERTa-v3-Large checker has the same): DeBERTa-v3 relative attention, 256
  position buckets, 128,100-piece vocabulary, ``LABEL_0``/``LABEL_1``; the
  real DeBERTa-v3 tokenizer files (:func:`~.common.copy_real_tokenizer`).
  Input: the pair ``[CLS] document [SEP] claim [SEP]``.
* ``"roberta"`` -- ``RobertaForSequenceClassification`` shaped like
  ``lytang/MiniCheck-RoBERTa-Large`` (514 positions, ``type_vocab_size`` 1,
  <s>=0, <pad>=1, </s>=2) with a byte-level BPE tokenizer (797 pieces)
  trained here on a built-in English corpus. Input: ``<s> document </s></s>
  claim </s>``.
* ``"t5"`` -- ``T5ForConditionalGeneration`` shaped like
  ``lytang/MiniCheck-Flan-T5-Large`` (gated-gelu, 32 relative buckets, untied
  ``lm_head``, <pad>=0, </s>=1) with a Unigram tokenizer trained here (T5
  layout, Metaspace, ``$A </s>``). MiniCheck's reference
  (``Liyan06/MiniCheck``, ``minicheck/inference.py``) feeds
  ``"predict: " + document + "</s>" + claim``, runs one decoder step from
  token 0 and reads the logits of tokens 3 and 209 (index 1 = supported);
  here the ``lm_head`` rows of those two tokens are calibrated so the softmax
  over them varies with the input.

Heads are centred and scaled on a fixed calibration batch, so the two-label
probabilities spread well away from 0.5 and 1.0 and differ between inputs,
while float32 noise (PyTorch against ONNX) stays near 1e-5. The tokenizers are
trained with ``tokenizers`` on one thread from a fixed corpus: the same seed
writes byte-identical files. The outputs are random: never present them as
quality figures. torch, transformers and tokenizers are imported inside the
functions.
"""

from __future__ import annotations

import os
import random
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Literal, Sequence

from verifier.engine.manifest import RANDOM_WEIGHTS_CONFIG_KEY

from . import common

if TYPE_CHECKING:  # pragma: no cover - typing only
    import torch

__all__ = ["GroundingArchitecture", "GROUNDING_ARCHITECTURES", "GROUNDING_LABEL_TOKEN_IDS"]
__all__ += ["build_tiny_grounding_model"]

#: The grounding-checker shapes :func:`build_tiny_grounding_model` builds.
GroundingArchitecture = Literal["deberta-v2", "roberta", "t5"]
#: The accepted :data:`GroundingArchitecture` values.
GROUNDING_ARCHITECTURES: tuple[GroundingArchitecture, ...] = ("deberta-v2", "roberta", "t5")
#: MiniCheck-Flan-T5's label tokens: logits of (unsupported, supported) at the first decoder step.
GROUNDING_LABEL_TOKEN_IDS: tuple[int, int] = (3, 209)

# As in .tiny: ten times transformers' default, so the pooled state varies with
# the input and the head needs only a modest scale (float32 noise stays ~1e-5).
_INITIALIZER_RANGE = 0.2
# Standard deviation of each label logit (classifiers) or of the label-logit
# difference (T5) over the calibration batch after scaling.
_LOGIT_SPREAD = 3.0
_ID2LABEL = {0: "LABEL_0", 1: "LABEL_1"}
_LABEL2ID = {"LABEL_0": 0, "LABEL_1": 1}

_ROBERTA_SPECIAL = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")
# Targets: the built-in corpus stops the trainers short (797 BPE pieces, 347 Unigram pieces).
_ROBERTA_VOCAB_SIZE = 1000
_T5_SPECIAL = ("<pad>", "</s>", "<unk>")
_T5_VOCAB_SIZE = 512

# The built-in corpus the tiny tokenizers are trained on: sentences of the kind
# grounding checkers read (who did what, when, where, how many).
_NAMES = (
    "Alice|Ravi|Tessa|Marco|Priya|Jonas|Lena|Omar|Grace|Hugo|the team|the company|the council|the hospital|"
    "the museum|the school"
).split("|")
_VERBS = (
    "opened|closed|announced|released|shipped|reviewed|approved|rejected|visited|moved to|founded|sold|bought|"
    "repaired|painted|measured|reported|confirmed|denied|described|won|lost|started|finished"
).split("|")
_OBJECTS = (
    "a new library|the bridge|the report|the contract|a small bakery|the river park|the annual budget|"
    "a research lab|the train station|the old factory|a farm|the election results|the software update|"
    "the vaccine trial|a football match|the city hall|a music festival|the harbour|the airport|a mountain road"
).split("|")
_PLACES = (
    "in Paris|in London|in Berlin|in Lagos|in Tokyo|in Lima|in Oslo|in Cairo|near the coast|in the north|"
    "downtown|at the university|in the village"
).split("|")
_TIMES = (
    "on Monday|on Tuesday|on Friday|in May|in June|in 1998|in 2004|in 2021|last year|this week|yesterday|"
    "after the storm|before the holidays|at noon"
).split("|")
_CLAUSES = (
    "because the costs rose|although nobody expected it|and the mayor was present|but the results were not "
    "published|while 300 people watched|so the roads were closed|after 12 months of work|with 45 percent "
    "support|which cost 2.5 million dollars"
).split("|")
_EXTRA_LINES = (
    "The document does not mention the date.|It was not the first time; it was the third.|"
    "No, the claim is false: the bridge opened in 2004.|Yes! The report (page 7) confirms it.|"
    "Numbers: 0 1 2 3 4 5 6 7 8 9 10 20 50 100 1000.|She said: \"we will finish by Friday\", and she did.|"
    "Prices went up by 3% - from $10 to $10.30.|Q: Who won? A: Tessa won the match, 6-4.|"
    "predict: a document about the harbour</s>a claim about the harbour"
).split("|")
_ALPHABET = (
    "abcdefghijklmnopqrstuvwxyz"
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    "0123456789"
    ".,;:!?'\"()[]{}-_/\\@#$%&*+=<>~`^|"
)


def _corpus() -> list[str]:
    """A fixed English corpus of ~400 lines for the tiny tokenizers (independent of the seed)."""
    rng = random.Random(20240611)
    lines = list(_EXTRA_LINES)
    for _ in range(400):
        sentence = f"{rng.choice(_NAMES)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)}"
        if rng.random() < 0.7:
            sentence += f" {rng.choice(_PLACES)}"
        if rng.random() < 0.7:
            sentence += f" {rng.choice(_TIMES)}"
        if rng.random() < 0.4:
            sentence += f", {rng.choice(_CLAUSES)}"
        lines.append(sentence[0].upper() + sentence[1:] + rng.choice(".!."))
    return lines


def _calibration_pairs(seed: int, count: int = 48) -> list[tuple[str, str]]:
    """(document, claim) pairs drawn from the corpus, to centre and scale the heads."""
    rng = random.Random(seed + 1)
    lines = _corpus()
    return [(" ".join(rng.sample(lines, rng.randint(1, 3))), rng.choice(lines)) for _ in range(count)]


@contextmanager
def _single_threaded_tokenizers() -> Iterator[None]:
    """Train with ``tokenizers`` on one thread: its parallel reductions could otherwise vary the pieces."""
    before = os.environ.get("TOKENIZERS_PARALLELISM")
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    try:
        yield
    finally:
        os.environ.pop("TOKENIZERS_PARALLELISM", None)
        if before is not None:
            os.environ["TOKENIZERS_PARALLELISM"] = before


def _check_special_ids(tokenizer: Any, specials: Sequence[str]) -> None:
    for index, token in enumerate(specials):
        if tokenizer.token_to_id(token) != index:
            raise RuntimeError(f"tiny tokenizer: {token} got id {tokenizer.token_to_id(token)}, not {index}")


def _write_tokenizer_configs(output_dir: Path, special_map: dict[str, str], config: dict[str, Any]) -> None:
    """Write ``tokenizer_config.json`` (``config`` plus the special tokens) and ``special_tokens_map.json``."""
    config = {**config, "clean_up_tokenization_spaces": False, **special_map}
    common.write_json(output_dir / "tokenizer_config.json", config)
    common.write_json(output_dir / "special_tokens_map.json", special_map)


def _write_roberta_tokenizer(output_dir: Path) -> int:
    """Train and write a RoBERTa-layout byte-level BPE tokenizer; return its vocabulary size."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    special = [
        AddedToken(token, lstrip=token == "<mask>", rstrip=False, single_word=False, normalized=False, special=True)
        for token in _ROBERTA_SPECIAL
    ]
    trainer = trainers.BpeTrainer(
        vocab_size=_ROBERTA_VOCAB_SIZE, min_frequency=1, special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    with _single_threaded_tokenizers():
        tokenizer.train_from_iterator(_corpus(), trainer=trainer)
    _check_special_ids(tokenizer, _ROBERTA_SPECIAL)
    tokenizer.post_processor = processors.RobertaProcessing(
        sep=("</s>", 2), cls=("<s>", 0), trim_offsets=True, add_prefix_space=False
    )
    tokenizer.save(str(output_dir / "tokenizer.json"))

    special_map = {"bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>", "cls_token": "<s>"}
    special_map.update(unk_token="<unk>", pad_token="<pad>", mask_token="<mask>")
    config = {"tokenizer_class": "RobertaTokenizer", "model_max_length": 512, "add_prefix_space": False}
    _write_tokenizer_configs(output_dir, special_map, {**config, "trim_offsets": True, "errors": "replace"})
    return int(tokenizer.get_vocab_size(with_added_tokens=True))


def _write_t5_tokenizer(output_dir: Path) -> int:
    """Train and write a T5-layout Unigram tokenizer; return its vocabulary size."""
    import json

    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from tokenizers import trainers

    tokenizer = Tokenizer(models.Unigram())
    # T5: sentencepiece's nmt_nfkc (approximated by NFKC), runs of spaces collapsed, Metaspace.
    tokenizer.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")])
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tokenizer.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    special = [
        AddedToken(token, lstrip=False, rstrip=False, single_word=False, normalized=False, special=True)
        for token in _T5_SPECIAL
    ]
    trainer = trainers.UnigramTrainer(
        vocab_size=_T5_VOCAB_SIZE, special_tokens=special, unk_token="<unk>", initial_alphabet=list(_ALPHABET),
        shrinking_factor=0.75, max_piece_length=12, n_sub_iterations=2, show_progress=False,
    )
    with _single_threaded_tokenizers():
        tokenizer.train_from_iterator(_corpus(), trainer=trainer)
    # The trainer's output varies from run to run: its scores in their last bits
    # (sums over hash maps), and the order of the characters it did not keep,
    # which it appends from a hash set at the lowest score plus k * 1e-4. Round
    # the scores, give those characters one score below every other piece in
    # character order, and order ties by piece, so the file is stable.
    trained = [(piece, float(score)) for piece, score in json.loads(tokenizer.to_str())["model"]["vocab"]]
    trained = [(piece, score) for piece, score in trained if piece not in _T5_SPECIAL]
    floor = min(score for _, score in trained)
    window = floor + 1e-4 * (len(trained) + 1)
    appended = sorted(piece for piece, score in trained if len(piece) == 1 and score < window)
    kept = sorted(
        ((piece, round(score, 6)) for piece, score in trained if piece not in appended),
        key=lambda item: (-item[1], item[0]),
    )
    tail = [(piece, round(floor, 2) - 1.0) for piece in appended]
    special_pieces = [(piece, 0.0) for piece in _T5_SPECIAL]
    tokenizer.model = models.Unigram(
        special_pieces + kept + tail, unk_id=_T5_SPECIAL.index("<unk>"), byte_fallback=False
    )
    _check_special_ids(tokenizer, _T5_SPECIAL)
    vocab_size = int(tokenizer.get_vocab_size(with_added_tokens=True))
    if vocab_size <= max(GROUNDING_LABEL_TOKEN_IDS):
        raise RuntimeError(f"T5 tokenizer: {vocab_size} pieces, too few for label token {GROUNDING_LABEL_TOKEN_IDS}")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", 1)]
    )
    tokenizer.save(str(output_dir / "tokenizer.json"))

    special_map = {"eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}
    config = {"tokenizer_class": "T5Tokenizer", "model_max_length": 2048, "extra_ids": 0}
    _write_tokenizer_configs(output_dir, special_map, {**config, "additional_special_tokens": []})
    return vocab_size


def _write_deberta_tokenizer(output_dir: Path) -> None:
    """Copy the real DeBERTa-v3 tokenizer files, with MiniCheck's ``model_max_length`` (2048)."""
    import json

    common.copy_real_tokenizer(output_dir, tokenizer_json=True)
    path = output_dir / "tokenizer_config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config["model_max_length"] = 2048
    common.write_json(path, config)


def _encode_pairs(output_dir: Path, pairs: Sequence[tuple[str, str]], *, t5: bool) -> dict[str, "torch.Tensor"]:
    """Encode ``pairs`` with the directory's own fast tokenizer (T5: MiniCheck's ``predict:`` text)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(output_dir))
    if t5:
        texts = [f"predict: {document}</s>{claim}" for document, claim in pairs]
        encoded = tokenizer(texts, padding=True, return_tensors="pt")
    else:
        encoded = tokenizer(
            [document for document, _ in pairs], [claim for _, claim in pairs], padding=True, return_tensors="pt"
        )
    return {"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"]}


def _scale_classifier(model: Any, classifier: "torch.nn.Linear", inputs: dict[str, "torch.Tensor"]) -> None:
    """Centre and scale a classifier head: each logit gets zero mean and spread :data:`_LOGIT_SPREAD`."""
    import torch

    with torch.no_grad():
        model.eval()
        logits = model(**inputs).logits.double()
        mean = logits.mean(dim=0)
        spread = float(logits.std(dim=0).mean())
        scale = _LOGIT_SPREAD / max(spread, 1e-6)
        classifier.weight.mul_(scale)
        classifier.bias.copy_(((classifier.bias.double() - mean) * scale).to(classifier.bias.dtype))


def _scale_label_rows(model: Any, inputs: dict[str, "torch.Tensor"]) -> None:
    """Calibrate the ``lm_head`` rows of the label tokens of a T5 grounding checker.

    With ``d`` the difference of the two rows and ``h`` the final decoder state
    at the first step, the supported-vs-unsupported logit gap is ``h . d``. The
    component of ``d`` along the batch's mean state is removed (the gap then
    averages zero) and ``d`` is scaled so the gap's spread is
    :data:`_LOGIT_SPREAD`; the rows keep their midpoint.
    """
    import torch

    first, second = GROUNDING_LABEL_TOKEN_IDS
    with torch.no_grad():
        model.eval()
        start = torch.full((inputs["input_ids"].shape[0], 1), model.config.decoder_start_token_id, dtype=torch.long)
        output = model(**inputs, decoder_input_ids=start, output_hidden_states=True, use_cache=False)
        hidden = output.decoder_hidden_states[-1][:, 0, :].double()
        weight = model.lm_head.weight
        rows = weight[[first, second]].double()
        middle = rows.mean(dim=0)
        gap = rows[1] - rows[0]
        mean_state = hidden.mean(dim=0)
        gap = gap - (gap @ mean_state) / (mean_state @ mean_state) * mean_state
        spread = float((hidden @ gap).std())
        gap = gap * (_LOGIT_SPREAD / max(spread, 1e-6))
        weight[first] = (middle - gap / 2).to(weight.dtype)
        weight[second] = (middle + gap / 2).to(weight.dtype)


def _write_labels(config_file: Path) -> None:
    """Write ``id2label``/``label2id`` into ``config.json`` even though they are transformers' defaults.

    transformers leaves default values out of ``config.json``; readers of the
    directory (the export, the runtime) then see no labels at all.
    """
    import json

    config = json.loads(config_file.read_text(encoding="utf-8"))
    config["id2label"] = {str(index): label for index, label in _ID2LABEL.items()}
    config["label2id"] = dict(_LABEL2ID)
    common.write_json(config_file, config)


def _deberta_v2(output_dir: Path) -> Any:
    """MiniCheck-DeBERTa-v3-Large's ``config.json``, tiny: hidden 32, 2 layers, 2 heads, intermediate 64."""
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification

    _write_deberta_tokenizer(output_dir)
    config = DebertaV2Config(
        vocab_size=common.DEBERTA_V3_VOCAB_SIZE, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
        max_position_embeddings=512, type_vocab_size=0, initializer_range=_INITIALIZER_RANGE, layer_norm_eps=1e-7,
        relative_attention=True, max_relative_positions=-1, position_buckets=256, pos_att_type=["p2c", "c2p"],
        norm_rel_ebd="layer_norm", share_att_key=True, position_biased_input=False, pad_token_id=0,
        pooler_hidden_size=32, pooler_dropout=0, pooler_hidden_act="gelu",
        id2label=_ID2LABEL, label2id=_LABEL2ID, **{RANDOM_WEIGHTS_CONFIG_KEY: True},
    )
    return DebertaV2ForSequenceClassification, config


def _roberta(output_dir: Path) -> Any:
    """MiniCheck-RoBERTa-Large's ``config.json``, tiny, over the locally trained BPE vocabulary."""
    from transformers import RobertaConfig, RobertaForSequenceClassification

    vocab_size = _write_roberta_tokenizer(output_dir)
    config = RobertaConfig(
        vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        hidden_act="gelu", max_position_embeddings=514, type_vocab_size=1, initializer_range=_INITIALIZER_RANGE,
        layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0, eos_token_id=2,
        id2label=_ID2LABEL, label2id=_LABEL2ID, **{RANDOM_WEIGHTS_CONFIG_KEY: True},
    )
    return RobertaForSequenceClassification, config


def _t5(output_dir: Path) -> Any:
    """MiniCheck-Flan-T5-Large's ``config.json`` (flan-t5), tiny, over the locally trained Unigram vocabulary."""
    from transformers import T5Config, T5ForConditionalGeneration

    vocab_size = _write_t5_tokenizer(output_dir)
    config = T5Config(
        vocab_size=vocab_size, d_model=32, d_kv=8, num_heads=4, num_layers=2, num_decoder_layers=2, d_ff=64,
        feed_forward_proj="gated-gelu", relative_attention_num_buckets=32, relative_attention_max_distance=128,
        dropout_rate=0.1, layer_norm_epsilon=1e-6, initializer_factor=1.0, tie_word_embeddings=False,
        decoder_start_token_id=0, pad_token_id=0, eos_token_id=1, **{RANDOM_WEIGHTS_CONFIG_KEY: True},
    )
    return T5ForConditionalGeneration, config


def build_tiny_grounding_model(path: Path, *, architecture: GroundingArchitecture, seed: int = 0) -> Path:
    """Build a seeded tiny two-label grounding checker as a Hugging Face model directory.

    Shapes (see the module docstring): ``"deberta-v2"`` (hidden 32, 2 layers,
    2 heads, intermediate 64; real DeBERTa-v3 tokenizer, ``model_max_length``
    2048), ``"roberta"`` (the same size; 797-piece byte-level BPE, 512) or
    ``"t5"`` (``d_model`` 32, ``d_kv`` 8, 4 heads, 2+2 layers, ``d_ff`` 64;
    347-piece Unigram, 2048). The classifiers' ``id2label`` is ``{0:
    "LABEL_0", 1: "LABEL_1"}`` (index 1 = supported); the T5 model's labels
    are the logits of tokens 3 and 209 at the first decoder step
    (:data:`GROUNDING_LABEL_TOKEN_IDS`).

    ``AutoTokenizer.from_pretrained(path)`` loads a fast tokenizer
    (``DebertaV2TokenizerFast``, ``RobertaTokenizerFast``, ``T5TokenizerFast``);
    ``AutoModelForSequenceClassification`` (deberta-v2, roberta) or
    ``AutoModelForSeq2SeqLM`` (t5) loads the model. The same arguments write
    byte-identical files.

    Args:
        path: directory to write (created; existing files are overwritten).
        architecture: ``"deberta-v2"``, ``"roberta"`` or ``"t5"``.
        seed: torch seed for the weights (and the calibration batch).

    Returns:
        ``path``.

    Raises:
        ValueError: unknown ``architecture``.
        FileNotFoundError: ``"deberta-v2"`` and the real DeBERTa-v3 tokenizer
            files are absent (see :func:`~verifier_export.testmodels.common.real_tokenizer_dir`).
        ImportError: torch, transformers or tokenizers is not installed (the ``export`` extra).

    Example:
        >>> from pathlib import Path
        >>> import tempfile
        >>> path = build_tiny_grounding_model(Path(tempfile.mkdtemp()) / "t5", architecture="t5")  # doctest: +SKIP
        >>> sorted(p.name for p in path.iterdir())  # doctest: +SKIP
        ['config.json', 'generation_config.json', 'model.safetensors', 'special_tokens_map.json',
         'tokenizer.json', 'tokenizer_config.json']
    """
    if architecture not in GROUNDING_ARCHITECTURES:
        raise ValueError(f"architecture must be one of {', '.join(GROUNDING_ARCHITECTURES)}, got {architecture!r}")
    import torch

    output_dir = Path(path)
    if architecture == "deberta-v2":
        common.real_tokenizer_dir()  # fail before creating anything when the files are absent
    output_dir.mkdir(parents=True, exist_ok=True)
    builder = {"deberta-v2": _deberta_v2, "roberta": _roberta, "t5": _t5}[architecture]
    model_class, config = builder(output_dir)
    torch.manual_seed(seed)
    model = model_class(config)
    model.eval()
    calibration = _encode_pairs(output_dir, _calibration_pairs(seed), t5=architecture == "t5")
    if architecture == "t5":
        _scale_label_rows(model, calibration)
    elif architecture == "roberta":
        _scale_classifier(model, model.classifier.out_proj, calibration)
    else:
        _scale_classifier(model, model.classifier, calibration)
    model.save_pretrained(str(output_dir), safe_serialization=True)
    if architecture != "t5":
        _write_labels(output_dir / "config.json")
    return output_dir
