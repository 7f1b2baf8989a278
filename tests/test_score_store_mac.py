"""The score store's rows are authenticated (docs/score-store.md "The key"): forged or old-format rows are misses,
the key file is created 0600 beside the store or given, and a warm store reports truncation as a cold one."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import sqlite3
import stat
from pathlib import Path

import numpy as np
import pydantic
import pytest

from verifier import cli
from verifier.claim_verifier import ClaimVerifier
from verifier.engine.score_store import ScoreStore, ScoreStoreError, default_key_path
from verifier.engine.scorer import OnnxScorer
from verifier.options import RuntimeOptions
from verifier.types import ClaimRequest, ClaimVerificationError

ROOT = Path(__file__).resolve().parents[1]
CLAIMS = ROOT / "examples" / "claims.jsonl"


def _requests() -> list[ClaimRequest]:
    rows = [json.loads(line) for line in CLAIMS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [ClaimRequest.model_validate(row) for row in rows]


def _entailment_logits(labels: tuple[str, ...]) -> np.ndarray:
    """Logits (model label order) that a softmax turns into entailment ~1.0."""
    return np.array([20.0 if label.lower() == "entailment" else -20.0 for label in labels], dtype="<f4")


def _rewrite_rows(store: Path, blob_and_checksum) -> int:  # type: ignore[no-untyped-def]
    """Rewrite every row's logits and checksum as ``blob_and_checksum(key)`` says (an attacker with write access)."""
    with sqlite3.connect(store) as conn:
        keys = [bytes(row[0]) for row in conn.execute("SELECT key FROM scores")]
        for key in keys:
            conn.execute("UPDATE scores SET logits = ?, checksum = ? WHERE key = ?", (*blob_and_checksum(key), key))
    return len(keys)


@pytest.mark.parametrize("forgery", ["old-format", "keyless-new-format", "another-key"])
def test_forged_rows_are_misses_not_supported(
    tiny_model_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, forgery: str
) -> None:
    """Regression (issue 33, finding 1): rows rewritten to strong entailment with recomputed checksums
    (``sha256(key || logits)[:8]``, no secret) made the next run say ``supported``, with nothing rejected or
    logged. Every row is now authenticated with HMAC-SHA256 under a secret key: forged rows are misses,
    rescored, counted and logged, and the results are those of a run without the store."""
    requests = _requests()
    plain = [r.model_dump_json() for r in ClaimVerifier.from_model_dir(tiny_model_dir).verify_many_sync(requests)]
    assert any(json.loads(r)["status"] != "supported" for r in plain)  # the forgery would show
    store = tmp_path / "scores.sqlite"
    ClaimVerifier.from_model_dir(tiny_model_dir, runtime=RuntimeOptions(score_cache=store)).verify_many_sync(requests)
    strong = _entailment_logits(OnnxScorer(tiny_model_dir).labels).tobytes()
    attacker_key = b"k" * 32
    forge = {
        "old-format": lambda key: (strong, hashlib.sha256(key + strong).digest()[:8]),
        "keyless-new-format": lambda key: (strong + b"\x00", hashlib.sha256(key + strong + b"\x00").digest()),
        "another-key": lambda key: (
            strong + b"\x00", __import__("hmac").new(attacker_key, key + strong + b"\x00", "sha256").digest()
        ),
    }[forgery]
    forged = _rewrite_rows(store, forge)
    assert forged > 0
    with caplog.at_level(logging.WARNING, logger="verifier.engine"):
        warm = ClaimVerifier.from_model_dir(tiny_model_dir, runtime=RuntimeOptions(score_cache=store))
        assert [r.model_dump_json() for r in warm.verify_many_sync(requests)] == plain
    assert sum(int(n) for n in re.findall(r"(\d+) rows failed their MAC", caplog.text)) == forged
    assert warm.stats["store_rejected"] == forged  # (a pair the run rescored and stored may hit later in it)
    again = ClaimVerifier.from_model_dir(tiny_model_dir, runtime=RuntimeOptions(score_cache=store))
    assert [r.model_dump_json() for r in again.verify_many_sync(requests)] == plain  # rewritten with the key
    assert again.stats["store_rejected"] == 0 and again.stats["store_misses"] == 0 and again.stats["store_hits"] > 0


