"""Figures, ratios, targets and the markdown table of a ``python -m bench compare`` run.

Every figure is derived from the run's own JSON (worker timings, token
profile, numpy ceiling), so a reader can recompute it:

* pairs/s, claims/s, real tokens/s = counts ÷ wall seconds (latency workloads:
  ÷ median seconds per claim);
* effective GFLOP/s = analytic FLOPs of the real tokens (:mod:`bench.flops`,
  minimal count) ÷ seconds; as a fraction of numpy's float32 matmul rate on the
  same machine and threads (the higher of the two measurements of the run);
* padding overhead = padded tokens ÷ real tokens of the backend's own batches;
* ratios are ONNX ÷ CrossEncoder for rates, CrossEncoder ÷ ONNX for latencies;
  ``figures["ratios_vs_peers"][peer][ours]`` holds the same ratios of each of
  our backends against every peer (:data:`bench.backends.PEER_KEYS`: the
  PyTorch CrossEncoder and the sentence-transformers ONNX CrossEncoder in
  float32 and its own dynamic int8), on (c), (e) and the latency workloads.

Workload (e) (realistic longer text) is reported like (c) when the run has it
(``throughput.e``, ``figures.backends[k].e``, ratio keys ``e_*``); runs without
it render as before.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

__all__ = ["TARGETS", "compute_figures", "render_markdown", "render_tune_markdown"]

#: The speed targets of bench/README.md ("Targets"; ratios on this machine, same run).
TARGETS: Mapping[str, float] = {
    "float32_pairs_ratio_c": 2.0,
    "float32_ceiling_fraction": 0.75,
    "int8_pairs_ratio_c": 4.0,
    "padding_overhead_c": 1.15,
    "import_seconds": 0.2,
}

_LABELS = {
    "torch": "CrossEncoder (PyTorch fp32)",
    "onnx": "OnnxScorer fp32",
    "onnx-optimized": "OnnxScorer optimized",
    "onnx-int8": "OnnxScorer int8",
    "span": "span-sliced fp32 (proposed export)",
    "span-int8": "span-sliced int8 (proposed export)",
    "st-onnx": "CrossEncoder ONNX (sentence-transformers fp32)",
    "st-onnx-int8": "CrossEncoder ONNX int8 (sentence-transformers)",
}
_ORDER = ("torch", "st-onnx", "st-onnx-int8", "onnx", "onnx-optimized", "onnx-int8", "span", "span-int8")
#: Peers (someone else's runtime); every other backend is ours.
_PEERS = ("torch", "st-onnx", "st-onnx-int8")
#: Throughput workloads.
_THROUGHPUT = ("c", "e")


def _mib(value: Optional[float]) -> Optional[float]:
    return None if value is None else value / 2**20


def _backend_figures(
    result: Mapping[str, Any],
    profile: Mapping[str, Any],
    ceiling: float,
    ort_ceiling: Optional[float] = None,
    key: Optional[str] = None,
) -> dict[str, Any]:
    cold = result.get("cold_start", {})
    if key is None:
        key = result["backend"] if not result.get("variant") else f"onnx-{result['variant']}"
        if str(result.get("variant", "")).startswith("span"):
            key = str(result["variant"])
    figures: dict[str, Any] = {
        "label": _LABELS.get(key, key),
        "import_seconds": cold.get("import_seconds"),
        "load_seconds": cold.get("load_seconds"),
        "first_pair_seconds": cold.get("first_pair_seconds"),
        "cold_start_seconds": cold.get("import_load_first_seconds"),
        "process_to_ready_seconds": cold.get("process_to_ready_seconds"),
        "rss_after_load_mib": _mib(result.get("rss", {}).get("after_load_bytes")),
        "peak_rss_mib": _mib(result.get("rss", {}).get("peak_bytes")),
        "load_before": result.get("load_before"),
        "load_after": result.get("load_after"),
        "interleave_load_seconds": result.get("interleave_load_seconds"),
        "latency": {},
    }
    for key, row in result.get("latency", {}).items():
        work = profile[key]
        p50 = row["p50"]
        gflops = work["flops_minimal"] / p50 / 1e9
        counters = row.get("counters", {})
        figures["latency"][key] = {
            "p50_ms": p50 * 1000,
            "p95_ms": row["p95"] * 1000,
            "claims_per_s": work["claims"] / p50,
            "pairs_per_s": work["pairs"] / p50,
            "tokens_per_s": work["real_tokens"] / p50,
            "gflops": gflops,
            "ceiling_fraction": gflops / ceiling,
            "padding_overhead": counters.get("padding_overhead"),
        }
    for work_key in _THROUGHPUT:
        throughput = result.get("throughput", {}).get(work_key)
        if not throughput or work_key not in profile:
            continue
        work = profile[work_key]
        seconds = throughput["median"]
        counters = throughput.get("counters", {})
        gflops = work["flops_minimal"] / seconds / 1e9
        run_seconds = counters.get("onnxruntime_run_seconds")
        samples = throughput.get("numpy_gflops_samples") or []
        concurrent = float(sorted(samples)[len(samples) // 2]) if samples else None
        loads = throughput.get("load_1m") or []
        figures[work_key] = {
            "numpy_concurrent_gflops": concurrent,
            "ceiling_fraction_concurrent": gflops / concurrent if concurrent else None,
            "load_1m_mean": sum(loads) / len(loads) if loads else None,
            "seconds": seconds,
            "stage_seconds": throughput["stage_seconds"][0],
            "claims_per_s": work["claims"] / seconds,
            "pairs_per_s": work["pairs"] / seconds,
            "tokens_per_s": work["real_tokens"] / seconds,
            "gflops": gflops,
            "gflops_implemented": work["flops_implemented"] / seconds / 1e9,
            "ceiling_fraction": gflops / ceiling,
            "ort_matmul_fraction": gflops / ort_ceiling if ort_ceiling else None,
            "onnxruntime_run_gflops": (work["flops_minimal"] / (run_seconds / len(throughput["seconds"])) / 1e9)
            if run_seconds
            else None,
            "onnxruntime_run_share": (run_seconds / sum(throughput["seconds"])) if run_seconds else None,
            "padding_overhead": counters.get("padding_overhead"),
            "batches": counters.get("batches"),
        }
    return figures


def _ratio_row(run: Mapping[str, Any], backends: Mapping[str, Any], key: str, peer: str) -> dict[str, Any]:
    """``key``'s figures as ratios against ``peer``'s: rates key ÷ peer, times peer ÷ key, RSS key ÷ peer.

    Keys: ``c_pairs_per_s`` / ``e_pairs_per_s`` (and the per-chunk ratios of
    each), ``<a|b|d>_p50_speedup`` / ``_p95_speedup``, ``cold_start_speedup``,
    ``peak_rss_ratio`` -- each only where both sides have the figure.
    """
    figures, theirs_figures = backends[key], backends[peer]
    row: dict[str, Any] = {}
    for work in _THROUGHPUT:
        if work in figures and work in theirs_figures:
            prefix = "c" if work == "c" else work
            row[f"{prefix}_pairs_per_s"] = figures[work]["pairs_per_s"] / theirs_figures[work]["pairs_per_s"]
            mine = run["backends"][key].get("throughput", {}).get(work, {}).get("chunk_seconds") or []
            theirs = run["backends"][peer].get("throughput", {}).get(work, {}).get("chunk_seconds") or []
            if mine and len(mine) == len(theirs):
                per_chunk = sorted(t / m for t, m in zip(theirs, mine))
                middle = len(per_chunk) // 2
                median = per_chunk[middle] if len(per_chunk) % 2 else (per_chunk[middle - 1] + per_chunk[middle]) / 2
                row[f"{prefix}_chunk_ratios"] = per_chunk
                row[f"{prefix}_chunk_ratio_median"] = median
    for work in ("a", "b", "d"):
        if work in figures["latency"] and work in theirs_figures["latency"]:
            row[f"{work}_p50_speedup"] = theirs_figures["latency"][work]["p50_ms"] / figures["latency"][work]["p50_ms"]
            row[f"{work}_p95_speedup"] = theirs_figures["latency"][work]["p95_ms"] / figures["latency"][work]["p95_ms"]
    if figures.get("cold_start_seconds") and theirs_figures.get("cold_start_seconds"):
        row["cold_start_speedup"] = theirs_figures["cold_start_seconds"] / figures["cold_start_seconds"]
    if figures.get("peak_rss_mib") and theirs_figures.get("peak_rss_mib"):
        row["peak_rss_ratio"] = figures["peak_rss_mib"] / theirs_figures["peak_rss_mib"]
    return row


def compute_figures(run: Mapping[str, Any]) -> dict[str, Any]:
    """Figures per backend, ratios against the CrossEncoder and against every peer, and the targets (:data:`TARGETS`)."""
    ceiling = max(run["numpy_before"]["ceiling_gflops"], run.get("numpy_after", {}).get("ceiling_gflops", 0.0))
    profile = run["workloads"]
    ort_samples = [
        value for value in (run["numpy_before"].get("onnxruntime_matmul_gflops"),
                            run.get("numpy_after", {}).get("onnxruntime_matmul_gflops")) if value
    ]
    ort_ceiling = max(ort_samples) if ort_samples else None
    backends = {
        key: _backend_figures(value, profile, ceiling, ort_ceiling, key=key) for key, value in run["backends"].items()
    }
    ratios: dict[str, Any] = {}
    if "torch" in backends:
        for key in backends:
            if key != "torch":
                ratios[key] = _ratio_row(run, backends, key, "torch")
    ratios_vs_peers: dict[str, Any] = {}
    for peer in _PEERS:
        if peer not in backends:
            continue
        ratios_vs_peers[peer] = {key: _ratio_row(run, backends, key, peer) for key in backends if key not in _PEERS}

    agreement = run.get("agreement", {})
    targets = []

    def target(name: str, goal: str, value: Optional[float], met: Optional[bool], note: str = "") -> None:
        targets.append({"name": name, "target": goal, "value": value, "met": met, "note": note})

    fp32 = ratios.get("onnx", {}).get("c_pairs_per_s")
    same = agreement.get("onnx", {})
    identical = same.get("identical_decisions") == same.get("claims") if same else None
    target(
        "float32 pairs/s vs CrossEncoder on (c), identical decisions",
        f">= {TARGETS['float32_pairs_ratio_c']:.1f}x",
        fp32,
        None if fp32 is None else bool(fp32 >= TARGETS["float32_pairs_ratio_c"] and identical),
        f"decisions identical on {same.get('identical_decisions')}/{same.get('claims')} claims" if same else "",
    )
    onnx_c = backends.get("onnx", {}).get("c", {})
    frac = onnx_c.get("ceiling_fraction_concurrent") or onnx_c.get("ceiling_fraction")
    target(
        "float32 effective GFLOP/s vs numpy matmul on (c)",
        f">= {TARGETS['float32_ceiling_fraction']:.0%}",
        frac,
        None if frac is None else bool(frac >= TARGETS["float32_ceiling_fraction"]),
        f"numpy sampled between chunks {_f(onnx_c.get('numpy_concurrent_gflops'), '.0f')} GFLOP/s; "
        f"vs the separate {ceiling:.0f} GFLOP/s measurement: {_f(onnx_c.get('ceiling_fraction'), '.0%')}",
    )
    int8 = ratios.get("onnx-int8", {}).get("c_pairs_per_s")
    target(
        "int8 pairs/s vs CrossEncoder on (c)",
        f">= {TARGETS['int8_pairs_ratio_c']:.1f}x",
        int8,
        None if int8 is None else bool(int8 >= TARGETS["int8_pairs_ratio_c"]),
    )
    padding = backends.get("onnx", {}).get("c", {}).get("padding_overhead")
    target(
        "padding overhead on (c)",
        f"<= {TARGETS['padding_overhead_c']:.2f}",
        padding,
        None if padding is None else bool(padding <= TARGETS["padding_overhead_c"]),
    )
    imported = run.get("import", {})
    seconds = imported.get("import_verifier_seconds")
    target(
        "import verifier (no torch)",
        f"< {TARGETS['import_seconds']:.1f} s",
        seconds,
        None if seconds is None else bool(seconds < TARGETS["import_seconds"] and not imported.get("torch_imported")),
        f"torch imported: {imported.get('torch_imported')}",
    )
    return {
        "ceiling_gflops": ceiling,
        "onnxruntime_matmul_gflops": ort_ceiling,
        "backends": backends,
        "ratios": ratios,
        "ratios_vs_peers": ratios_vs_peers,
        "targets": targets,
    }


def _f(value: Any, spec: str = ".2f", suffix: str = "") -> str:
    if value is None:
        return "–"
    try:
        return f"{value:{spec}}{suffix}"
    except (TypeError, ValueError):
        return str(value)


def _throughput_section(add: Any, figures: Mapping[str, Any], keys: list[str], work: str) -> None:
    """The throughput table of workload ``work`` (``c`` or ``e``), when some backend has it."""
    if not any(work in figures["backends"][k] for k in keys):
        return
    add(f"## Throughput, workload ({work})")
    add("")
    shown = [k for k in keys if work in figures["backends"][k]]
    add("| | " + " | ".join(figures["backends"][k]["label"] for k in shown) + " |")
    add("|---|" + "---:|" * len(shown))
    rows = (
        ("wall seconds", "seconds", ".1f"),
        ("claims/s", "claims_per_s", ".2f"),
        ("pairs/s", "pairs_per_s", ".1f"),
        ("real tokens/s", "tokens_per_s", ".0f"),
        ("effective GFLOP/s (minimal count)", "gflops", ".0f"),
        ("  … as % of numpy matmul (separate measurement)", "ceiling_fraction", ".0%"),
        ("  … as % of numpy matmul sampled between chunks", "ceiling_fraction_concurrent", ".0%"),
        ("numpy GFLOP/s sampled between chunks (median)", "numpy_concurrent_gflops", ".0f"),
        ("  … as % of onnxruntime's own MatMul (AVX-512) rate", "ort_matmul_fraction", ".0%"),
        (f"load average during ({work}) (mean of samples)", "load_1m_mean", ".2f"),
        ("GFLOP/s (implemented count)", "gflops_implemented", ".0f"),
        ("GFLOP/s inside onnxruntime run()", "onnxruntime_run_gflops", ".0f"),
        ("share of time in onnxruntime run()", "onnxruntime_run_share", ".1%"),
        ("padding overhead (padded ÷ real)", "padding_overhead", ".3f"),
        ("batches", "batches", "d"),
    )
    for title, field, spec in rows:
        add(f"| {title} | " + " | ".join(_f(figures["backends"][k][work].get(field), spec) for k in shown) + " |")
    if figures["ratios"]:
        add("| **pairs/s ÷ CrossEncoder** | " + " | ".join(
            "1.00x" if k == "torch" else _f(figures["ratios"].get(k, {}).get(f"{work}_pairs_per_s"), ".2f", "x") for k in shown
        ) + " |")
        add("| per-chunk ratios (min · median · max) | " + " | ".join(
            "–" if k == "torch" or not figures["ratios"].get(k, {}).get(f"{work}_chunk_ratios") else
            " · ".join(
                _f(v, ".2f", "x") for v in (
                    figures["ratios"][k][f"{work}_chunk_ratios"][0],
                    figures["ratios"][k][f"{work}_chunk_ratio_median"],
                    figures["ratios"][k][f"{work}_chunk_ratios"][-1],
                )
            )
            for k in shown
        ) + " |")
    add("")


def _peer_sections(add: Any, run: Mapping[str, Any], keys: list[str]) -> None:
    """One row per (our backend, peer): every figure of ours as a ratio against that peer."""
    figures = run["figures"]
    table = figures.get("ratios_vs_peers") or {}
    peers = [peer for peer in _PEERS if peer in table]
    ours = [key for key in keys if key not in _PEERS]
    if not peers or not ours:
        return
    add("## Our backends against every peer (same run, same pairs, same threads)")
    add("")
    add("Rates are ours ÷ peer's, latencies and cold start peer's ÷ ours (> 1: ours is faster); peak RSS is ours ÷ "
        "peer's (< 1: ours is smaller). Peers: " + "; ".join(
            f"{_LABELS.get(peer, peer)}"
            + (f" (`{run['backends'][peer].get('versions', {}).get('file')}`)"
               if run["backends"][peer].get("versions", {}).get("file") else "")
            for peer in peers) + ".")
    add("")
    add("| ours | against | (c) pairs/s | (e) pairs/s | (a) p50 | (b) p50 | (d) p50 | cold start | peak RSS |")
    add("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for key in ours:
        for peer in peers:
            row = table[peer].get(key, {})
            cells = [_f(row.get(name), ".2f", "x") for name in (
                "c_pairs_per_s", "e_pairs_per_s", "a_p50_speedup", "b_p50_speedup", "d_p50_speedup",
                "cold_start_speedup", "peak_rss_ratio")]
            add(f"| {_LABELS.get(key, key)} | {_LABELS.get(peer, peer)} | " + " | ".join(cells) + " |")
    add("")


def render_markdown(run: Mapping[str, Any]) -> str:
    """The markdown summary of a compare run (committed as bench/RESULTS.md for the final run)."""
    figures = run["figures"]
    host = run["host"]
    cpu = host.get("cpu", {})
    versions = host.get("versions", {})
    keys = [key for key in _ORDER if key in figures["backends"]]
    labels = [figures["backends"][key]["label"] for key in keys]
    profile = run["workloads"]
    lines: list[str] = []
    add = lines.append
    add(f"# Benchmark: {run['name']}")
    add("")
    add(
        f"- date: {host['date_utc']} ({host.get('date_local', '')}); total run {run.get('total_seconds', 0) / 60:.1f} min"
    )
    add(
        f"- CPU: {cpu.get('Model name', '?')} (family {cpu.get('CPU family', '?')}, model {cpu.get('Model', '?')}), "
        f"{cpu.get('CPU(s)', '?')} logical CPUs, {cpu.get('Hypervisor vendor', 'bare metal')} guest; SIMD: {cpu.get('simd', '?')}"
    )
    add(f"- threads: {run['settings']['threads']} (torch.set_num_threads / onnxruntime intra-op; inter-op 1)")
    quiet = run.get("quiet_check", {})
    add(
        f"- load average: {_f(quiet.get('load_1m'))} at start (quiet: {quiet.get('quiet')}), "
        f"{_f(run.get('load_average_end', [None])[0])} at end; per worker below"
    )
    add(
        "- versions: " + ", ".join(f"{k} {versions.get(k)}" for k in (
            "python", "numpy", "onnxruntime", "tokenizers", "torch", "transformers", "sentence-transformers", "optimum-onnx"))
    )
    git = host.get("git", {})
    add(f"- git: {git.get('commit', '?')[:12]}{' (dirty)' if git.get('dirty') else ''}")
    add(
        "- model: random-init DeBERTa-v3-base (exact config, real tokenizer), exported with `python -m export`; "
        "**speed figures only — its outputs mean nothing**"
    )
    blas = (run["numpy_before"].get("blas") or [{}])[0]
    add(
        f"- numpy float32 matmul ceiling: {figures['ceiling_gflops']:.0f} GFLOP/s "
        f"(before {run['numpy_before']['ceiling_gflops']:.0f}, after {run.get('numpy_after', {}).get('ceiling_gflops', 0):.0f}; "
        f"{blas.get('internal_api', '?')} {blas.get('version', '')} kernel {blas.get('architecture', '?')}, "
        f"{blas.get('num_threads', '?')} threads); onnxruntime's own float32 MatMul (MLAS, same shape "
        f"4096x768x3072, same threads): {_f(figures.get('onnxruntime_matmul_gflops'), '.0f')} GFLOP/s — a stricter ceiling "
        "where numpy's BLAS does not use AVX-512"
    )
    add("")
    add("## Workloads (same pairs for every backend; digest " + run["workload_digest"][:16] + ")")
    add("")
    add("| | claims | pairs | real tokens | mean tokens/pair | max | truncated | GFLOP (minimal) |")
    add("|---|---:|---:|---:|---:|---:|---:|---:|")
    for key in [k for k in ("a", "b", "c", "d", "e") if k in profile]:
        work = profile[key]
        mean = work["real_tokens"] / work["pairs"]
        top = max(s["max_tokens"] for s in work["stages"])
        truncated = sum(s["truncated"] for s in work["stages"])
        add(
            f"| ({key}) {work['title']} | {work['claims']} | {work['pairs']} | {work['real_tokens']} | {mean:.1f} | "
            f"{top} | {truncated} | {work['flops_minimal'] / 1e9:.0f} |"
        )
    add("")
    add(f"(c) paths: {profile['c']['paths']}; scored as the many-claims driver does: every singles in one call, "
        "then every needed pair in one call.")
    if "e" in profile:
        add("")
        add(f"(e) realistic longer text (encyclopedia-style passages of 1–3 sentences, one-sentence claims; own digest "
            f"{str(run.get('workload_digest_e', ''))[:16]}): paths {profile['e']['paths']}; scored like (c).")
    add("")
    for work_key in _THROUGHPUT:
        _throughput_section(add, figures, keys, work_key)
    add("## Latency per claim (staged scorer calls), p50 / p95")
    add("")
    add("| workload | " + " | ".join(labels) + " |")
    add("|---|" + "---:|" * len(keys))
    for work in ("a", "b", "d"):
        cells = []
        for key in keys:
            row = figures["backends"][key]["latency"].get(work)
            if not row:
                cells.append("–")
                continue
            speed = figures["ratios"].get(key, {}).get(f"{work}_p50_speedup")
            ratio = f" (**{speed:.2f}x**)" if speed else ""
            cells.append(f"{row['p50_ms']:.0f} / {row['p95_ms']:.0f} ms{ratio}")
        add(f"| ({work}) {profile[work]['pairs']} pairs | " + " | ".join(cells) + " |")
    for work, title in (("a", "(a) claims/s · pairs/s · GFLOP/s"), ("b", "(b) claims/s · pairs/s · GFLOP/s"), ("d", "(d) claims/s · tokens/s · GFLOP/s")):
        cells = []
        for key in keys:
            row = figures["backends"][key]["latency"].get(work)
            if not row:
                cells.append("–")
            elif work == "d":
                cells.append(f"{row['claims_per_s']:.2f} · {row['tokens_per_s']:.0f} · {row['gflops']:.0f}")
            else:
                cells.append(f"{row['claims_per_s']:.2f} · {row['pairs_per_s']:.0f} · {row['gflops']:.0f}")
        add(f"| {title} | " + " | ".join(cells) + " |")
    add("")
    _peer_sections(add, run, keys)
    add("## Cold start and memory (each backend in its own process)")
    add("")
    add("| | " + " | ".join(labels) + " |")
    add("|---|" + "---:|" * len(keys))
    for title, field, spec, suffix in (
        ("import (s)", "import_seconds", ".2f", ""),
        ("load (s)", "load_seconds", ".2f", ""),
        ("first pair (s)", "first_pair_seconds", ".2f", ""),
        ("import + load + first pair (s)", "cold_start_seconds", ".2f", ""),
        ("process start → ready (s)", "process_to_ready_seconds", ".2f", ""),
        ("RSS after load (MiB)", "rss_after_load_mib", ".0f", ""),
        ("peak RSS (MiB)", "peak_rss_mib", ".0f", ""),
        ("load in the shared timing process (s)", "interleave_load_seconds", ".2f", ""),
    ):
        add(f"| {title} | " + " | ".join(_f(figures["backends"][k].get(field), spec, suffix) for k in keys) + " |")
    add("| load average before → after | " + " | ".join(
        f"{_f((figures['backends'][k].get('load_before') or [None])[0])} → {_f((figures['backends'][k].get('load_after') or [None])[0])}"
        for k in keys) + " |")
    imported = run.get("import", {})
    add("")
    add(
        f"`import verifier`: {_f(imported.get('import_verifier_seconds'), '.3f')} s (median of {imported.get('runs')} fresh "
        f"interpreters), `import verifier.engine` +{_f(imported.get('import_verifier_engine_seconds'), '.3f')} s; "
        f"torch imported: {imported.get('torch_imported')}, transformers: {imported.get('transformers_imported')}."
    )
    schedules = run["backends"].get("onnx", {}).get("schedules")
    if schedules:
        add("")
        add("## Schedules: ClaimVerifier staged vs eager (OnnxScorer fp32, scripted decisions, real model work)")
        add("")
        add("| workload | schedule | p50 ms | p95 ms | pairs scored / claim | scorer calls / claim | status |")
        add("|---|---|---:|---:|---:|---:|---|")
        for name, row in schedules.items():
            work, schedule = name.split("/")
            add(
                f"| ({work}) | {schedule} | {row['p50'] * 1000:.0f} | {row['p95'] * 1000:.0f} | "
                f"{row['pairs_per_claim']:.0f} | {row['calls_per_claim']:.0f} | {row['status']} |"
            )
    if run.get("agreement"):
        add("")
        add(f"## Agreement on (c) against {run['agreement_reference']} (random weights: plumbing check, not quality)")
        add("")
        add("| | max abs Δprob | argmax agreement | flag flips at 0.8 | flag flips at p50 / p90 / p99 thresholds | identical decisions |")
        add("|---|---:|---:|---:|---:|---:|")
        for key, row in run["agreement"].items():
            flags = row["flags"]
            stress = " / ".join(
                str(flags[f"ent_p{q}"]["flag_flips"] + flags[f"con_p{q}"]["flag_flips"]) for q in (50, 90, 99)
            )
            add(
                f"| {_LABELS.get(key, key)} | {row['max_abs_prob_diff']:.2e} | {row['argmax_agreement']:.2%} | "
                f"{flags['config_0.8']['flag_flips']} | {stress} | {row['identical_decisions']}/{row['claims']} |"
            )
        statuses = next(iter(run["agreement"].values()))["reference_statuses"]
        add("")
        add(f"Replayed statuses on the reference's probabilities: {statuses} — a random model's probabilities sit near "
            "1/3 and never reach the 0.8 thresholds, so the decision comparison is weak; the flag flips at thresholds "
            "placed inside the observed distribution are the stricter test.")
    if run.get("agreement_e"):
        add("")
        add(f"## Agreement on (e) against {run['agreement_e_reference']} (random weights: plumbing check, not quality)")
        add("")
        add("| | max abs Δprob | mean abs Δprob | argmax agreement | flag flips at p50 / p90 / p99 thresholds | identical decisions |")
        add("|---|---:|---:|---:|---:|---:|")
        for key, row in run["agreement_e"].items():
            flags = row["flags"]
            stress = " / ".join(
                str(flags[f"ent_p{q}"]["flag_flips"] + flags[f"con_p{q}"]["flag_flips"]) for q in (50, 90, 99)
            )
            add(
                f"| {_LABELS.get(key, key)} | {row['max_abs_prob_diff']:.2e} | {row['mean_abs_prob_diff']:.2e} | "
                f"{row['argmax_agreement']:.2%} | {stress} | {row['identical_decisions']}/{row['claims']} |"
            )
    add("")
    add("## Targets")
    add("")
    add("| target | goal | measured | met |")
    add("|---|---|---:|---|")
    for row in figures["targets"]:
        value = row["value"]
        if value is None:
            text = "–"
        elif "GFLOP" in row["name"]:
            text = f"{value:.0%}"
        elif "import" in row["name"]:
            text = f"{value:.3f} s"
        elif "padding" in row["name"]:
            text = f"{value:.3f}"
        else:
            text = f"{value:.2f}x"
        met = "–" if row["met"] is None else ("yes" if row["met"] else "**no**")
        note = f" ({row['note']})" if row.get("note") else ""
        add(f"| {row['name']} | {row['target']} | {text}{note} | {met} |")
    add("")
    return "\n".join(lines)


def render_tune_markdown(run: Mapping[str, Any]) -> str:
    """The markdown summary of a tune run."""
    lines: list[str] = []
    add = lines.append
    host = run["host"]
    profile = run["subset_profile"]
    add(f"# Engine tuning: {run['name']}")
    add("")
    add(f"- date: {host['date_utc']}; load average at start {run['quiet_check'].get('load_1m'):.2f}, at end {run['load_average_end'][0]:.2f}")
    add(
        f"- subset of (c): {profile['c']['claims']} claims, {profile['c']['pairs']} pairs, {profile['c']['real_tokens']} real tokens; "
        f"(b): {profile['b']['pairs']} pairs"
    )
    add("")
    add("| setting | load s | subset s | pairs/s | padding | batches | onnxruntime share | (b) p50 ms |")
    add("|---|---:|---:|---:|---:|---:|---:|---:|")
    pairs = profile["c"]["pairs"]
    for row in run["tune"]["rows"]:
        counters = row["counters"]
        share = counters.get("onnxruntime_run_seconds", 0.0) / row["seconds"] if row["seconds"] else None
        setting = ", ".join(f"{k}={v}" for k, v in row["setting"].items())
        add(
            f"| {setting} | {row['load_seconds']:.2f} | {row['seconds']:.2f} | {pairs / row['seconds']:.1f} | "
            f"{counters.get('padding_overhead', 0):.3f} | {counters.get('batches')} | {_f(share, '.1%')} | {row['b_p50'] * 1000:.0f} |"
        )
    add("")
    add("| workload | schedule | p50 ms | p95 ms | pairs / claim | calls / claim | status |")
    add("|---|---|---:|---:|---:|---:|---|")
    for name, row in run["schedules"].items():
        work, schedule = name.split("/")
        add(
            f"| ({work}) | {schedule} | {row['p50'] * 1000:.0f} | {row['p95'] * 1000:.0f} | {row['pairs_per_claim']:.0f} | "
            f"{row['calls_per_claim']:.0f} | {row['status']} |"
        )
    add("")
    return "\n".join(lines)
