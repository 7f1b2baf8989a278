"""The PRME end-to-end bench (bench/prme_e2e.py) runs and reports its fields; the engine's spinning default.

Speed is never asserted here (bench/README.md). The report tests use a
synthetic run record (no model). The end-to-end smoke run needs the PRME peer
virtualenv (``bash bench/setup_prme_peer.sh``) and the bench model
(``python -m bench build --span``) and skips, saying which, without them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.model import bench_model
from bench.prme_e2e import peer_problem, peer_python
from bench.prme_e2e_report import agreement, render_markdown, split_side, summary

ROOT = Path(__file__).resolve().parents[1]


def _reply(status: str, e: float) -> dict:
    return {
        "status": status, "groups": 2, "claim_sha256": "a", "evidence_sha256": "b", "configuration_sha256": "c",
        "evaluation_id": "d", "result_sha256": "e", "group_scores": [[["m1"], e, 0.3, 0.7 - e], [["m2"], 0.3, 0.3, 0.4]],
    }


class TestReport:
    def test_agreement_counts_statuses_digests_and_probability_differences(self) -> None:
        found = agreement([_reply("insufficient", 0.3), _reply("insufficient", 0.3)],
                          [_reply("insufficient", 0.3), _reply("supported", 0.35)])
        assert found["same_status"] == 1 and found["claims"] == 2
        assert found["same_digests"]["evidence_sha256"] == 2
        assert found["group_rows_compared"] == 4
        assert found["max_abs_prob_diff"] == pytest.approx(0.05)
        assert found["differing"] == [{"i": 1, "reference": "insufficient", "other": "supported"}]

    def test_summary_and_side_names(self) -> None:
        found = summary([1.0, 2.0, 3.0, 4.0])
        assert found["claims_per_s"] == pytest.approx(0.4) and found["p50_s"] == pytest.approx(2.5)
        assert split_side("ours-int8-spin") == ("ours-int8", "-spin")
        assert split_side("ours-bf16-eager") == ("ours-bf16", "-eager")
        assert split_side("prme-eager") == ("prme-eager", None)  # PRME has one schedule: not a side
        assert split_side("prme") == ("prme", None)

    def test_markdown_has_every_section_and_the_random_weights_warning(self) -> None:
        cold = {
            "process_start_to_first_result_s": 5.0, "import_s": 1.0, "first_result_s": 3.0, "rss_after_first": 2**30,
            "final": {"peak_rss": 2**31}, "load_before": 1.0, "load_after": 1.5, "versions": {"x": "1"},
        }
        sequential = {
            **summary([2.0, 2.0]), "engine": summary([1.9, 1.9]), "groups": [36, 36], "resolved_revision": None,
            "statuses": ["insufficient"] * 2,
        }
        run = {
            "name": "t", "claims": 2, "texts": "c", "threads": 2, "gap_ms": 100.0, "chunk": 2, "model_dir": "m",
            "prme_config": {"model": "h", "revision": "r"}, "loads": [("start", 1.0), ("end", 2.0)],
            "cold": {"prme": cold, "ours-fp32": cold},
            "sequential": {"prme": sequential, "ours-fp32": sequential}, "sequential_loads": [1.0, 2.0],
            "many": {k: {"claims_per_s": 1.0, "chunk_seconds": [2.0]} for k in ("prme", "ours-fp32")}, "many_loads": [1.0],
            "agreement": {"ours-fp32": agreement([_reply("insufficient", 0.3)] * 2, [_reply("insufficient", 0.3)] * 2)},
            "async": {"ours-fp32": {
                "sync": summary([1.0]), "async": summary([1.0]), "async_over_sync_total": 1.0, "paired_ratio_median": 1.0,
                "concurrent_s": [8.0], "sync_sequence_s": [8.0], "concurrent_over_sync": 1.0, "loads": [1.0],
            }},
            "lag": {"ours-fp32": {name: {"lag": {"ticks": 3, "p50_ms": 0.1, "p99_ms": 1.0, "max_ms": 2.0}} for name in ("idle", "sequential", "concurrent")}},
        }
        text = render_markdown(run)
        for heading in ("Random weights", "Cold start", "Sequential", "Many claims", "Agreement", "verify_sync", "Event-loop lag"):
            assert heading in text
        assert "claims/s ÷ PRME" in text and "2/2" in text


@pytest.mark.slow
def test_prme_e2e_runs_and_reports_its_fields(tmp_path: Path) -> None:
    problem = peer_problem(peer_python())
    if problem is not None:
        # a fixed reason: the probe's own error ("No module named ...") would read as a missing extra of .venv
        pytest.skip("the PRME peer venv (.venv-prme-bench) is absent or incomplete: bash bench/setup_prme_peer.sh")
    model = bench_model()
    if not model.span_ready() or not model.hf_ready():
        pytest.skip("bench model not built: run `.venv/bin/python -m bench build --span`")
    completed = subprocess.run(
        [sys.executable, "-m", "bench.prme_e2e", "--claims", "2", "--chunk", "2", "--lag-claims", "1",
         "--sides", "prme,ours-int8,ours-int8-eager", "--gap-ms", "0", "--name", "smoke", "--results-dir", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=1800, check=False,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    run = json.loads((tmp_path / "smoke.json").read_text(encoding="utf-8"))
    for key in ("cold", "sequential", "many", "agreement", "async", "lag", "host"):
        assert key in run
    assert (run["cold"]["ours-int8"]["schedule"], run["cold"]["ours-int8-eager"]["schedule"]) == ("staged", "eager")
    for side in ("prme", "ours-int8", "ours-int8-eager"):
        assert run["cold"][side]["process_start_to_first_result_s"] > 0
        assert run["sequential"][side]["claims_per_s"] > 0
    assert run["agreement"]["ours-int8"]["claims"] == 2
    assert "claims/s ÷ PRME" in (tmp_path / "smoke.md").read_text(encoding="utf-8")
