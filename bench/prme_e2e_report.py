"""The markdown report of :mod:`bench.prme_e2e` and the side names it shares with it.

Side keys: ``prme`` (PRME 0.15.0's own verifier), ``ours-fp32`` and ``ours-int8``
(this project's, float32 and the int8 variant), plus A/B sides of ours with
other onnxruntime session config entries, named by suffix
(:data:`VARIANT_SUFFIXES`: ``ours-fp32-spin`` turns onnxruntime's spinning
back on, ``-nospin`` off, ``-stopspin`` stops it after every run).
"""

from __future__ import annotations

import statistics
from typing import Any, Optional, Sequence

__all__ = ["SIDES", "NOSPIN", "EAGER", "VARIANT_SUFFIXES", "split_side", "percentile", "summary", "agreement", "render_markdown"]

#: Every worker key, in report order.
SIDES = ("prme", "ours-fp32", "ours-int8", "ours-bf16")
#: Suffix of an extra side of ours with onnxruntime's spinning off (``ours-fp32-nospin``):
#: ``session.intra_op.allow_spinning=0``, for an A/B of the spin setting in the same run.
NOSPIN = "-nospin"
#: Extra sides of ours with other onnxruntime session config entries, by suffix (A/B in one run).
VARIANT_SUFFIXES: dict[str, dict[str, str]] = {
    NOSPIN: {"session.intra_op.allow_spinning": "0"},
    "-stopspin": {"session.force_spinning_stop": "1"},
    "-spin": {"session.intra_op.allow_spinning": "1"},
}
#: Suffix of an extra side of ours on ``RuntimeOptions(schedule="eager")`` (``ours-bf16-eager``): singles
#: and every pair in one pass, against the default staged schedule in the same run.
EAGER = "-eager"


def split_side(key: str) -> tuple[str, Optional[str]]:
    """(base side, suffix) of a side key: ``ours-int8-nospin`` -> (``ours-int8``, ``-nospin``)."""
    for suffix in (*VARIANT_SUFFIXES, EAGER):
        if key.endswith(suffix) and key.removesuffix(suffix) in SIDES[1:]:
            return key.removesuffix(suffix), suffix
    return key, None


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated ``q``-th percentile (NaN when empty)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summary(seconds: Sequence[float]) -> dict[str, float]:
    return {
        "n": len(seconds),
        "total_s": float(sum(seconds)),
        "claims_per_s": len(seconds) / sum(seconds) if seconds and sum(seconds) > 0 else float("nan"),
        "p50_s": percentile(seconds, 50),
        "p95_s": percentile(seconds, 95),
        "mean_s": statistics.fmean(seconds) if seconds else float("nan"),
    }


def agreement(reference: list[dict[str, Any]], other: list[dict[str, Any]]) -> dict[str, Any]:
    """Statuses, digests and group probabilities of two sides on the same claims (sequential phase)."""
    same_status = sum(a["status"] == b["status"] for a, b in zip(reference, other))
    fields = ("claim_sha256", "evidence_sha256", "configuration_sha256", "evaluation_id", "result_sha256")
    same = {name: sum(a[name] == b[name] for a, b in zip(reference, other)) for name in fields}
    same_groups = sum(a["groups"] == b["groups"] for a, b in zip(reference, other))
    max_diff = 0.0
    compared = 0
    for a, b in zip(reference, other):
        rows = {tuple(refs): (e, c, n) for refs, e, c, n in b.get("group_scores", [])}
        for refs, e, c, n in a.get("group_scores", []):
            match = rows.get(tuple(refs))
            if match is None:
                continue
            compared += 1
            max_diff = max(max_diff, abs(e - match[0]), abs(c - match[1]), abs(n - match[2]))
    statuses: dict[str, int] = {}
    for item in reference:
        statuses[item["status"]] = statuses.get(item["status"], 0) + 1
    return {
        "claims": len(reference),
        "same_status": same_status,
        "same_groups": same_groups,
        "same_digests": same,
        "group_rows_compared": compared,
        "max_abs_prob_diff": max_diff,
        "reference_statuses": statuses,
        "differing": [
            {"i": index, "reference": a["status"], "other": b["status"]}
            for index, (a, b) in enumerate(zip(reference, other))
            if a["status"] != b["status"]
        ],
    }


def _f(value: Any, spec: str = ".2f", suffix: str = "") -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "–"
    return f"{value:{spec}}{suffix}"


