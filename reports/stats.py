"""The statistics section: operation counts, lost writes by acks, guarantees."""

from __future__ import annotations

from typing import Any

from harness.core.history import ACKS_LEVELS
from reports.history_scan import HistoryScan
from reports.html import Safe, join, not_available, table, tag
from reports.lost_writes import LostWrites
from reports.report_inputs import ReportInputs, json_text

# --------------------------------------------------------------------------
# Stats
# --------------------------------------------------------------------------


def _op_counts_table(scan: HistoryScan) -> Safe:
    keys = sorted({(f, acks) for (f, _t, acks) in scan.op_counts} | set(scan.unfinished))
    if not keys:
        return not_available("Operation counts", "no operation in the history.")
    rows = []
    for f, acks in keys:
        rows.append([f, acks or "", scan.op_counts.get((f, "ok", acks), 0),
                     scan.op_counts.get((f, "fail", acks), 0),
                     scan.op_counts.get((f, "info", acks), 0), scan.unfinished.get((f, acks), 0)])
    return table(["f", "acks", "ok", "fail", "info", "invoked, never completed"], rows)


def _lost_table(lost: LostWrites) -> Safe:
    if not lost.checked:
        return not_available("Lost writes", "the history was not checked (no results.json).")
    rows = []
    for acks in ACKS_LEVELS:
        ok = lost.ok_by_acks.get(acks, 0)
        n = lost.counts_by_acks.get(acks, 0)
        rows.append([acks, ok, n, f"{n / ok:.4%}" if ok else "—"])
    per_partition = [[name, *(counts.get(a, 0) for a in ACKS_LEVELS)]
                     for name, counts in sorted(lost.by_partition.items())]
    skipped = ""
    if lost.incomplete:
        skipped = tag("div", "Final read incomplete (their missing sends are unseen, not "
                             "lost): " + ", ".join(lost.incomplete), class_="muted")
    return join([
        tag("p", "Every ok send the checker found absent from its partition's final log "
                 "(results.json; it keeps 20 examples of each anomaly).", class_="muted"),
        table(["acks", "ok sends", "lost", "loss rate"], rows),
        table(["partition", "lost acks=all", "lost acks=1", "lost acks=0"], per_partition),
        skipped,
    ])


def _kv_table(mapping: dict[str, Any]) -> Safe:
    return table(["", "value"], [[k, v if isinstance(v, str | int | float | bool) or v is None
                                  else json_text(v)] for k, v in mapping.items()])


def _guarantee_table(results: dict[str, Any]) -> Safe:
    guarantee = results.get("guarantee")
    if not isinstance(guarantee, dict) or not guarantee:
        return not_available("Fault budget", "results.json has no guarantee section.")
    rows = []
    for partition, entry in sorted(guarantee.items()):
        entry = entry if isinstance(entry, dict) else {"reason": entry}
        within = entry.get("within_budget")
        rows.append([partition, "within" if within is True else "beyond" if within is False
                     else "?", entry.get("page_cache_losses"), entry.get("budget"),
                     entry.get("acks_all_lost"), entry.get("reason")])
    return table(["partition", "fault budget", "page-cache losses", "budget", "acks=all lost",
                  "why"], rows)


def stats_section(inputs: ReportInputs) -> Safe:
    scan, results = inputs.scan, inputs.run.results
    fault_counts: dict[str, int] = {}
    for band in inputs.bands:
        fault_counts[band.kind] = fault_counts.get(band.kind, 0) + 1
    parts = [
        tag("h3", "Operations in the history"),
        _op_counts_table(scan),
        tag("h3", "Lost writes by acks (the checker's)"),
        _lost_table(inputs.lost),
        tag("h3", "Faults that took effect"),
        table(["fault", "count"], sorted(fault_counts.items())) if fault_counts
        else not_available("Fault counts", "no fault in the history."),
    ]
    if results is None:
        parts.append(not_available("Checker statistics", inputs.run.results_problem or ""))
        return join(parts)
    stats = results.get("stats") if isinstance(results.get("stats"), dict) else {}
    loss_rates = stats.get("loss_rates")
    sends_ok = stats.get("sends_ok")
    if isinstance(loss_rates, dict):
        parts.append(tag("h3", "Loss rates by acks (checker)"))
        parts.append(table(["acks", "ok sends", "loss rate"], [
            [acks, sends_ok.get(acks, "") if isinstance(sends_ok, dict) else "",
             f"{rate:.4%}" if isinstance(rate, int | float) else rate]
            for acks, rate in loss_rates.items()]))
    parts.append(tag("h3", "Fault budget per partition (KIP-966 guarantee)"))
    parts.append(_guarantee_table(results))
    other = {k: v for k, v in stats.items() if k not in ("loss_rates", "sends_ok")}
    if other:
        parts.append(tag("h3", "Checker statistics"))
        parts.append(_kv_table(other))
    return join(parts)


