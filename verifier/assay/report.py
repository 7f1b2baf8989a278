"""The assay report: ``report.json``, ``report.md``, ``results.jsonl`` and, with matplotlib, PNG figures.

``report.json`` is :func:`assemble`'s object. Everything but ``run`` (model
calls, timings) is deterministic and digested into ``report_sha256``
(``sha256(canonical(report without report_sha256 and run))``, docs/audit.md's
canonical JSON), so a replay from recorded scores has the same digest as the
live run. matplotlib (the ``plot`` extra) is imported only when figures are
drawn; without it no figure is written and the report says so.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Optional, Sequence

from ..decision import audit
from ..messages import install_hint
from ..types import ClaimVerification
from .labels import LABELS
from .metrics import METRICS

__all__ = ["REPORT_VERSION", "assemble", "write_report", "markdown", "LABEL_MAPPING"]

REPORT_VERSION = 1

LABEL_MAPPING = {
    "supported": "supported (the positive class)",
    "partially_supported": "not supported (counts against precision when predicted supported)",
    "not_supported": "not supported",
    "refuted": "not supported; refuted for refutation precision",
    "contested": "not supported",
    "insufficient": "not supported",
    "incomplete": "not supported",
}


def assemble(body: dict[str, Any], *, input_name: str, input_sha256: str, scores: dict[str, Any],
             registration_sha256: Optional[str], run: dict[str, Any]) -> dict[str, Any]:
    """The report object: header, ``body`` of :func:`~verifier.assay.runner.run_assay`, digest, then ``run``."""
    report: dict[str, Any] = {
        "report_version": REPORT_VERSION,
        "input": {"name": input_name, "sha256": input_sha256},
        "registration_sha256": registration_sha256,
        "label_mapping": LABEL_MAPPING,
        "scores": scores,
        **body,
    }
    report["report_sha256"] = audit.sha256_hex(audit.canonical(report))
    report["run"] = run
    return report


def _atomic(path: Path, text: str) -> None:
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def _fmt(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _interval(metrics: dict[str, Any], name: str) -> str:
    bounds = metrics["intervals"][name]
    if bounds["low"] is None:
        return "—"
    return f"[{bounds['low']:.3f}, {bounds['high']:.3f}]"


def _metrics_table(metrics: dict[str, Any]) -> list[str]:
    lines = ["| metric | value | 95 % interval |", "|---|---|---|"]
    for name in METRICS:
        lines.append(f"| {name} | {_fmt(metrics[name])} | {_interval(metrics, name)} |")
    lines.append(f"| unsafe supports | {len(metrics['unsafe_supports'])} | |")
    lines.append(f"| TP / FP / FN / TN | {metrics['tp']} / {metrics['fp']} / {metrics['fn']} / {metrics['tn']} | |")
    return lines


def markdown(report: dict[str, Any]) -> str:
    """The human-readable report."""
    overall = report["overall"]
    config = report["configuration"]
    lines = [
        "# Assay report",
        "",
        f"- input: `{report['input']['name']}` (sha256 `{report['input']['sha256']}`), {overall['claims']} claims",
        f"- model: `{config['model']}` at `{config['revision']}`"
        f" (resolved `{report['scores'].get('resolved_revision')}`)",
        f"- policies: {config['entailment_policy']} / {config['refutation_policy']}; thresholds "
        f"entailment {config['entailment_threshold']}, contradiction {config['contradiction_threshold']}",
        f"- configuration_sha256 `{report['configuration_sha256']}`; results_sha256 `{report['results_sha256']}`",
        f"- registration_sha256 `{report['registration_sha256']}`" if report["registration_sha256"] else "- not registered",
        f"- report_sha256 `{report['report_sha256']}`",
        "",
        "## Support (positive class: label `supported`; `partially_supported` counts as not supported)",
        "",
        *_metrics_table(overall),
        "",
        "Unsafe supports (predicted supported, labelled not supported): "
        + (", ".join(f"`{name}`" for name in overall["unsafe_supports"]) or "none"),
        "",
        "## Confusion matrix (rows: label, columns: predicted status)",
        "",
    ]
    statuses = list(next(iter(overall["confusion_matrix"].values()), {}).keys())
    lines.append("| label | " + " | ".join(statuses) + " |")
    lines.append("|---|" + "---|" * len(statuses))
    for label in LABELS:
        row = overall["confusion_matrix"].get(label)
        if row is not None:
            lines.append(f"| {label} | " + " | ".join(str(row[s]) for s in statuses) + " |")
    for category, metrics in report["categories"].items():
        lines += ["", f"## Category `{category}` ({metrics['claims']} claims)", "", *_metrics_table(metrics)]
    if report["gates"]:
        lines += ["", "## Gates", "", "| gate | actual | result |", "|---|---|---|"]
        for gate in report["gates"]:
            lines.append(f"| `{gate['gate']}` | {_fmt(gate['actual'])} | {'pass' if gate['passed'] else 'FAIL'} |")
        lines.append("")
        lines.append(f"**{'PASS' if report['gates_passed'] else 'FAIL'}**")
    sweep = report["sweep"]
    lines += ["", "## Threshold sweep", "", f"> {sweep['warning']}", ""]
    best = sweep["best"]
    targets = ", ".join(f"`{t}`" for t in sweep["targets"]) or "none"
    if best is None:
        lines.append(f"No operating point satisfies the targets ({targets}).")
    else:
        lines.append(
            f"Best under {targets} (maximising {sweep['optimize']}): {best['entailment_policy']} / "
            f"{best['refutation_policy']}, entailment {best['entailment_threshold']}, contradiction "
            f"{best['contradiction_threshold']}: precision {_fmt(best['precision'])}, recall {_fmt(best['recall'])}, "
            f"unsafe supports {best['unsafe_supports']}."
        )
    lines += [
        "",
        "| entailment policy | refutation policy | ent. | contr. | precision | recall | F1 | bal. acc. | false support | refutation prec. | unsafe |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in sweep["rows"]:
        lines.append(
            f"| {row['entailment_policy']} | {row['refutation_policy']} | {row['entailment_threshold']} | "
            f"{row['contradiction_threshold']} | " + " | ".join(_fmt(row[m]) for m in METRICS)
            + f" | {row['unsafe_supports']} |"
        )
    run = report["run"]
    lines += [
        "",
        "## Run",
        "",
        f"{run['model_calls']} model calls, {run['pairs_scored']} pairs scored, {run['pairs_replayed']} replayed, "
        f"{run['pairs_recorded']} recorded; {run['configurations']} configurations, {_fmt(run['claims_per_s'])} claims/s "
        f"(main configuration), {_fmt(run['elapsed_s'])} s in all.",
    ]
    if run.get("figures_note"):
        lines.append(run["figures_note"])
    return "\n".join(lines) + "\n"


def _figures(report: dict[str, Any], directory: Path) -> list[str]:
    """Draw PNG figures when matplotlib is installed; the file names written (empty without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    written = []
    figure, axis = plt.subplots(figsize=(6, 5))
    for row in report["sweep"]["rows"]:
        if row["precision"] is not None and row["recall"] is not None:
            axis.scatter(row["recall"], row["precision"], s=12, alpha=0.6)
    axis.set_xlabel("recall (support)")
    axis.set_ylabel("precision (support)")
    axis.set_title("Operating points of the sweep")
    figure.savefig(directory / "sweep.png", dpi=120)
    plt.close(figure)
    written.append("sweep.png")
    matrix = report["overall"]["confusion_matrix"]
    if matrix:
        labels = list(matrix)
        statuses = list(next(iter(matrix.values())))
        figure, axis = plt.subplots(figsize=(7, 4))
        axis.imshow([[matrix[label][s] for s in statuses] for label in labels], cmap="Blues")
        axis.set_xticks(range(len(statuses)), statuses, rotation=30)
        axis.set_yticks(range(len(labels)), labels)
        for i, label in enumerate(labels):
            for j, status in enumerate(statuses):
                axis.text(j, i, str(matrix[label][status]), ha="center", va="center")
        axis.set_title("Confusion matrix (label × predicted status)")
        figure.tight_layout()
        figure.savefig(directory / "confusion.png", dpi=120)
        plt.close(figure)
        written.append("confusion.png")
    return written


def write_report(report: dict[str, Any], results: Sequence[ClaimVerification], directory: Path) -> list[str]:
    """Write ``report.json``, ``report.md``, ``results.jsonl`` (main configuration) and figures; the names written."""
    directory.mkdir(parents=True, exist_ok=True)
    figures = _figures(report, directory)
    report["run"]["figures"] = figures
    if not figures:
        report["run"]["figures_note"] = "No figures: install the plot extra ({install_hint('plot')})."
    _atomic(directory / "results.jsonl", "".join(result.model_dump_json() + "\n" for result in results))
    _atomic(directory / "report.json", json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    _atomic(directory / "report.md", markdown(report))
    return ["report.json", "report.md", "results.jsonl", *figures]
