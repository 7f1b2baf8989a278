"""The recorded-scores file of an assay and the scorer that fills it (docs/assay.md §Recorded scores).

``scores.jsonl`` holds one line per scored pair, sorted by (premise,
hypothesis), with the keys :meth:`verifier.scoring.RecordedScorer.from_jsonl`
reads: ``premise``, ``hypothesis``, ``entailment``, ``contradiction``,
``neutral`` (floats written as Python's shortest round-trip repr, so a
replay is bit for bit). Its sidecar ``scores.meta.json`` names the model
identity the scores belong to (:class:`ScoreIdentity`: what determines them,
:func:`score_determinants`) and the sha256 of the scores file, so a replay
refuses scores of another model or an edited file.

:class:`RecordingScorer` serves known pairs from the record and sends only
the missing ones to the live scorer (built on first need, so a full replay
never loads the model); with ``offline=True`` a missing pair raises
:class:`MissingScores` instead.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np

from .. import strictjson
from ..engine.manifest import TOKENIZER_NAME, Manifest
from ..engine_identity import EngineIdentity
from ..scoring import Scorer, validate_scores
from ..types import ClaimVerificationError

__all__ = [
    "FORMAT",
    "ScoreIdentity",
    "MissingScores",
    "determinants_sha256",
    "score_determinants",
    "RecordingScorer",
    "meta_path",
    "read_scores",
    "write_scores",
]

FORMAT = "claim-verifier-recorded-scores/1"
Row = tuple[float, float, float]
Pair = tuple[str, str]


def score_determinants(manifest: Manifest, *, variant: Optional[str], padding: str, graph_optimization_level: str) -> dict[str, Any]:
    """What determines a pair's scores in a model directory, as a JSON-ready dict (keyed like the score
    store's context, :func:`verifier.engine.score_store.score_context`, less the per-machine facts).

    The graph file the variant runs (name and sha256 from the manifest), ``tokenizer.json``'s sha256,
    the labels and their order, the inputs, ``max_length``, ``pad_token_id``, the attention, the variant,
    the padding and the graph optimisation level. Not the whole manifest: adding a variant or
    re-recording parity changes the manifest but no score (issue 34), while a changed ``model.onnx``
    changes its recorded sha256 and so these.

    Raises:
        ValueError: ``variant`` is not recorded in the manifest.
    """
    if variant is None:
        graph = manifest.model_file
    elif variant in manifest.variants:
        graph = manifest.variants[variant].file
    else:
        raise ValueError(f"variant {variant!r} is not recorded in the manifest (recorded: {sorted(manifest.variants)})")
    tokenizer = manifest.files.get(TOKENIZER_NAME)
    record = manifest.files.get(graph)
    return {
        "graph_file": graph,
        "graph_sha256": record.sha256 if record is not None else None,
        "tokenizer_sha256": tokenizer.sha256 if tokenizer is not None else None,
        "labels": list(manifest.labels),
        "inputs": list(manifest.inputs),
        "max_length": manifest.max_length,
        "pad_token_id": manifest.pad_token_id,
        "attention": manifest.attention,
        "variant": variant,
        "padding": padding,
        "graph_optimization_level": graph_optimization_level,
    }


def determinants_sha256(determinants: dict[str, Any]) -> str:
    """sha256 (hex) of the canonical JSON (sorted keys, no spaces, UTF-8) of :func:`score_determinants`."""
    text = json.dumps(determinants, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ScoreIdentity:
    """Whose scores these are: model, requested revision, resolved revision, and what determines them.

    ``determinants_sha256`` is :func:`determinants_sha256` of :func:`score_determinants` (the graph file,
    tokenizer, variant and settings). ``manifest_sha256`` (the whole ``manifest.json``) is recorded for
    the record's reader and compared only with a sidecar written before determinants were recorded.
    """

    model: str
    revision: str
    resolved_revision: Optional[str] = None
    manifest_sha256: Optional[str] = None
    determinants_sha256: Optional[str] = None
    #: The engine identity (JSON) of the engine that scores them (docs/audit.md, "Engine identity"); compared
    #: by its score-deciding parts (:data:`verifier.engine_identity.SCORE_FIELDS`), not its whole digest.
    engine: Optional[dict[str, Any]] = None

    def conflicts(self, other: "ScoreIdentity") -> list[str]:
        """What differs from ``other`` (a ``None`` on either side is not a conflict)."""
        from ..engine_identity import SCORE_FIELDS

        problems = [
            f"engine {name} {self.engine.get(name)!r} != {other.engine.get(name)!r}"
            for name in SCORE_FIELDS
            if self.engine is not None and other.engine is not None and self.engine.get(name) != other.engine.get(name)
        ]
        names = ["model", "revision", "resolved_revision"]
        if self.determinants_sha256 is not None and other.determinants_sha256 is not None:
            names.append("determinants_sha256")  # the manifest may differ (a variant added): the scores do not
        else:
            names.append("manifest_sha256")  # an older sidecar: only the whole manifest ties it to a model
        for name in names:
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine is not None and theirs is not None and mine != theirs:
                problems.append(f"{name} {mine!r} != {theirs!r}")
        return problems


class MissingScores(ClaimVerificationError):
    """Offline replay needs pairs the record lacks; ``pairs`` lists them (one round's worth)."""

    def __init__(self, pairs: Sequence[Pair]) -> None:
        super().__init__(f"{len(pairs)} pair(s) are not in the recorded scores (offline: not scored)")
        self.pairs = list(pairs)


def meta_path(scores: Path) -> Path:
    """The sidecar of ``scores``: ``scores.jsonl`` → ``scores.meta.json``."""
    name = scores.name[: -len(".jsonl")] if scores.name.endswith(".jsonl") else scores.name
    return scores.with_name(name + ".meta.json")


def _lines(records: dict[Pair, Row]) -> str:
    out = []
    for (premise, hypothesis), (entailment, contradiction, neutral) in sorted(records.items()):
        out.append(
            json.dumps(
                {
                    "premise": premise,
                    "hypothesis": hypothesis,
                    "entailment": entailment,
                    "contradiction": contradiction,
                    "neutral": neutral,
                },
                ensure_ascii=False,
                allow_nan=False,
            )
        )
    return "".join(line + "\n" for line in out)


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        _unlink(temporary)
        raise


def _unlink(path: str) -> None:
    """Remove ``path`` if it exists."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def write_scores(
    path: Path, records: dict[Pair, Row], identity: ScoreIdentity, *, determinants: Optional[dict[str, Any]] = None
) -> str:
    """Write ``path`` and its sidecar (each atomically); return the sha256 of the scores file.

    ``determinants`` (:func:`score_determinants`) is written beside its digest for the reader.
    """
    text = _lines(records)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    _atomic_write(path, text)
    meta = {"format": FORMAT, **asdict(identity), "pairs": len(records), "scores_sha256": digest}
    if determinants is not None:
        meta["determinants"] = determinants
    _atomic_write(meta_path(path), json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return digest


def read_scores(path: Path) -> tuple[dict[Pair, Row], ScoreIdentity]:
    """Read a recorded-scores file and its sidecar.

    Raises:
        ValueError: no sidecar, a sidecar of another format, a scores file whose
            sha256 differs from the sidecar's (edited), or an invalid line.
    """
    meta_file = meta_path(path)
    try:
        meta = strictjson.loads(meta_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{path} has no sidecar {meta_file.name}: the scores cannot be tied to a model") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"unreadable {meta_file}: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ValueError(f"{meta_file} is not a {FORMAT} sidecar")
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != meta.get("scores_sha256"):
        raise ValueError(f"{path} does not match the sha256 in {meta_file.name} (the scores were edited)")
    records: dict[Pair, Row] = {}
    for number, line in enumerate(data.decode("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = strictjson.loads(line)
            records[(str(item["premise"]), str(item["hypothesis"]))] = (
                float(item["entailment"]),
                float(item["contradiction"]),
                float(item["neutral"]),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{number}: invalid score record: {exc}") from None
    try:
        identity = ScoreIdentity(
            model=str(meta["model"]),
            revision=str(meta["revision"]),
            resolved_revision=meta.get("resolved_revision"),
            manifest_sha256=meta.get("manifest_sha256"),
            determinants_sha256=meta.get("determinants_sha256"),
            engine=meta.get("engine") if isinstance(meta.get("engine"), dict) else None,
        )
    except KeyError as exc:
        raise ValueError(f"{meta_file} lacks {exc}") from None
    return records, identity


class RecordingScorer:
    """A scorer over a record: known pairs replayed, missing pairs scored live once and recorded.

    Args:
        records: pairs already recorded (copied).
        live: builds the live scorer on first need (``None``: no live scorer, like ``offline``).
        offline: never score live; a missing pair raises :class:`MissingScores`.
        resolved_revision: the recorded resolved revision (reported while no live scorer exists).
        engine_identity: the engine the scores name (results name it: docs/audit.md, "Engine identity").

    Attributes:
        records: every pair recorded so far.
        live_calls, live_pairs: live scorer calls made and pairs they scored.
        replayed_pairs: pairs served from the record.
    """

    def __init__(
        self,
        records: Optional[dict[Pair, Row]] = None,
        *,
        live: Optional[Callable[[], Scorer]] = None,
        offline: bool = False,
        resolved_revision: Optional[str] = None,
        engine_identity: Optional[EngineIdentity] = None,
    ) -> None:
        self.records: dict[Pair, Row] = dict(records or {})
        self.engine_identity = engine_identity
        self._make_live = None if offline else live
        self._live: Optional[Scorer] = None
        self._recorded_revision = resolved_revision
        self._lock = threading.Lock()
        self.live_calls = 0
        self.live_pairs = 0
        self.replayed_pairs = 0

    @property
    def resolved_revision(self) -> Optional[str]:
        """The live scorer's resolved revision once it exists, else the recorded one.

        Raises:
            ClaimVerificationError: the live scorer loaded another revision than the record names.
        """
        live = getattr(self._live, "resolved_revision", None) if self._live is not None else None
        if live and self._recorded_revision and live != self._recorded_revision:
            raise ClaimVerificationError(
                f"the model resolved revision {live!r}, the recorded scores were made with {self._recorded_revision!r}"
            )
        return live or self._recorded_revision

    def score(self, pairs: Sequence[Pair]) -> np.ndarray:
        """Rows for ``pairs``: recorded ones replayed, missing ones scored live (deduplicated) and recorded."""
        with self._lock:
            wanted = [(str(premise), str(hypothesis)) for premise, hypothesis in pairs]
            missing = list(dict.fromkeys(pair for pair in wanted if pair not in self.records))
            if missing:
                if self._make_live is None:
                    raise MissingScores(missing)
                if self._live is None:
                    self._live = self._make_live()
                rows = validate_scores(self._live.score(missing), len(missing))
                self.live_calls += 1
                self.live_pairs += len(missing)
                for pair, row in zip(missing, rows.tolist()):
                    self.records[pair] = (float(row[0]), float(row[1]), float(row[2]))
            self.replayed_pairs += len(wanted) - len(missing)
            return np.asarray([self.records[pair] for pair in wanted], dtype=np.float64).reshape(len(wanted), 3)
