"""The assay report: ``report.json``, ``report.md``, ``report-details.md``, ``results.jsonl`` and, with matplotlib, PNG figures.

``report.md`` puts first what a reader must know before any figure: the
model identity, whether it had random weights (``run.model``, written by
:func:`model_facts`), and the headline metrics and gates; the long tables
(every sweep row, every category) are in ``report-details.md``.

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

__all__ = ["REPORT_VERSION", "DETAILS_NAME", "REPORT_FILES", "assemble", "write_report", "markdown", "details_markdown",
           "model_facts", "LABEL_MAPPING"]

REPORT_VERSION = 1
#: The report's long tables (every sweep row, every category), beside ``report.md``.
DETAILS_NAME = "report-details.md"

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


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def model_facts(model_dir: Path) -> dict[str, Any]:
    """What the report says about the model directory: ``{"directory", "random_weights"}``.

    The assay command stores it as ``report["run"]["model"]`` (not digested,
    like the rest of ``run``) so that the report can say first whether the
    model had random weights; ``random_weights`` is ``None`` when the
    directory has no readable manifest.
    """
    from ..engine.identity import read_manifest_if_present
    from ..types import ClaimVerificationError

    try:
        manifest = read_manifest_if_present(Path(model_dir))
    except ClaimVerificationError:
        manifest = None
    return {
        "directory": str(Path(model_dir).resolve()),
        "random_weights": manifest.random_weights if manifest is not None else None,
    }


def _weights(report: dict[str, Any]) -> tuple[Optional[bool], str]:
    model = report["run"].get("model") or {}
    random = model.get("random_weights")
    where = f" (`{model['directory']}`)" if model.get("directory") else ""
    if random is True:
        return True, f"**RANDOM** — a seeded test model{where}: its scores, and every figure here, mean nothing"
    if random is False:
        return False, f"trained — the manifest{where} does not mark random weights"
    return None, "not recorded in this report (the caller did not state the model directory; see its manifest)"


def _revision(report: dict[str, Any]) -> str:
    config, scores = report["configuration"], report["scores"]
    resolved = scores.get("resolved_revision")
    if resolved is None:
        return f"`{config['revision']}` (no resolved commit recorded)"
    if resolved == config["revision"]:
        return f"`{config['revision']}` (the commit itself)"
    return f"`{config['revision']}`, resolved to commit `{resolved}`"


def _headline(report: dict[str, Any]) -> list[str]:
    overall = report["overall"]
    lines = [
        f"- support: precision {_fmt(overall['precision'])} {_interval(overall, 'precision')}, "
        f"recall {_fmt(overall['recall'])} {_interval(overall, 'recall')}, "
        f"{_plural(len(overall['unsafe_supports']), 'unsafe support')}",
        f"- refutation precision {_fmt(overall['refutation_precision'])}; false-support rate "
        f"{_fmt(overall['false_support_rate'])}; TP / FP / FN / TN {overall['tp']} / {overall['fp']} / "
        f"{overall['fn']} / {overall['tn']}",
    ]
    if report["gates"]:
        failed = [gate["gate"] for gate in report["gates"] if not gate["passed"]]
        verdict = "**PASS**" if not failed else f"**FAIL** ({', '.join(f'`{g}`' for g in failed)})"
        lines.append(f"- gates: {verdict}, {len(report['gates']) - len(failed)} of {len(report['gates'])} passed")
    else:
        lines.append("- gates: none registered")
    return lines


def markdown(report: dict[str, Any]) -> str:
    """The human-readable report: model identity, weights and headline metrics first; the long
    tables (every sweep row, every category) are in :func:`details_markdown` (``report-details.md``)."""
    overall = report["overall"]
    config = report["configuration"]
    random, weights = _weights(report)
    lines = ["# Assay report", ""]
    if random:
        lines += ["> **RANDOM WEIGHTS: this model is a seeded test model. Its scores, and every metric in this "
                  "report, mean nothing about accuracy (a plumbing check only).**", ""]
    lines += [
        f"- model: `{config['model']}` at revision {_revision(report)}",
        f"- weights: {weights}",
        f"- cohort: `{report['input']['name']}`, {_plural(overall['claims'], 'claim')} "
        f"(sha256 `{report['input']['sha256']}`)",
        *_headline(report),
        "",
        "## Support (positive class: label `supported`; `partially_supported` counts as not supported)",
        "",
        *_metrics_table(overall),
        "",
        "Unsafe supports (predicted supported, labelled not supported): "
        + (", ".join(f"`{name}`" for name in overall["unsafe_supports"]) or "none"),
    ]
    if report["gates"]:
        lines += ["", "## Gates", "", "| gate | actual | result |", "|---|---|---|"]
        for gate in report["gates"]:
            lines.append(f"| `{gate['gate']}` | {_fmt(gate['actual'])} | {'pass' if gate['passed'] else 'FAIL'} |")
    lines += ["", "## Confusion matrix (rows: label, columns: predicted status)", "", *_confusion(overall)]
    if report["categories"]:
        lines += ["", "## Categories", "", "| category | claims | precision | recall | unsafe supports |",
                  "|---|---|---|---|---|"]
        for category, metrics in report["categories"].items():
            lines.append(f"| `{category}` | {metrics['claims']} | {_fmt(metrics['precision'])} | "
                         f"{_fmt(metrics['recall'])} | {len(metrics['unsafe_supports'])} |")
    sweep = report["sweep"]
    lines += ["", "## Threshold sweep", "", f"> {sweep['warning']}", "", _best(sweep),
              "", f"All {_plural(len(sweep['rows']), 'operating point')} and the per-category tables: "
              f"[{DETAILS_NAME}]({DETAILS_NAME})."]
    lines += [
        "",
        "## Configuration and digests",
        "",
        f"- policies: {config['entailment_policy']} / {config['refutation_policy']}; thresholds "
        f"entailment {config['entailment_threshold']}, contradiction {config['contradiction_threshold']}",
        f"- configuration_sha256 `{report['configuration_sha256']}`; results_sha256 `{report['results_sha256']}`",
        f"- registration_sha256 `{report['registration_sha256']}`" if report["registration_sha256"] else "- not registered",
        f"- report_sha256 `{report['report_sha256']}`",
        *_run(report["run"]),
    ]
    return "\n".join(lines) + "\n"


def _confusion(overall: dict[str, Any]) -> list[str]:
    statuses = list(next(iter(overall["confusion_matrix"].values()), {}).keys())
    lines = ["| label | " + " | ".join(statuses) + " |", "|---|" + "---|" * len(statuses)]
    for label in LABELS:
        row = overall["confusion_matrix"].get(label)
        if row is not None:
            lines.append(f"| {label} | " + " | ".join(str(row[s]) for s in statuses) + " |")
    return lines


def _best(sweep: dict[str, Any]) -> str:
    best = sweep["best"]
    targets = ", ".join(f"`{t}`" for t in sweep["targets"]) or "none"
    if best is None:
        return f"No operating point satisfies the targets ({targets})."
    return (
        f"Best under {targets} (maximising {sweep['optimize']}): {best['entailment_policy']} / "
        f"{best['refutation_policy']}, entailment {best['entailment_threshold']}, contradiction "
        f"{best['contradiction_threshold']}: precision {_fmt(best['precision'])}, recall {_fmt(best['recall'])}, "
        f"unsafe supports {best['unsafe_supports']}."
    )


def _run(run: dict[str, Any]) -> list[str]:
    lines = [
        f"- run: {run['model_calls']} model calls, {run['pairs_scored']} pairs scored, {run['pairs_replayed']} "
        f"replayed, {run['pairs_recorded']} recorded; {run['configurations']} configurations, "
        f"{_fmt(run['claims_per_s'])} claims/s (main configuration), {_fmt(run['elapsed_s'])} s in all",
    ]
    if run.get("figures_note"):
        lines.append(f"- {run['figures_note']}")
    return lines


def details_markdown(report: dict[str, Any]) -> str:
    """The long tables of the report (``report-details.md``): every category's metrics and every sweep row."""
    sweep = report["sweep"]
    lines = ["# Assay report: details", "", f"The summary is [report.md](report.md) (report_sha256 "
             f"`{report['report_sha256']}`).", ""]
    for category, metrics in report["categories"].items():
        lines += [f"## Category `{category}` ({_plural(metrics['claims'], 'claim')})", "", *_metrics_table(metrics), ""]
    lines += [
        f"## Threshold sweep ({_plural(len(sweep['rows']), 'operating point')})", "", f"> {sweep['warning']}", "",
        "| entailment policy | refutation policy | ent. | contr. | precision | recall | F1 | bal. acc. | false support | refutation prec. | unsafe |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in sweep["rows"]:
        lines.append(
            f"| {row['entailment_policy']} | {row['refutation_policy']} | {row['entailment_threshold']} | "
            f"{row['contradiction_threshold']} | " + " | ".join(_fmt(row[m]) for m in METRICS)
            + f" | {row['unsafe_supports']} |"
        )
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


#: Every file :func:`write_report` may write into the report directory.
REPORT_FILES = ("report.json", "report.md", DETAILS_NAME, "results.jsonl", "sweep.png", "confusion.png")


def write_report(report: dict[str, Any], results: Sequence[ClaimVerification], directory: Path) -> list[str]:
    """Write ``report.json``, ``report.md`` (identity, weights and headline metrics first),
    ``report-details.md`` (the long tables), ``results.jsonl`` (main configuration) and figures; the names written."""
    directory.mkdir(parents=True, exist_ok=True)
    figures = _figures(report, directory)
    report["run"]["figures"] = figures
    if not figures:
        report["run"]["figures_note"] = f"No figures: install the plot extra ({install_hint('plot')})."
    _atomic(directory / "results.jsonl", "".join(result.model_dump_json() + "\n" for result in results))
    _atomic(directory / "report.json", json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    _atomic(directory / "report.md", markdown(report))
    _atomic(directory / DETAILS_NAME, details_markdown(report))
    return ["report.json", "report.md", DETAILS_NAME, "results.jsonl", *figures]
