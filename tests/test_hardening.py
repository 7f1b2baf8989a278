"""Input hardening of the library's entry points: each regression names the hole it closes.

Everything here runs on scripted scorers (no model): the checks happen before
any model call, and the scorer seam's tolerance and deadline are properties
of :class:`verifier.ClaimVerifier` itself.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import threading
from pathlib import Path
from typing import Iterator
from uuid import UUID

import numpy as np
import pydantic
import pytest

from verifier import (
    ClaimEvidence,
    RecordedScorer,
    ClaimRequest,
    ClaimVerificationConfig,
    ClaimVerificationError,
    ClaimVerifier,
    OnnxScorer,
    RuntimeOptions,
    ScriptedScorer,
    validate_scores,
)
from verifier.decision.guards import speech_act_modes
from verifier.engine.manifest import MANIFEST_NAME
from verifier.options import InputLimits, available_cpus
from verifier.validation import InputError, validate_request

SUPPORT = {"The launch is Tuesday.": (0.97, 0.01)}


def ev(n: int, text: str) -> ClaimEvidence:
    return ClaimEvidence(reference=f"m{n}", memory_id=UUID(int=n), text=text)


def scripted() -> tuple[ClaimVerifier, ScriptedScorer]:
    scorer = ScriptedScorer(SUPPORT, default=(0.05, 0.05))
    return ClaimVerifier(scorer=scorer), scorer


class TestManyClaimsArguments:
    @pytest.mark.parametrize("requests", [None, "abc", b"abc", {"claim": "x"}, 42])
    def test_not_a_list_of_requests(self, requests: object) -> None:
        """Regression: verify_many_sync(None) raised TypeError and "abc" iterated its characters."""
        verifier, scorer = scripted()
        with pytest.raises(InputError, match="requests must be a list of claim requests") as caught:
            verifier.verify_many_sync(requests)  # type: ignore[arg-type]
        assert caught.value.field == "requests"  # as the README's error table says (regression: a plain ValueError)
        assert scorer.calls == []

    def test_a_generator_with_one_invalid_request_names_its_index(self) -> None:
        """Regression: a generator raised TypeError: object of type 'generator' has no len()."""
        verifier, scorer = scripted()

        def requests() -> Iterator[dict[str, object]]:
            yield {"claim": "The launch is Tuesday.", "evidence": [ev(1, "The launch is Tuesday.")]}
            yield {"claim": "   "}

        with pytest.raises(InputError, match=re.escape("request 1: claim must not be empty")) as caught:
            verifier.verify_many_sync(requests())
        assert caught.value.field == "requests.1.claim"
        assert scorer.calls == []

    def test_a_malformed_field_of_one_request_is_named_with_its_index(self) -> None:
        verifier, scorer = scripted()
        good = {"claim": "The launch is Tuesday.", "evidence": [ev(1, "The launch is Tuesday.")]}
        with pytest.raises(InputError, match=re.escape("request 2: ")) as caught:
            verifier.verify_many_sync([good, good, {"claim": "x y", "evidence": [{"reference": 7}]}])
        assert caught.value.field == "requests.2.evidence.0.reference" and scorer.calls == []

    def test_a_generator_of_valid_requests_is_verified(self) -> None:
        verifier, _ = scripted()
        gen = (ClaimRequest(claim="The launch is Tuesday.", evidence=(ev(i, "The launch is Tuesday."),)) for i in (1, 2))
        assert [r.status.value for r in verifier.verify_many_sync(gen)] == ["supported", "supported"]


class TestFromModelDir:
    def test_a_file_instead_of_a_directory(self, tmp_path: Path) -> None:
        """Regression: from_model_dir on a file raised NotADirectoryError."""
        path = tmp_path / "model"
        path.write_text("x", encoding="utf-8")
        with pytest.raises(ClaimVerificationError, match=re.escape(f"model directory {path} is not a directory")):
            ClaimVerifier.from_model_dir(path)

    def test_a_manifest_that_is_a_directory(self, tmp_path: Path) -> None:
        """Regression: manifest.json being a directory raised IsADirectoryError."""
        (tmp_path / MANIFEST_NAME).mkdir()
        with pytest.raises(ClaimVerificationError, match=re.escape(f"{tmp_path / MANIFEST_NAME} is a directory, not a regular file")):
            ClaimVerifier.from_model_dir(tmp_path)

    def test_a_manifest_that_is_a_fifo(self, tmp_path: Path) -> None:
        """Regression: a FIFO named manifest.json was reported as a missing manifest by the CLI
        ("has no manifest.json; create it once with ..."), and the scorer called it an invalid one."""
        from verifier import OnnxScorer
        from verifier.cli import main

        os.mkfifo(tmp_path / MANIFEST_NAME)
        expected = f"{tmp_path / MANIFEST_NAME} is a FIFO, not a regular file; re-export the"
        with pytest.raises(ClaimVerificationError, match=re.escape(expected)):
            ClaimVerifier.from_model_dir(tmp_path)
        with pytest.raises(ClaimVerificationError, match=re.escape(expected)):
            OnnxScorer(tmp_path).load()
        commands = [["info"], ["verify", "--claim", "a", "--evidence", "b"]]
        try:
            import uvicorn  # noqa: F401  # serve reads the manifest only with the server extra installed
        except ImportError:
            pass
        else:
            commands.append(["serve", "--port", "0"])
        for argv in commands:
            errors = io.StringIO()
            with contextlib.redirect_stderr(errors):
                assert main([*argv, "--model-dir", str(tmp_path)]) == 1, argv
            assert errors.getvalue() == f"error: {expected} model directory\n", argv


class TestStrictValues:
    @pytest.mark.parametrize("value", ["yes", "true", 1, 0])
    def test_requires_complete_set_must_be_a_bool(self, value: object) -> None:
        """Regression: requires_complete_set "yes" became true."""
        with pytest.raises(pydantic.ValidationError, match="requires_complete_set"):
            ClaimRequest.model_validate({"claim": "x", "requires_complete_set": value})
        verifier, _ = scripted()
        with pytest.raises(InputError, match=re.escape(f"requires_complete_set must be True or False, got {value!r}")):
            verifier.verify_sync("x", [], requires_complete_set=value)  # type: ignore[arg-type]

    @pytest.mark.parametrize("value", ["0.8", True])
    def test_thresholds_must_be_numbers(self, value: object) -> None:
        """Regression: entailment_threshold="0.8" and True were accepted."""
        with pytest.raises(pydantic.ValidationError, match="entailment_threshold"):
            ClaimVerificationConfig(entailment_threshold=value)  # type: ignore[arg-type]
        assert ClaimVerificationConfig(entailment_threshold=1).entailment_threshold == 1.0

    @pytest.mark.parametrize("claim", ["\u200b", "\u200b\u200d\ufeff", " \u2060 "])
    def test_a_claim_of_invisible_characters_is_empty(self, claim: str) -> None:
        """Regression: a claim of only U+200B counted as non-empty."""
        verifier, scorer = scripted()
        with pytest.raises(InputError, match="claim must contain a visible character"):
            verifier.verify_sync(claim, [ev(1, "The launch is Tuesday.")])
        assert scorer.calls == []

    def test_nul_characters_are_refused(self) -> None:
        """Regression: NUL bytes passed into claims and passages."""
        verifier, _ = scripted()
        with pytest.raises(InputError, match=re.escape("claim must not contain a NUL character (at position 3)")):
            verifier.verify_sync("The\x00 launch", [])
        with pytest.raises(pydantic.ValidationError, match="must not contain a NUL character"):
            verifier.verify_sync("The launch is Tuesday.", [{"reference": "m1", "memory_id": str(UUID(int=1)), "text": "a\x00b"}])

    def test_a_lone_surrogate_in_a_passage_is_refused(self) -> None:
        with pytest.raises(pydantic.ValidationError, match="unable to parse raw data as a unicode string"):
            ev(1, "The launch \ud800 is Tuesday.")

    def test_threads_are_capped_at_the_available_cpus(self, tmp_path: Path) -> None:
        """Regression: --threads 1024 was accepted and drove the load average past 200."""
        cpus = available_cpus()
        message = f"must be at most the {cpus} CPUs available to this process, got {cpus + 1}"
        with pytest.raises(pydantic.ValidationError, match=re.escape(message)):
            RuntimeOptions(intra_op_num_threads=cpus + 1)
        with pytest.raises(ValueError, match=re.escape(message)):
            OnnxScorer(tmp_path, intra_op_num_threads=cpus + 1)
        assert RuntimeOptions(intra_op_num_threads=cpus).intra_op_num_threads == cpus

    @pytest.mark.parametrize(("field", "value"), [("max_batch_tokens", "128"), ("max_batch_tokens", 128.0),
                                                  ("verify_golden", "yes"), ("enable_mem_pattern", 1),
                                                  ("enable_cpu_mem_arena", "false")])
    def test_options_are_not_coerced_from_other_types(self, field: str, value: object) -> None:
        """Regression (adversarial run): "128" and "yes" were accepted (pydantic's lax mode), and "false" read as True."""
        with pytest.raises(pydantic.ValidationError, match=re.escape(field)):
            RuntimeOptions(**{field: value})


class TestInputLimits:
    def test_a_long_claim_is_refused_before_any_model_call(self) -> None:
        """Regression: there were no size limits (a 10 MB passage took 38 s and 1.7 GB)."""
        scorer = ScriptedScorer(default=(0.05, 0.05))
        verifier = ClaimVerifier(scorer=scorer, runtime=RuntimeOptions(limits=InputLimits(max_claim_chars=20)))
        with pytest.raises(InputError, match=re.escape("claim has 22 characters, more than max_claim_chars=20")) as caught:
            verifier.verify_sync("The launch is Tuesday.", [ev(1, "x")])
        assert caught.value.field == "claim"
        assert scorer.calls == []

    def test_a_long_passage_is_refused_naming_its_index_and_the_limit(self) -> None:
        scorer = ScriptedScorer(default=(0.05, 0.05))
        verifier = ClaimVerifier(scorer=scorer, runtime=RuntimeOptions(limits=InputLimits(max_passage_chars=100)))
        with pytest.raises(InputError, match=re.escape("evidence 1 text has 101 characters, more than max_passage_chars=100")) as caught:
            verifier.verify_sync("The launch is Tuesday.", [ev(1, "short"), ev(2, "y" * 101)])
        assert caught.value.field == "evidence.1.text"
        assert scorer.calls == []

    def test_the_default_passage_limit(self) -> None:
        verifier, scorer = scripted()
        assert InputLimits().max_passage_chars == 100_000
        with pytest.raises(InputError, match="more than max_passage_chars=100000"):
            verifier.verify_sync("The launch is Tuesday.", [ev(1, "word " * 20_001)])
        assert scorer.calls == []

    def test_too_many_passages_from_a_generator_stop_at_the_limit(self) -> None:
        """The evidence generator is not consumed past max_evidence + 1 items."""
        consumed = 0

        def passages() -> Iterator[ClaimEvidence]:
            nonlocal consumed
            for n in range(1, 10_000):
                consumed += 1
                yield ev(n, "The launch is Tuesday.")

        verifier = ClaimVerifier(ClaimVerificationConfig(max_evidence=3), scorer=ScriptedScorer(default=(0.05, 0.05)))
        with pytest.raises(InputError, match=re.escape("evidence has more than 3 passages, more than max_evidence=3")):
            verifier.verify_sync("The launch is Tuesday.", passages())
        assert consumed == 4

    def test_a_request_mapping_counts_its_passages_before_parsing_any(self) -> None:
        """Regression (issue 33, finding 6): a request given as a mapping (a CLI row, a server body) had every
        passage parsed before the max_evidence refusal (20,000 built for a limit of 64). Now the count comes
        first: passage 100 is malformed, yet the refusal is the count; a generator is read to the limit + 1."""
        config = ClaimVerificationConfig(max_evidence=64)
        rows = [{"reference": f"m{n}", "memory_id": str(UUID(int=n + 1)), "text": "The launch is Tuesday."}
                for n in range(20_000)]
        rows[100] = {"reference": "m100"}  # no memory_id, no text: parsing it would be a ValidationError
        with pytest.raises(InputError, match=re.escape("evidence has 20000 passages, more than max_evidence=64")):
            validate_request({"claim": "The launch is Tuesday.", "evidence": rows}, config)
        consumed = 0

        def passages() -> Iterator[dict[str, str]]:
            nonlocal consumed
            for row in rows:
                consumed += 1
                yield row

        with pytest.raises(InputError, match=re.escape("evidence has more than 64 passages, more than max_evidence=64")):
            validate_request({"claim": "The launch is Tuesday.", "evidence": passages()}, config)
        assert consumed == 65
        valid = validate_request({"claim": "The launch is Tuesday.", "evidence": iter(rows[:3])}, config)
        assert [e.reference for e in valid.evidence] == ["m0", "m1", "m2"]


class TestScorerSeam:
    def test_a_negative_rounding_residue_is_refused_not_clipped(self) -> None:
        """Issue 22: neutral = 1 - e - c = -1.1e-16 was clipped to 0; PRME 0.15.0 refuses any value below 0
        (``EvidenceGroupScore.neutral`` has ``ge=0``), and a result must never rest on a repaired score."""
        entailment, contradiction = 0.07, 0.93
        neutral = 1.0 - entailment - contradiction
        assert neutral < 0
        with pytest.raises(ClaimVerificationError, match=re.escape("must be normalized to [0, 1]")):
            validate_scores(np.array([[entailment, contradiction, neutral]]), 1)

    def test_float16_rows_off_by_more_than_the_reference_tolerance_are_refused(self) -> None:
        """Issue 22: float16 rows were renormalised; PRME refuses a row whose sum is off by more than
        ``isclose(rel_tol=1e-5, abs_tol=1e-5)``, so the project does too (values are never rewritten)."""
        rows = np.array([[0.3333, 0.3333, 0.3333], [0.98, 0.01, 0.01]], dtype=np.float16)
        assert abs(float(rows[0].astype(np.float64).sum()) - 1.0) > 1e-5
        with pytest.raises(ClaimVerificationError, match="at row 0"):
            validate_scores(rows, 2)

    @pytest.mark.parametrize("seed", range(20))
    def test_a_float32_softmax_is_never_refused(self, seed: int) -> None:
        """Issue 22: a real float32 softmax must always pass (its sums are within ~1e-7 of 1)."""
        logits = np.random.default_rng(seed).normal(0, 8, size=(256, 3)).astype(np.float32)
        exp = np.exp(logits - logits.max(axis=1, keepdims=True))
        probabilities = (exp / exp.sum(axis=1, keepdims=True)).astype(np.float32)
        assert validate_scores(probabilities, 256).tobytes() == probabilities.astype(np.float64).tobytes()

    @pytest.mark.parametrize(
        ("total", "accepted"),
        [(1.0 + 9.9e-6, True), (1.0 - 9.9e-6, True), (1.0 + 1.02e-5, False), (1.0 - 1.02e-5, False)],
    )
    def test_the_sum_tolerance_is_the_references(self, total: float, accepted: bool) -> None:
        """PRME: ``math.isclose(e + c + n, 1, rel_tol=1e-5, abs_tol=1e-5)`` (and ``np.allclose`` of the row sum)."""
        row = [0.5, 0.25, total - 0.75]
        if accepted:
            assert validate_scores(np.array([row]), 1).tolist() == [row]
        else:
            with pytest.raises(ClaimVerificationError, match="not summing to 1"):
                validate_scores(np.array([row]), 1)

    def test_exact_rows_are_returned_bit_for_bit(self) -> None:
        rows = np.array([[0.1, 0.2, 0.7], [0.98, 0.01, 0.01]])
        assert validate_scores(rows, 2).tobytes() == rows.tobytes()

    @pytest.mark.parametrize("row", [[-1e-4, 0.5, 0.5001], [1.001, 0.0, 0.0], [0.5, 0.5, 0.01]])
    def test_beyond_the_tolerance_is_still_refused(self, row: list[float]) -> None:
        with pytest.raises(ClaimVerificationError):
            validate_scores(np.array([row]), 1)

    def test_a_hung_scorer_fails_at_its_deadline(self) -> None:
        """Regression: the scorer seam had no timeout: a hung scorer blocked its caller forever."""
        release = threading.Event()

        class Hung:
            def score(self, pairs: list[tuple[str, str]]) -> np.ndarray:
                release.wait(60)
                return np.tile([0.05, 0.05, 0.9], (len(pairs), 1))

        verifier = ClaimVerifier(scorer=Hung(), runtime=RuntimeOptions(score_timeout_s=0.2))
        try:
            with pytest.raises(ClaimVerificationError, match=re.escape("within score_timeout_s=0.2 s")):
                verifier.verify_sync("The launch is Tuesday.", [ev(1, "The launch is Tuesday.")])
        finally:
            release.set()

    def test_a_deadline_that_is_met_changes_nothing(self) -> None:
        plain, _ = scripted()
        timed = ClaimVerifier(scorer=ScriptedScorer(SUPPORT, default=(0.05, 0.05)), runtime=RuntimeOptions(score_timeout_s=30))
        evidence = [ev(1, "The launch is Tuesday."), ev(2, "Unrelated.")]
        assert timed.verify_sync("The launch is Tuesday.", evidence) == plain.verify_sync("The launch is Tuesday.", evidence)


def test_the_mode_cache_never_keeps_a_long_passage() -> None:
    """Regression: lru_cache(256) on passage text could keep 256 large passages alive (~2.5 GB)."""
    speech_act_modes.cache_clear()
    speech_act_modes("I want " + "x" * 100_000)
    speech_act_modes("I want offline sync.")
    info = speech_act_modes.cache_info()
    assert (info.misses, info.currsize) == (2, 1)


def test_recorded_scores_refuse_a_repeated_key(tmp_path: Path) -> None:
    """Issue 23 item 4: a recorded-score line with a second "entailment" was read with the last value."""
    path = tmp_path / "scores.jsonl"
    path.write_text(
        '{"premise": "p", "hypothesis": "h", "entailment": 0.9, "contradiction": 0.05, "neutral": 0.05, "entailment": 0.1}\n',
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match=re.escape("duplicate key 'entailment' in a JSON object")):
        RecordedScorer.from_jsonl(path)


def test_a_nul_in_an_evidence_reference_is_refused() -> None:
    """Issue 23 item 19: a NUL was refused in claims and texts but accepted in a reference."""
    verifier, scorer = scripted()
    with pytest.raises(pydantic.ValidationError, match=re.escape("must not contain a NUL character (at position 2)")):
        verifier.verify_sync("The launch is Tuesday.", [{"reference": "m1\x00", "memory_id": str(UUID(int=1)), "text": "The launch is Tuesday."}])
    assert scorer.calls == []