def test_a_store_written_with_the_old_checksum_is_misses_then_rewritten(tiny_model_dir: Path, tmp_path: Path) -> None:
    """Stores written before the MAC (12-byte logits, ``sha256(key || logits)[:8]``) hold genuine scores that
    cannot be told from forged ones: every row is a miss (counted as rejected), rescored and rewritten."""
    store = tmp_path / "scores.sqlite"
    pairs = [(f"The launch moved to day {i}.", "The launch is on Tuesday.") for i in range(6)]
    expected = OnnxScorer(tiny_model_dir).score(pairs)
    OnnxScorer(tiny_model_dir, score_cache=store).score(pairs)
    with sqlite3.connect(store) as conn:
        rows = [(bytes(k), bytes(b)[:12]) for k, b in conn.execute("SELECT key, logits FROM scores")]
        for key, logits in rows:
            conn.execute("UPDATE scores SET logits = ?, checksum = ? WHERE key = ?",
                         (logits, hashlib.sha256(key + logits).digest()[:8], key))
    warm = OnnxScorer(tiny_model_dir, score_cache=store)
    assert warm.score(pairs).tobytes() == expected.tobytes()
    assert (warm.stats.store_hits, warm.stats.store_misses, warm.stats.store_rejected) == (0, 6, 6)
    again = OnnxScorer(tiny_model_dir, score_cache=store)
    assert again.score(pairs).tobytes() == expected.tobytes()
    assert (again.stats.store_hits, again.stats.store_rejected) == (6, 0)


def test_the_key_file_is_created_0600_beside_the_store_once(tmp_path: Path) -> None:
    """No key given: ``STORE.key`` is created with mode 0600 and 64 hex digits, no temporary file left, and
    reused (not replaced) by the next open; rows written under it are found again."""
    path = tmp_path / "scores.sqlite"
    key = hashlib.sha256(b"pair").digest()
    store = ScoreStore(path)
    store.put([key], np.array([[1.0, 2.0, 3.0]], dtype=np.float32))
    store.close()
    key_file = default_key_path(path)
    assert key_file == tmp_path / "scores.sqlite.key" and store.key_file == key_file
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    content = key_file.read_text()
    assert re.fullmatch(r"[0-9a-f]{64}\n", content)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []
    reopened = ScoreStore(path)
    assert key_file.read_text() == content and reopened.get([key]).found.all()


def test_a_given_key_file_is_used_and_must_exist(tiny_model_dir: Path, tmp_path: Path) -> None:
    """``score_cache_key``: rows written under one key are misses under another; a missing, short or
    non-regular key file is refused naming the path (never created, never a silent fallback)."""
    path = tmp_path / "scores.sqlite"
    first, second = tmp_path / "a.key", tmp_path / "b.key"
    first.write_text("a" * 64 + "\n")
    second.write_text("b" * 64 + "\n")
    pairs = [("The launch moved to Wednesday.", "The launch is on Tuesday.")]
    OnnxScorer(tiny_model_dir, score_cache=path, score_cache_key=first).score(pairs)
    assert not default_key_path(path).exists()
    runtime = RuntimeOptions(score_cache=path, score_cache_key=second)
    other = ClaimVerifier.from_model_dir(tiny_model_dir, runtime=runtime).scorer
    assert isinstance(other, OnnxScorer)
    other.score(pairs)
    assert (other.stats.store_hits, other.stats.store_rejected) == (0, 1)
    same = OnnxScorer(tiny_model_dir, score_cache=path, score_cache_key=second)
    same.score(pairs)
    assert same.stats.store_hits == 1
    short = tmp_path / "short.key"
    short.write_text("abc\n")
    for bad, message in ((tmp_path / "missing.key", "does not exist"), (short, "holds 3 bytes, at least 32"),
                         (tmp_path, "is not a regular file")):
        with pytest.raises(ScoreStoreError, match=rf"^score store key {re.escape(str(bad))}: {message}"):
            ScoreStore(path, key_file=bad)
        with pytest.raises(ClaimVerificationError, match=re.escape(str(bad))):
            OnnxScorer(tiny_model_dir, score_cache=path, score_cache_key=bad).score(pairs)
    assert not (tmp_path / "missing.key").exists()
    with pytest.raises(pydantic.ValidationError, match="score_cache_key needs score_cache"):
        RuntimeOptions(score_cache_key=first)


def test_a_warm_store_reports_truncation_as_a_cold_one(tiny_model_dir: Path, tmp_path: Path) -> None:
    """Regression (issue 33, finding 5): ``stats.truncated_pairs`` was 1 cold and 0 warm (the store kept no
    truncation flag), while ``truncated()`` still said ``[True]``. The row now keeps the flag."""
    long_premise = " ".join(["the launch moved to wednesday after review"] * 400)
    pairs = [(long_premise, "The launch is on Tuesday."), ("The launch moved.", "The launch is on Tuesday.")]
    store = tmp_path / "scores.sqlite"
    cold = OnnxScorer(tiny_model_dir, score_cache=store)
    cold.score(pairs)
    flags = cold.truncated(pairs)
    assert flags == [True, False]
    warm = OnnxScorer(tiny_model_dir, score_cache=store)
    warm.score(pairs)
    warm.score_encoded(warm.encode(pairs))
    assert warm.stats.store_hits == 4 and warm.stats.batches == 0
    assert cold.stats.truncated_pairs == sum(flags) and warm.stats.truncated_pairs == 2 * sum(flags)