def render_markdown(run: dict[str, Any]) -> str:
    """The run as markdown: cold start, sequential, many-claims, async and loop-lag tables, agreement."""
    lines: list[str] = []
    add = lines.append
    host = run.get("host", {})
    cpu = host.get("cpu", {})
    keys = list(run["cold"])
    label = {"prme": "PRME 0.15.0 (CrossEncoder, PyTorch fp32)", "ours-fp32": "ours fp32", "ours-int8": "ours int8",
             "ours-bf16": "ours bf16 (OpenVINO)"}
    for key in keys:
        base, suffix = split_side(key)
        if suffix is not None:
            settings = {"schedule": "eager"} if suffix == EAGER else VARIANT_SUFFIXES[suffix]
            label[key] = f"{label[base]} ({', '.join(f'{k}={v}' for k, v in settings.items())})"
    add(f"# PRME end to end: {run['name']}")
    add("")
    add("**Random weights: speed only. Statuses are compared for agreement, never as quality.**")
    add("")
    add(f"- date: {host.get('date_utc')}; run {run.get('minutes', 0):.1f} min")
    add(f"- machine: {cpu.get('Model name', '?')}, {host.get('logical_cpus')} logical CPUs; threads {run['threads']} per side")
    add("- load average (1 min): " + ", ".join(f"{where} {value:.2f}" for where, value in run.get("loads", [])))
    add(f"- claims: {run['claims']} x 8 passages, workload ({run['texts']}); gap between turns {run['gap_ms']:.0f} ms")
    add(f"- our export: `{run['model_dir']}`; PRME: `ClaimVerificationConfig(model={run['prme_config']['model']!r}, revision={run['prme_config']['revision']!r})`")
    if run.get("session_config"):
        add(f"- our onnxruntime session config: `{run['session_config']}`")
    versions = {key: run["cold"][key].get("versions", {}) for key in keys}
    add("- versions: " + "; ".join(f"{key}: " + ", ".join(f"{k} {v}" for k, v in versions[key].items() if k not in ("model", "revision")) for key in keys))
    add("")
    add("## Cold start and memory (each verifier in its own process)")
    add("")
    add("| | " + " | ".join(label[k] for k in keys) + " |")
    add("|---|" + "---:|" * len(keys))
    rows = [
        ("process start → first result (s)", lambda c: _f(c["process_start_to_first_result_s"])),
        ("  imports (s)", lambda c: _f(c["import_s"])),
        ("  first `await verify`, model load included (s)", lambda c: _f(c["first_result_s"])),
        ("RSS after the first result (MiB)", lambda c: _f(c["rss_after_first"] / 2**20, ".0f")),
        ("peak RSS, end of run (MiB)", lambda c: _f(c.get("final", {}).get("peak_rss", float("nan")) / 2**20, ".0f")),
        ("load average before → after start", lambda c: f"{c['load_before']:.2f} → {c['load_after']:.2f}"),
    ]
    for title, cell in rows:
        add(f"| {title} | " + " | ".join(cell(run["cold"][k]) for k in keys) + " |")
    if "sequential" in run:
        seq = run["sequential"]
        add("")
        add("## Sequential `await verify`, claim by claim (interleaved, order rotated)")
        add("")
        loads = run.get("sequential_loads", [])
        add(f"Load average during the phase: {min(loads):.2f}–{max(loads):.2f} (mean {statistics.fmean(loads):.2f})." if loads else "")
        add("")
        add("| | " + " | ".join(label[k] for k in keys) + " |")
        add("|---|" + "---:|" * len(keys))
        add("| claims/s | " + " | ".join(_f(seq[k]["claims_per_s"], ".3f") for k in keys) + " |")
        add("| p50 / p95 per claim (ms) | " + " | ".join(f"{seq[k]['p50_s'] * 1000:.0f} / {seq[k]['p95_s'] * 1000:.0f}" for k in keys) + " |")
        if "prme" in seq:
            add("| **claims/s ÷ PRME** | " + " | ".join(_f(seq[k]["claims_per_s"] / seq["prme"]["claims_per_s"], ".2f", "×") for k in keys) + " |")
            add("| p50 speed-up over PRME | " + " | ".join(_f(seq["prme"]["p50_s"] / seq[k]["p50_s"], ".2f", "×") for k in keys) + " |")
        add("| engine alone on the same pairs, p50 (ms) | " + " | ".join(f"{seq[k]['engine']['p50_s'] * 1000:.0f}" for k in keys) + " |")
        add("| end to end ÷ engine alone (total) | " + " | ".join(_f(seq[k]["total_s"] / seq[k]["engine"]["total_s"], ".3f", "×") for k in keys) + " |")
        if "prme" in seq:
            add("| engine-level speed-up over PRME's CrossEncoder (total) | " + " | ".join(_f(seq["prme"]["engine"]["total_s"] / seq[k]["engine"]["total_s"], ".2f", "×") for k in keys) + " |")
        groups = {k: sorted(set(seq[k]["groups"])) for k in keys}
        add("| groups scored per claim | " + " | ".join(", ".join(map(str, groups[k])) for k in keys) + " |")
        add("| resolved_revision | " + " | ".join(str(seq[k]["resolved_revision"]) for k in keys) + " |")
    if "many" in run:
        many = run["many"]
        add("")
        add(f"## Many claims: `await verify_many` (ours) vs a loop of `await verify` (PRME), chunks of {run['chunk']}")
        add("")
        loads = run.get("many_loads", [])
        add(f"Load average during the phase: {min(loads):.2f}–{max(loads):.2f}." if loads else "")
        add("")
        add("| | " + " | ".join(label[k] for k in keys) + " |")
        add("|---|" + "---:|" * len(keys))
        add("| claims/s | " + " | ".join(_f(many[k]["claims_per_s"], ".3f") for k in keys) + " |")
        if "prme" in many:
            add("| **claims/s ÷ PRME** | " + " | ".join(_f(many[k]["claims_per_s"] / many["prme"]["claims_per_s"], ".2f", "×") for k in keys) + " |")
        add("| chunk seconds | " + " | ".join(", ".join(f"{s:.1f}" for s in many[k]["chunk_seconds"]) for k in keys) + " |")
    if "agreement" in run:
        add("")
        add("## Agreement with PRME on the same weights (sequential phase; random weights: plumbing, not quality)")
        add("")
        add("| | same status | same groups scored | max abs Δprob (group rows) | same claim / evidence / configuration digests | same evaluation_id | same result_sha256 |")
        add("|---|---:|---:|---:|---:|---:|---:|")
        for key, found in run["agreement"].items():
            same = found["same_digests"]
            n = found["claims"]
            add(
                f"| {label[key]} | {found['same_status']}/{n} | {found['same_groups']}/{n} | {found['max_abs_prob_diff']:.2e} "
                f"({found['group_rows_compared']} rows) | {same['claim_sha256']} / {same['evidence_sha256']} / {same['configuration_sha256']} of {n} "
                f"| {same['evaluation_id']}/{n} | {same['result_sha256']}/{n} |"
            )
        ref = next(iter(run["agreement"].values()))["reference_statuses"]
        add("")
        add(f"PRME's statuses: {ref}.")
    if "async" in run:
        add("")
        add("## `await verify` vs `verify_sync` (ours; same worker, adjacent calls)")
        add("")
        add("| | one at a time: async ÷ sync (total) | paired median | p50 sync / async (ms) | 8 concurrent tasks ÷ 8 sequential `verify_sync` | load average |")
        add("|---|---:|---:|---:|---:|---:|")
        for key, found in run["async"].items():
            add(
                f"| {label[key]} | {found['async_over_sync_total']:.3f}× | {found['paired_ratio_median']:.3f}× "
                f"| {found['sync']['p50_s'] * 1000:.0f} / {found['async']['p50_s'] * 1000:.0f} "
                f"| {found['concurrent_over_sync']:.3f}× ({', '.join(f'{s:.1f}' for s in found['concurrent_s'])} vs {', '.join(f'{s:.1f}' for s in found['sync_sequence_s'])} s) "
                f"| {min(found['loads']):.2f}–{max(found['loads']):.2f} |"
            )
    if "lag" in run:
        add("")
        add("## Event-loop lag (a task asking to wake every 5 ms)")
        add("")
        add("| | idle loop: p50 / p99 / max (ms) | during sequential `await verify`: p50 / p99 / max (ms) | during 8 concurrent: p50 / p99 / max (ms) |")
        add("|---|---:|---:|---:|")
        for key, found in run["lag"].items():
            def cell(name: str) -> str:
                if name not in found:
                    return "–"
                lag = found[name]["lag"]
                return f"{lag['p50_ms']:.1f} / {lag['p99_ms']:.1f} / {lag['max_ms']:.1f} ({lag['ticks']} ticks)"

            add(f"| {label[key]} | {cell('idle')} | {cell('sequential')} | {cell('concurrent')} |")
    add("")
    return "\n".join(lines)


