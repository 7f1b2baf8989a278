"""The persistent score store (docs/score-store.md): identical results with and without it, cold and warm, across
batch layouts; several processes on one file; refused foreign and corrupt files; the row bound; no reuse where a
pair's bits depend on its batch; the CLI twice over the examples (second run all hits, same bytes)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from verifier import cli
from verifier.claim_verifier import ClaimVerifier
from verifier.engine.score_store import FORMAT_MAGIC, ScoreStore, ScoreStoreError
from verifier.engine.scorer import OnnxScorer
from verifier.options import RuntimeOptions
from verifier.types import ClaimRequest, ClaimVerificationError

ROOT = Path(__file__).resolve().parents[1]
CLAIMS = ROOT / "examples" / "claims.jsonl"
WORDS = "the launch moved to wednesday after a long review of every open issue by the whole release team".split()


def _pairs(count: int, seed: int = 0) -> list[tuple[str, str]]:
    rng = np.random.default_rng(seed)
    return [
        (" ".join(rng.choice(WORDS, size=int(rng.integers(1, 60)))) + f" ({seed}.{i})", "The launch is on Tuesday.")
        for i in range(count)
    ]


def _requests() -> list[ClaimRequest]:
    rows = [json.loads(line) for line in CLAIMS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [ClaimRequest.model_validate(row) for row in rows]


def _bits(array: np.ndarray) -> bytes:
    return np.ascontiguousarray(array).tobytes()


def _key(n: int) -> bytes:
    return hashlib.sha256(str(n).encode()).digest()


# ---------------------------------------------------------------- identical results


def test_bit_identity_the_store_relies_on_alone_vs_padded_batch(tiny_model_dir: Path) -> None:
    """The measured premise: a float32 pair scored alone has exactly the bits it has in a mixed padded batch."""
    pairs = _pairs(24)
    scorer = OnnxScorer(tiny_model_dir)
    alone = np.vstack([scorer.score([pair]) for pair in pairs])
    assert _bits(alone) == _bits(scorer.score(pairs))
    assert _bits(alone) == _bits(OnnxScorer(tiny_model_dir, max_batch_tokens=64).score(pairs))


def test_scores_identical_cold_and_warm_across_layouts(tiny_model_dir: Path, tmp_path: Path) -> None:
    store = tmp_path / "scores.sqlite"
    pairs = _pairs(40)
    expected = OnnxScorer(tiny_model_dir).score(pairs)
    expected_logits = OnnxScorer(tiny_model_dir).score_logits(pairs)

    cold = OnnxScorer(tiny_model_dir, score_cache=store)
    first = cold.score(pairs[:15])  # a cold store, partly filled
    second = cold.score(pairs + pairs[:3])  # 15 hits, 25 misses, repeats run once
    assert _bits(first) == _bits(expected[:15]) and _bits(second[:40]) == _bits(expected)
    assert (cold.stats.store_hits, cold.stats.store_misses) == (15, 40)
    assert cold.score_cache_status == str(store)

    warm = OnnxScorer(tiny_model_dir, score_cache=store, max_batch_tokens=64)  # another layout, all hits
    reordered = list(reversed(pairs))
    assert _bits(warm.score(reordered)[::-1]) == _bits(expected)
    assert _bits(warm.score_logits(pairs)) == _bits(expected_logits)
    probabilities, run = warm.score_encoded(warm.encode(pairs[:5] + pairs[:5]))
    assert _bits(probabilities) == _bits(np.vstack([expected[:5], expected[:5]]))
    assert run.batches == 0 and warm.stats.batches == 0 and warm.stats.real_tokens == 0
    assert warm.stats.store_misses == 0 and warm.stats.store_hits == 40 + 40 + 5


def test_verifications_and_digests_identical_with_and_without_the_store(tiny_model_dir: Path, tmp_path: Path) -> None:
    requests = _requests()
    plain = [r.model_dump_json() for r in ClaimVerifier.from_model_dir(tiny_model_dir).verify_many_sync(requests)]
    store = tmp_path / "scores.sqlite"
    for runtime in (
        RuntimeOptions(score_cache=store),  # cold
        RuntimeOptions(score_cache=store),  # warm
        RuntimeOptions(score_cache=store, schedule="eager", max_batch_tokens=64),  # warm, other layout
    ):
        verifier = ClaimVerifier.from_model_dir(tiny_model_dir, runtime=runtime)
        assert [r.model_dump_json() for r in verifier.verify_many_sync(requests)] == plain
        one_by_one = [verifier.verify_sync(request.claim, request.evidence,
                                           requires_complete_set=request.requires_complete_set) for request in requests[:5]]
        assert [r.model_dump_json() for r in one_by_one] == plain[:5]
    assert verifier.scorer.stats.store_hits > 0  # type: ignore[attr-defined]


def test_the_key_separates_what_changes_the_bits(tiny_model_dir: Path, tmp_path: Path) -> None:
    store = tmp_path / "scores.sqlite"
    pairs = _pairs(6)
    OnnxScorer(tiny_model_dir, score_cache=store).score(pairs)
    other = OnnxScorer(tiny_model_dir, score_cache=store, padding="none")  # padding mode is part of the key
    assert _bits(other.score(pairs)) == _bits(OnnxScorer(tiny_model_dir).score(pairs))
    assert (other.stats.store_hits, other.stats.store_misses) == (0, 6)
    again = OnnxScorer(tiny_model_dir, score_cache=store, padding="none")
    again.score(pairs)
    assert again.stats.store_hits == 6
    assert ScoreStore(store).rows() == 12


def test_the_key_holds_the_session_entries_the_engine_really_sets(tiny_model_dir: Path, tmp_path: Path) -> None:
    """The engine's default session entries are part of the key: spelling a default out is the same key;
    re-enabling the SkipLayerNormalization fusion (bit-identical in float32, not in int8) is another."""
    store = tmp_path / "scores.sqlite"
    pairs = _pairs(5)
    OnnxScorer(tiny_model_dir, score_cache=store).score(pairs)
    spelled = OnnxScorer(tiny_model_dir, score_cache=store,
                         session_config_entries={"optimization.disable_specified_optimizers": "SkipLayerNormFusion"})
    spelled.score(pairs)
    assert (spelled.stats.store_hits, spelled.stats.store_misses) == (5, 0)
    fused = OnnxScorer(tiny_model_dir, score_cache=store, session_config_entries={"optimization.disable_specified_optimizers": ""})
    assert _bits(fused.score(pairs)) == _bits(OnnxScorer(tiny_model_dir).score(pairs))
    assert (fused.stats.store_hits, fused.stats.store_misses) == (0, 5)
    assert ScoreStore(store).rows() == 10


# ---------------------------------------------------------------- where scores must not be reused


def test_int8_with_batched_padding_is_not_reused(
    tiny_int8_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = tmp_path / "scores.sqlite"
    pairs = _pairs(24)
    batched = OnnxScorer(tiny_int8_dir, variant="int8").score(pairs)
    alone = OnnxScorer(tiny_int8_dir, variant="int8", padding="none").score(pairs)
    assert _bits(batched) != _bits(alone)  # why: dynamic int8 quantizes activations per batch

    with caplog.at_level(logging.WARNING, logger="verifier.engine"):
        bypassed = OnnxScorer(tiny_int8_dir, variant="int8", score_cache=store)
        assert _bits(bypassed.score(pairs)) == _bits(batched)
    assert bypassed.score_cache_status is not None and bypassed.score_cache_status.startswith("bypassed (variant 'int8'")
    assert 'padding="none"' in caplog.text and (bypassed.stats.store_hits, bypassed.stats.store_misses) == (0, 0)
    assert ScoreStore(store).rows() == 0

    for _ in range(2):  # padding="none" makes int8 reusable: cold, then warm
        unpadded = OnnxScorer(tiny_int8_dir, variant="int8", padding="none", score_cache=store)
        assert _bits(unpadded.score(pairs)) == _bits(alone)
    assert unpadded.stats.store_hits == 24


# ---------------------------------------------------------------- the file


def test_a_non_sqlite_file_is_refused_and_left_alone(tiny_model_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "random.bin"
    data = np.random.default_rng(0).bytes(4096)
    path.write_bytes(data)
    with pytest.raises(ScoreStoreError, match=rf"^score store {re.escape(str(path))}: is not a score store \(not an SQLite"):
        ScoreStore(path)
    scorer = OnnxScorer(tiny_model_dir, score_cache=path)
    with pytest.raises(ClaimVerificationError, match=re.escape(str(path))):
        scorer.score(_pairs(1))
    assert path.read_bytes() == data and not list(tmp_path.glob("random.bin-*"))


def test_a_foreign_sqlite_file_and_another_version_are_refused(tmp_path: Path) -> None:
    foreign = tmp_path / "app.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    before = foreign.read_bytes()
    with pytest.raises(ScoreStoreError, match=r"is an SQLite database but not a score store \(tables: users\)"):
        ScoreStore(foreign)
    assert foreign.read_bytes() == before  # not even switched to WAL

    newer = tmp_path / "newer.sqlite"
    ScoreStore(newer).close()
    with sqlite3.connect(newer) as conn:
        conn.execute("UPDATE store_format SET value = '99' WHERE name = 'version'")
    with pytest.raises(ScoreStoreError, match=r"has format version '99'; this verifier reads version 1"):
        ScoreStore(newer)

    with pytest.raises(ScoreStoreError, match="is a directory"):
        ScoreStore(tmp_path)
    with pytest.raises(ScoreStoreError, match="does not exist"):
        ScoreStore(tmp_path / "missing" / "scores.sqlite")
    # Regression (adversarial run): a FIFO hung the open forever; /dev/null gave "cannot rollback" and left
    # /dev/null-journal behind. Neither is a store: refused before SQLite touches it.
    fifo = tmp_path / "fifo.sqlite"
    os.mkfifo(fifo)
    for path in (fifo, Path(os.devnull)):
        with pytest.raises(ScoreStoreError, match="is not a regular file"):
            ScoreStore(path)
    assert not Path(os.devnull + "-journal").exists()


def test_a_row_that_fails_its_checksum_is_a_miss_and_is_rewritten(
    tiny_model_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = tmp_path / "scores.sqlite"
    pairs = _pairs(5)
    expected = OnnxScorer(tiny_model_dir, score_cache=store).score(pairs)
    with sqlite3.connect(store) as conn:  # flip the logits of one row, leave its checksum
        key, blob = conn.execute("SELECT key, logits FROM scores LIMIT 1").fetchone()
        conn.execute("UPDATE scores SET logits = ? WHERE key = ?", (bytes([blob[0] ^ 1]) + blob[1:], key))
    with caplog.at_level(logging.WARNING, logger="verifier.engine"):
        scorer = OnnxScorer(tiny_model_dir, score_cache=store)
        assert _bits(scorer.score(pairs)) == _bits(expected)
    assert "1 rows failed their MAC" in caplog.text
    assert (scorer.stats.store_hits, scorer.stats.store_misses, scorer.stats.store_rejected) == (4, 1, 1)
    again = OnnxScorer(tiny_model_dir, score_cache=store)
    again.score(pairs)
    assert (again.stats.store_hits, again.stats.store_rejected) == (5, 0)


@pytest.mark.parametrize(
    "damage",
    [
        "UPDATE scores SET checksum = 100000000000 WHERE seq = 1",  # bytes(100000000000) would allocate 100 GB
        "UPDATE scores SET logits = 'abcdefghijkl' WHERE seq = 2",  # text, not a blob
        "UPDATE scores SET logits = 1.5 WHERE seq = 2",
    ],
)
def test_a_row_of_the_wrong_sqlite_type_is_a_miss(tiny_model_dir: Path, tmp_path: Path, damage: str) -> None:
    """Regression (adversarial run): such rows failed the whole run (TypeError, MemoryError) instead of
    being rescored like any row that fails its checksum."""
    store = tmp_path / "scores.sqlite"
    pairs = _pairs(5)
    expected = OnnxScorer(tiny_model_dir, score_cache=store).score(pairs)
    with sqlite3.connect(store) as conn:
        assert conn.execute(damage).rowcount == 1
    scorer = OnnxScorer(tiny_model_dir, score_cache=store)
    assert _bits(scorer.score(pairs)) == _bits(expected)
    assert (scorer.stats.store_hits, scorer.stats.store_misses, scorer.stats.store_rejected) == (4, 1, 1)


def test_a_store_whose_sequence_is_exhausted_still_scores(
    tiny_model_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A seq edited to 2**63 - 1 leaves no next number: inserts fail and are logged; the scores are the same."""
    store = tmp_path / "scores.sqlite"
    expected = OnnxScorer(tiny_model_dir, score_cache=store).score(_pairs(3))
    with sqlite3.connect(store) as conn:
        conn.execute("UPDATE scores SET seq = 9223372036854775807 WHERE seq = (SELECT max(seq) FROM scores)")
    with caplog.at_level(logging.WARNING, logger="verifier.engine"):
        scorer = OnnxScorer(tiny_model_dir, score_cache=store)
        more = _pairs(6)
        assert _bits(scorer.score(more)[:3]) == _bits(expected)
    assert "insert failed (Python int too large to convert to SQLite INTEGER)" in caplog.text
    assert scorer.stats.store_errors == 1 and scorer.stats.store_hits == 3