def test_cli_summary_counts_scores_from_the_store_and_rejected_rows(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``verify --score-cache``'s summary says how many scores came from the store and how many rows were
    refused; ``--score-cache-key FILE`` is used (and refused without ``--score-cache``)."""
    store, key = tmp_path / "scores.sqlite", tmp_path / "store.key"
    key.write_text(os.urandom(32).hex())
    key.chmod(0o600)
    base = ["verify", str(CLAIMS), "--model-dir", str(tiny_model_dir), "--score-cache", str(store),
            "--score-cache-key", str(key)]
    assert cli.main([*base, "-o", str(tmp_path / "cold.jsonl")]) == 0
    cold_err = capsys.readouterr().err
    misses = int(re.search(r"^store misses\s+(\d+)$", cold_err, re.M).group(1))  # type: ignore[union-attr]
    hits = int(re.search(r"^store hits\s+(\d+)$", cold_err, re.M).group(1))  # type: ignore[union-attr]
    assert not default_key_path(store).exists()
    strong = _entailment_logits(OnnxScorer(tiny_model_dir).labels).tobytes() + b"\x00"
    forged = _rewrite_rows(store, lambda k: (strong, hashlib.sha256(k + strong).digest()))
    assert forged == misses
    assert cli.main([*base, "-o", str(tmp_path / "warm.jsonl")]) == 0
    warm_err = capsys.readouterr().err
    assert re.search(rf"^store rejected\s+{forged}$", warm_err, re.M)
    # every forged row is refused: the run is a cold one again (hits only on what it stored itself)
    assert re.search(rf"^store hits\s+{hits}$", warm_err, re.M) and re.search(rf"^store misses\s+{misses}$", warm_err, re.M)
    assert f"scores from the store: {hits} distinct pair{'' if hits == 1 else 's'} (" in warm_err
    assert (tmp_path / "warm.jsonl").read_bytes() == (tmp_path / "cold.jsonl").read_bytes()
    assert cli.main([*base, "-o", str(tmp_path / "third.jsonl")]) == 0
    third_err = capsys.readouterr().err
    assert f"scores from the store: {hits + misses} distinct pairs (" in third_err
    # the model ran nothing: no padding figure (new-user trial: it read 1.00x)
    assert re.search(r"^store misses\s+0$", third_err, re.M) and re.search(r"^padding overhead\s+-$", third_err, re.M)
    assert cli.main(["verify", str(CLAIMS), "--model-dir", str(tiny_model_dir), "--score-cache-key", str(key)]) == 2
    assert "--score-cache-key needs --score-cache" in capsys.readouterr().err


def test_cli_refuses_a_key_file_that_is_also_an_output(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``-o KEY --score-cache-key KEY`` would replace the key with the results (then every row is a miss): exit 2."""
    key = tmp_path / "store.key"
    key.write_text("c" * 64)
    code = cli.main(["verify", str(CLAIMS), "--model-dir", str(tiny_model_dir), "-o", str(key),
                     "--score-cache", str(tmp_path / "scores.sqlite"), "--score-cache-key", str(key)])
    assert code == 2
    assert f"error: --score-cache-key {key} is also -o; the key needs a file of its own" in capsys.readouterr().err
    assert key.read_text() == "c" * 64 and not (tmp_path / "scores.sqlite").exists()


def test_rows_with_a_valid_mac_over_non_finite_logits_are_logged_as_such_not_as_mac_failures(
    tiny_model_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Rows a key holder wrote with NaN logits carry a valid MAC: they are misses, and the warning says what
    is wrong with them (before, it blamed their MAC, which checked out)."""
    import hmac

    requests = _requests()
    store = tmp_path / "scores.sqlite"
    plain = [r.model_dump_json() for r in ClaimVerifier.from_model_dir(tiny_model_dir).verify_many_sync(requests)]
    ClaimVerifier.from_model_dir(tiny_model_dir, runtime=RuntimeOptions(score_cache=store)).verify_many_sync(requests)
    key = default_key_path(store).read_bytes().strip()
    nan = np.full(3, np.nan, dtype="<f4").tobytes() + b"\x00"
    written = _rewrite_rows(store, lambda row: (nan, hmac.new(key, row + nan, "sha256").digest()))
    with caplog.at_level(logging.WARNING, logger="verifier.engine"):
        warm = ClaimVerifier.from_model_dir(tiny_model_dir, runtime=RuntimeOptions(score_cache=store))
        assert [r.model_dump_json() for r in warm.verify_many_sync(requests)] == plain
    assert "failed their MAC" not in caplog.text
    found = re.findall(r"(\d+) rows carry a valid MAC but non-finite logits", caplog.text)
    assert sum(int(n) for n in found) == written == warm.stats["store_rejected"]
