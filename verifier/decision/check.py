"""Reading a stored result back and checking it: were its status, groups or scores edited after the fact?

A :class:`~verifier.types.ClaimVerification` carries digests of itself
(docs/audit.md). :func:`check_result` recomputes every digest it can from the
record's own fields and reports each mismatch, plus any inconsistency between
the status and the groups a genuine result could not have:

* ``claim_sha256`` from ``claim``;
* ``evaluation_id`` from the three input digests and ``schema_version``;
* ``result_sha256`` from the decision fields (status, groups, bases, scores,
  rechecks, limitations, and for schema 4 the strict rulings) and
  ``evaluation_id`` (for schema 4 also over ``as_of``, docs/policy.md) — an
  edited status, group, score or ruling changes it;
* ``configuration_sha256`` and ``evidence_sha256`` need the original inputs:
  pass ``config`` and ``evidence`` to check them too (:func:`configuration_for`
  builds the configuration a record names: given decision options with the
  record's own ``model`` and ``requested_revision``).

Results of schemas 1 and 2 are recomputed by their own formula
(:func:`legacy_evaluation_id`: ``evaluation_id`` without the schema version;
``result_sha256`` the same decision record, its absent fields empty), so a
record never checks out just because it claims an older schema: lowering
``schema_version`` changes the ``evaluation_id`` it must carry.

Digests prove that a record is internally consistent, not that it is
genuine: anyone who edits a field and recomputes the digests produces a
consistent record. So :func:`check_result` also *re-decides*
(:mod:`verifier.decision.replay`): given the passages, it replays the real
decision procedure over the record's own scores and refuses a record whose
status, groups, bases, limitations or strict rulings are not what the
procedure gives for them (or whose replay needs a score it does not carry);
without the passages it checks what the scores must show for any passages
(:func:`~verifier.decision.replay.score_bounds`). What each layer proves:
docs/audit.md, "What each check proves".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence, Union

from pydantic import ValidationError

from . import audit
from .replay import ReplayOutcome, replay, score_bounds
from ..messages import describe_validation_error
from ..strictjson import loads as strict_loads
from ..validation import as_config, as_evidence
from ..types import (
    SCHEMA_VERSION,
    STRICT_SCHEMA_VERSION,
    ClaimEvidence,
    ClaimVerification,
    ClaimVerificationConfig,
    ClaimVerificationStatus,
)

__all__ = ["CheckReport", "check_result", "configuration_for", "legacy_evaluation_id", "parse_result"]


@dataclass(frozen=True)
class CheckReport:
    """What :func:`check_result` found.

    Attributes:
        problems: one readable sentence per mismatch or inconsistency (empty: the record checks out).
        notes: what could not be checked and why (never a failure).
    """

    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())
    #: The full replay, when the passages were given (its pairs are what ``check --rescore`` re-scores).
    replay: Optional[ReplayOutcome] = None

    @property
    def ok(self) -> bool:
        """Whether no problem was found."""
        return not self.problems


def parse_result(record: Union[ClaimVerification, Mapping[str, Any], str, bytes]) -> ClaimVerification:
    """A stored result as a :class:`ClaimVerification` (an instance, a mapping, or its JSON).

    Raises:
        ValueError: not a valid result record (the message names the field).
    """
    if isinstance(record, ClaimVerification):
        return record
    try:
        if isinstance(record, (str, bytes)):
            strict_loads(record)  # a repeated key is refused, never read as its last value
            return ClaimVerification.model_validate_json(record)
        return ClaimVerification.model_validate(record)
    except RecursionError:
        raise ValueError("not a result record: JSON nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"not a result record: invalid JSON: {exc}") from None
    except ValidationError as exc:
        where, message, count = describe_validation_error(exc)
        more = f" (and {count - 1} more)" if count > 1 else ""
        raise ValueError(f"not a result record: {'field ' + where + ': ' if where else ''}{message}{more}") from None


def legacy_evaluation_id(*, claim_digest: str, configuration_digest: str, evidence_digest: str) -> str:
    """The ``evaluation_id`` of a schema 1 or 2 result: sha256 of canonical
    ``{claim_sha256, configuration_sha256, evidence_sha256}`` (no schema version; docs/audit.md)."""
    return audit.sha256_hex(
        audit.canonical(
            {
                "claim_sha256": claim_digest,
                "configuration_sha256": configuration_digest,
                "evidence_sha256": evidence_digest,
            }
        )
    )


def configuration_for(
    result: ClaimVerification, options: Optional[Mapping[str, Any]] = None
) -> ClaimVerificationConfig:
    """The decision configuration a record names: ``options`` (default: every default) with the record's
    ``model`` and ``requested_revision`` unless ``options`` sets ``model``/``revision``.

    A record carries its model and revision but not its thresholds, group sizes
    or policies; only their digest. Checking ``result`` against this
    configuration (``check_result(result, config=configuration_for(result))``)
    therefore verifies ``model``, ``requested_revision`` and every other field,
    assuming the other fields are ``options``: a record made with other
    decision options does not check out until they are given.

    Raises:
        ValueError: the options (or the record's model and revision) do not form a configuration.
    """
    values: dict[str, Any] = {"model": result.model, "revision": result.requested_revision}
    values.update({key: value for key, value in (options or {}).items() if value is not None})
    try:
        return ClaimVerificationConfig(**values)
    except ValidationError as exc:
        where, message, _ = describe_validation_error(exc)
        raise ValueError(f"not a decision configuration: {'field ' + where + ': ' if where else ''}{message}") from None


def _structure(result: ClaimVerification) -> list[str]:
    """Status, groups, bases and model fields that no genuine result combines."""
    problems: list[str] = []
    status = result.status
    wants_support = status in (ClaimVerificationStatus.SUPPORTED, ClaimVerificationStatus.CONTESTED)
    wants_refutation = status in (ClaimVerificationStatus.REFUTED, ClaimVerificationStatus.CONTESTED)
    if bool(result.supporting_group) != wants_support:
        problems.append(f"status {status.value} with {'a' if result.supporting_group else 'no'} supporting group")
    if bool(result.refuting_group) != wants_refutation:
        problems.append(f"status {status.value} with {'a' if result.refuting_group else 'no'} refuting group")
    if result.schema_version >= 2:
        if bool(result.supporting_basis) != bool(result.supporting_group):
            problems.append("supporting_basis does not match supporting_group")
        if bool(result.refuting_basis) != bool(result.refuting_group):
            problems.append("refuting_basis does not match refuting_group")
    scored = {score.memory_ids for score in result.group_scores}
    rechecked = {item.memory_ids for item in result.localized_assessments}
    if result.supporting_group and result.supporting_group not in scored | rechecked:
        problems.append("supporting_group is not one of the scored groups")
    if result.refuting_group and result.refuting_group not in scored:
        problems.append("refuting_group is not one of the scored groups")
    if result.model_called != bool(result.group_scores):
        problems.append(f"model_called={result.model_called} but {len(result.group_scores)} group scores")
    if not result.model_called and result.resolved_revision is not None:
        problems.append("a resolved_revision without a model call")
    engine = result.engine
    if engine is not None:
        if not result.model_called:
            problems.append("an engine identity without a model call")
        if not engine.digest_matches:
            problems.append("engine.digest is not the digest of the engine identity's parts (an edited identity)")
        if engine.model != result.model:  # the engine loads only a directory of the configured model
            problems.append(f"the engine identity names model {engine.model}, the record {result.model}")
        # the configured revision is the manifest's requested or resolved one (or its Manifest.revision)
        if result.requested_revision not in (engine.revision, result.resolved_revision):
            problems.append(
                f"the engine identity names revision {engine.revision}, the record requested_revision "
                f"{result.requested_revision} (and resolved_revision {result.resolved_revision})"
            )
    if status is ClaimVerificationStatus.INCOMPLETE and result.model_called:
        problems.append("status incomplete after a model call")
    for ruling in result.strict_rulings:
        if ruling.memory_ids not in (rechecked if ruling.localized else scored):
            problems.append(f"strict ruling {ruling.rule} names a group that was not {'rechecked' if ruling.localized else 'scored'}")
    if bool(result.strict_rulings) != ("strict_policy_ruling" in result.limitations):
        problems.append("strict_rulings and the strict_policy_ruling limitation disagree")
    return problems


def check_result(
    record: Union[ClaimVerification, Mapping[str, Any], str, bytes],
    *,
    config: Union[ClaimVerificationConfig, Mapping[str, Any], None] = None,
    evidence: Optional[Sequence[Union[ClaimEvidence, Mapping[str, Any]]]] = None,
    requires_complete_set: Optional[bool] = None,
    truncated: Optional[Any] = None,
) -> CheckReport:
    """Recompute the digests of a stored result, check its structure, and re-decide it from its scores.

    Args:
        record: the stored result (instance, mapping or JSON).
        config: the decision configuration it was made with (an instance, a mapping of its
            fields or PRME's own config, as :class:`~verifier.ClaimVerifier` takes it), to check
            ``configuration_sha256`` (and ``model``/``requested_revision``) and
            to replay the decision. ``None``: the default configuration with the
            record's model and revision, used for the replay only when its
            digest is the record's (otherwise the replay is skipped, in a note).
        evidence: the passages it was made with, in caller order (instances or mappings), to check
            ``evidence_sha256`` and replay the whole decision procedure over
            the record's scores (:func:`verifier.decision.replay.replay`).
            ``None``: only what the scores show whatever the passages
            (:func:`~verifier.decision.replay.score_bounds`), said in a note.
        requires_complete_set: the input row's flag, for the replay (``None``:
            taken from the record's status, said in a note).
        truncated: for a strict-policy replay, a scorer's ``truncated(pairs)``
            (``None``: taken from the record's ``truncated_pair`` rulings).

    Returns:
        A :class:`CheckReport`; ``ok`` when nothing was edited that the digests
        cover and the decision follows from the recorded scores.

    Raises:
        ValueError: ``record`` is not a valid result record, or ``config`` or a passage of
            ``evidence`` is malformed (a pydantic ``ValidationError`` naming the field).

    Example:
        >>> from verifier import ClaimVerifier, ScriptedScorer
        >>> result = ClaimVerifier(scorer=ScriptedScorer(default=(0.1, 0.1))).verify_sync("x", [])
        >>> edited = {**result.model_dump(mode="json"), "status": "supported"}
        >>> check_result(result).ok, check_result(edited).ok
        (True, False)
    """
    result = parse_result(record)
    # As ClaimVerifier takes them: a mapping or PRME's own model, for the config and each passage.
    config = as_config(config)
    passages = None if evidence is None else [as_evidence(item) for item in evidence]
    problems = _structure(result)
    notes: list[str] = []
    if audit.claim_sha256(result.claim) != result.claim_sha256:
        problems.append("claim_sha256 does not match claim (the claim was edited)")
    schema4 = result.schema_version == STRICT_SCHEMA_VERSION
    if result.schema_version in (SCHEMA_VERSION, STRICT_SCHEMA_VERSION):
        evaluation = audit.evaluation_id(
            claim_digest=result.claim_sha256,
            configuration_digest=result.configuration_sha256,
            evidence_digest=result.evidence_sha256,
            schema_version=result.schema_version,
            as_of=result.as_of,
        )
    else:  # schemas 1 and 2: the same three digests, without the schema version
        evaluation = legacy_evaluation_id(
            claim_digest=result.claim_sha256,
            configuration_digest=result.configuration_sha256,
            evidence_digest=result.evidence_sha256,
        )
    if evaluation != result.evaluation_id:
        problems.append("evaluation_id does not match the input digests (a digest or the schema version was edited)")
    digest = audit.result_sha256(
        evaluation=result.evaluation_id,
        status=result.status.value,
        supporting_group=result.supporting_group,
        refuting_group=result.refuting_group,
        supporting_basis=result.supporting_basis,
        refuting_basis=result.refuting_basis,
        group_scores=result.group_scores,
        localized_assessments=result.localized_assessments,
        limitations=result.limitations,
        strict_rulings=result.strict_rulings if schema4 else None,
    )
    if digest != result.result_sha256:
        problems.append("result_sha256 does not match the record (its status, groups, bases, scores or limitations were edited)")
    if config is not None:
        if audit.configuration_sha256(config) != result.configuration_sha256:
            problems.append("configuration_sha256 does not match the given configuration")
        if (config.model, config.revision) != (result.model, result.requested_revision):
            problems.append("model or requested_revision differs from the given configuration")
    else:
        notes.append("configuration_sha256 not checked (check_result(record, config=the configuration) checks it)")
    evidence_ok = False
    if passages is not None:
        if audit.evidence_sha256(passages) != result.evidence_sha256:
            problems.append("evidence_sha256 does not match the given evidence")
        else:
            evidence_ok = True
    else:
        notes.append("evidence_sha256 not checked (a result holds no evidence: check --inputs, or "
                     "check_result(record, evidence=the passages), checks it)")
    decision_config = config
    if decision_config is None:
        try:
            decision_config = configuration_for(result)
        except ValueError:  # pragma: no cover - a record's model and revision always form a configuration
            decision_config = None
        if decision_config is not None and audit.configuration_sha256(decision_config) != result.configuration_sha256:
            decision_config = None
            notes.append("decision not replayed: the record was not made with the default configuration (check_result(record, config=...) replays it)")
    outcome: Optional[ReplayOutcome] = None
    if decision_config is not None:
        problems.extend(score_bounds(result, decision_config))
        if evidence_ok and passages is not None and result.schema_version < SCHEMA_VERSION:
            notes.append(
                f"schema {result.schema_version}: decision checked by the score bounds only (the procedure that made "
                "it had no localized rechecks, so this one is not replayed over it)"
            )
        elif evidence_ok and passages is not None:
            outcome = replay(
                result, passages, decision_config, requires_complete_set=requires_complete_set, truncated=truncated
            )
            problems.extend(outcome.problems)
            notes.extend(outcome.notes)
        elif passages is None:
            notes.append(
                "decision replayed from the scores only: the guards read the passages, which a result does not carry "
                "(check --inputs, or check_result(record, evidence=the passages), replays the whole procedure)"
            )
    return CheckReport(problems=tuple(dict.fromkeys(problems)), notes=tuple(notes), replay=outcome)