def test_the_row_bound_is_kept_and_recently_used_rows_stay(tmp_path: Path) -> None:
    store = ScoreStore(tmp_path / "bounded.sqlite", max_rows=10)
    logits = np.arange(30, dtype=np.float32).reshape(10, 3)
    store.put([_key(n) for n in range(10)], logits)

    def use_key_0() -> None:  # what the engine does on a hit: renew a row found in the older half of the window
        found, values, _, stale, _ = store.get([_key(0)])
        assert found.all() and values[0].tolist() == [0.0, 1.0, 2.0]
        store.put([], np.zeros((0, 3), dtype=np.float32), renew=[_key(0)] if stale else [])

    use_key_0()
    for start in range(10, 40, 5):  # key 0 is used between the inserts, so it stays
        store.put([_key(n) for n in range(start, start + 5)], logits[:5])
        assert store.rows() <= 10
        use_key_0()
    found = store.get([_key(n) for n in range(1, 10)]).found
    assert not found.any()  # the untouched early rows were evicted, the newest kept
    assert store.get([_key(n) for n in range(35, 40)])[0].all() and store.rows() <= 10


def test_the_engine_respects_the_bound(tiny_model_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "scores.sqlite"
    scorer = OnnxScorer(tiny_model_dir, score_cache=path, score_cache_max_rows=7)
    for seed in range(3):
        scorer.score(_pairs(5, seed))
    assert ScoreStore(path).rows() == 7
    verifier = ClaimVerifier.from_model_dir(tiny_model_dir, runtime=RuntimeOptions(score_cache=path, score_cache_max_rows=3))
    verifier.verify_many_sync(_requests()[:3])
    assert ScoreStore(path).rows() <= 3


_WRITER = textwrap.dedent(
    """
    import hashlib, sys
    import numpy as np
    from verifier.engine.score_store import ScoreStore
    store = ScoreStore(sys.argv[1], busy_timeout_s=30)
    offset = int(sys.argv[2])
    for start in range(0, 400, 10):  # 40 small write transactions, half the keys shared with the other writer
        keys = [hashlib.sha256(str(n).encode()).digest() for n in range(offset + start, offset + start + 10)]
        values = np.array([[n, n + 0.5, -n] for n in range(offset + start, offset + start + 10)], dtype=np.float32)
        found, got, _, _, _ = store.get(keys)
        assert np.array_equal(got[found], values[found]), "a wrong score was read"
        store.put([k for k, f in zip(keys, found) if not f], values[~found])
    print(store.rows())
    """
)


def test_two_processes_writing_the_same_store(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(path), str(offset)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for offset in (0, 200)
    ]
    for writer in writers:
        out, err = writer.communicate(timeout=240)
        assert writer.returncode == 0, err
    store = ScoreStore(path)
    keys = [_key(n) for n in range(600)]
    found, values, _, _, _ = store.get(keys)
    assert found.all() and store.rows() == 600
    expected = np.array([[n, n + 0.5, -n] for n in range(600)], dtype=np.float32)
    assert _bits(values) == _bits(expected)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert dict(conn.execute("SELECT name, value FROM store_format")) == {"magic": FORMAT_MAGIC, "version": "1"}


# ---------------------------------------------------------------- the command line, the server's metrics, Ray workers


@pytest.mark.parametrize("option", ["-o", "--row-map"])
def test_cli_refuses_a_store_that_is_also_an_output(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    """Regression (adversarial run): ``-o X --score-cache X`` replaced a 60-row store with the results file."""
    store = tmp_path / "scores.sqlite"
    assert cli.main(["verify", str(CLAIMS), "--model-dir", str(tiny_model_dir), "-q", "-o", str(tmp_path / "a.jsonl"),
                     "--score-cache", str(store)]) == 0
    before = store.read_bytes()
    extra = ["-o", str(tmp_path / "b.jsonl")] if option == "--row-map" else []
    code = cli.main(["verify", str(CLAIMS), "--model-dir", str(tiny_model_dir), option, str(store), *extra,
                     "--score-cache", str(tmp_path / "." / "scores.sqlite")])
    assert code == 2
    err = capsys.readouterr().err
    assert f"error: --score-cache {tmp_path / '.' / 'scores.sqlite'} is also {option}; the store needs a file of its own" in err
    assert store.read_bytes() == before and not (tmp_path / "b.jsonl").exists()
    assert cli.main(["verify", str(store), "--model-dir", str(tiny_model_dir), "--score-cache", str(store)]) == 2
    assert "is also INPUT" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["-o", "--row-map"])
@pytest.mark.parametrize("target", [".key", "-wal", "-shm", "-journal"])
def test_cli_refuses_an_output_that_is_the_stores_key_or_side_file(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, target: str
) -> None:
    """Regression (adversarial run): ``-o``/``--row-map STORE.key`` replaced the store's secret key with the
    results (exit 0; the next run found every row failing its MAC), and ``-o STORE-wal``/``-shm`` exited 0
    with the results gone: SQLite deletes those files when the store closes."""
    store = tmp_path / "scores.sqlite"
    assert cli.main(["verify", str(CLAIMS), "--model-dir", str(tiny_model_dir), "-q", "-o", str(tmp_path / "a.jsonl"),
                     "--score-cache", str(store)]) == 0
    capsys.readouterr()
    key = tmp_path / "scores.sqlite.key"
    saved = key.read_bytes()
    own = tmp_path / f"scores.sqlite{target}"
    extra = ["-o", str(tmp_path / "b.jsonl")] if option == "--row-map" else []
    code = cli.main(["verify", str(CLAIMS), "--model-dir", str(tiny_model_dir), "-q", option, str(own), *extra,
                     "--score-cache", str(store)])
    err = capsys.readouterr().err
    assert code == 2, err
    why = ("it is the store's key (the default of --score-cache-key)" if target == ".key"
           else f"it is the store's SQLite {target} file, which SQLite deletes when the store closes")
    assert err.startswith(f"error: {option} {own}: {why}"), err
    assert key.read_bytes() == saved and not (tmp_path / "b.jsonl").exists()
    assert target == ".key" or not own.exists()
    # a file merely beside the store is an ordinary output
    assert cli.main(["verify", str(CLAIMS), "--model-dir", str(tiny_model_dir), "-q", "-o", str(key.with_suffix(".out")),
                     "--score-cache", str(store)]) == 0


def test_cli_ray_resume_refuses_an_output_that_is_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Regression (adversarial read of ray_run): ``--engine ray --resume`` checked -o against the store but not
    against ``--score-cache-key``, so the results would have been appended to the key (refused before Ray starts)."""
    key = tmp_path / "k.key"
    key.write_bytes(b"k" * 32)
    code = cli.main(["verify", str(CLAIMS), "--engine", "ray", "--resume", "-o", str(key),
                     "--score-cache", str(tmp_path / "s.sqlite"), "--score-cache-key", str(key)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"error: --score-cache-key {key} is also -o; the key needs a file of its own" in err
    assert key.read_bytes() == b"k" * 32


def test_cli_verify_leaves_a_final_store_file(tiny_model_dir: Path, tmp_path: Path) -> None:
    """Regression (CI, stop 39): the store's connection outlived ``verify``, so a later garbage collection
    checkpointed its WAL and rewrote the file after the command had returned."""
    store = tmp_path / "scores.sqlite"
    assert cli.main(["verify", str(CLAIMS), "--model-dir", str(tiny_model_dir), "-q", "-o", str(tmp_path / "a.jsonl"),
                     "--score-cache", str(store)]) == 0
    # SQLite removes the -wal file when the last connection closes (after checkpointing it)
    assert not Path(f"{store}-wal").exists()
    with sqlite3.connect(f"file:{store}?mode=ro&immutable=1", uri=True) as conn:  # the main file alone, no WAL
        rows = conn.execute("SELECT count(*) FROM scores").fetchone()[0]
    assert rows > 0


def test_close_releases_the_store_and_a_later_call_reopens_it(tiny_model_dir: Path, tmp_path: Path) -> None:
    store = tmp_path / "scores.sqlite"
    runtime = RuntimeOptions(model_dir=tiny_model_dir, score_cache=store)
    requests = _requests()
    with ClaimVerifier.from_model_dir(tiny_model_dir, runtime=runtime) as verifier:
        first = verifier.verify_many_sync(requests)
        misses = verifier.stats["store_misses"]
    assert misses > 0 and not Path(f"{store}-wal").exists()
    verifier.close()  # idempotent
    again = verifier.verify_many_sync(requests)  # reopens: every pair is a hit now
    assert [r.model_dump() for r in again] == [r.model_dump() for r in first]
    assert verifier.stats["store_misses"] == misses and verifier.stats["store_hits"] >= misses
    verifier.close()
    assert not Path(f"{store}-wal").exists()


def test_close_leaves_an_injected_scorer_open(tiny_model_dir: Path, tmp_path: Path) -> None:
    store = tmp_path / "scores.sqlite"
    engine = OnnxScorer(tiny_model_dir, score_cache=store)
    verifier = ClaimVerifier(scorer=engine)
    verifier.verify_many_sync(_requests()[:1])
    verifier.close()
    assert Path(f"{store}-wal").exists()  # the engine is its owner's: still open
    engine.close()
    assert not Path(f"{store}-wal").exists()


def test_cli_verify_twice_over_a_store_all_hits_same_bytes(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "scores.sqlite"
    outputs = []
    for name, extra in (("plain", []), ("cold", ["--score-cache", str(store)]), ("warm", ["--score-cache", str(store)])):
        target = tmp_path / f"{name}.jsonl"
        code = cli.main(["verify", str(CLAIMS), "--model-dir", str(tiny_model_dir), "-o", str(target), *extra])
        err = capsys.readouterr().err
        assert code == 0, err
        outputs.append((target.read_bytes(), err))
    (plain, _), (cold, cold_err), (warm, warm_err) = outputs
    assert plain == cold == warm

    def counter(name: str, err: str) -> int:
        return int(re.search(rf"^store {name}\s+(\d+)$", err, re.M).group(1))  # type: ignore[union-attr]

    # a cold run hits only what it scored itself in an earlier round; the warm run runs nothing
    assert counter("misses", cold_err) > 0 and counter("misses", warm_err) == 0
    assert counter("hits", warm_err) == counter("hits", cold_err) + counter("misses", cold_err)
    assert f"score store: {store} (the model ran only the store misses)" in warm_err
    # the warm run ran nothing: its summary does not call the pairs it asked for "scored" (regression)
    assert re.search(r"^pairs asked\s+[1-9]\d*$", warm_err, re.M) and re.search(r"^scorer calls\s+[1-9]", warm_err, re.M)
    assert "pairs scored" not in warm_err and "model calls" not in warm_err


def test_cli_int8_store_is_bypassed_with_batched_padding_and_reused_with_none(
    tiny_int8_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """verify --variant int8: with the default padded batches the store is bypassed, and the summary says
    the model ran every pair (no store counters); the fix the message names, ``verify --padding none``,
    makes the store usable: a second run is all hits with the same bytes."""
    store = tmp_path / "scores.sqlite"
    base = ["verify", str(CLAIMS), "--model-dir", str(tiny_int8_dir), "--variant", "int8", "--score-cache", str(store)]
    code = cli.main([*base, "-o", str(tmp_path / "batched.jsonl")])
    err = capsys.readouterr().err
    assert code == 0, err
    assert 'reusing them needs padding="none" (verify or serve --padding none)' in err
    assert "(the model ran every pair)" in err and "store misses" not in err and "only the store misses" not in err
    assert re.search(r"^pairs scored\s+[1-9]\d*$", err, re.M) and "pairs asked" not in err
    runs = []
    for name in ("cold", "warm"):
        code = cli.main([*base, "--padding", "none", "-o", str(tmp_path / f"{name}.jsonl")])
        err = capsys.readouterr().err
        assert code == 0, err
        assert "bypassed" not in err
        runs.append(((tmp_path / f"{name}.jsonl").read_bytes(), err))
    (cold, cold_err), (warm, warm_err) = runs
    assert cold == warm
    assert re.search(r"^store misses\s+0$", warm_err, re.M) and not re.search(r"^store misses\s+0$", cold_err, re.M)


def test_server_metrics_count_hits_and_misses(tiny_model_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("prometheus_client")
    from verifier.serve.metrics import Metrics

    metrics = Metrics()
    engine = OnnxScorer(tiny_model_dir, score_cache=tmp_path / "scores.sqlite")
    metrics.watch_score_store(engine)
    engine.score(_pairs(3))
    engine.score(_pairs(4))
    text = metrics.render().decode()
    assert "claim_verifier_score_store_hits_total 3.0" in text
    assert "claim_verifier_score_store_misses_total 4.0" in text
    plain = Metrics()
    plain.watch_score_store(OnnxScorer(tiny_model_dir))
    assert "score_store" not in plain.render().decode()


def test_ray_workers_use_the_store(tiny_model_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    import pyarrow as pa

    from verifier.distributed import VerifyBatch

    lines = CLAIMS.read_text(encoding="utf-8").splitlines()[:6]
    table = pa.Table.from_pylist([{"text": text, "line": number} for number, text in enumerate(lines, start=1)])
    store = tmp_path / "scores.sqlite"
    results = []
    for _ in range(2):  # two workers, one after the other, on one store
        worker = VerifyBatch(str(tiny_model_dir), runtime=RuntimeOptions(score_cache=store))
        results.append(worker(table).to_pylist())
        stats = worker.verifier.scorer.stats  # type: ignore[attr-defined]
    assert results[0] == results[1] and stats.store_misses == 0 and stats.store_hits > 0


def test_the_key_holds_the_tokenizers_version(tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bug (issue 49 item 6): the key omitted the tokenizers library's version, so a store written under one release
    answered under another, whose token ids for the same tokenizer.json may differ. Now that is a miss."""
    import tokenizers

    store = tmp_path / "scores.sqlite"
    pairs = _pairs(4)
    OnnxScorer(tiny_model_dir, score_cache=store).score(pairs)
    monkeypatch.setattr(tokenizers, "__version__", tokenizers.__version__ + ".other")
    other = OnnxScorer(tiny_model_dir, score_cache=store)
    other.score(pairs)
    assert (other.stats.store_hits, other.stats.store_misses) == (0, 4)
    monkeypatch.undo()
    again = OnnxScorer(tiny_model_dir, score_cache=store)
    again.score(pairs)
    assert (again.stats.store_hits, again.stats.store_misses) == (4, 0)
