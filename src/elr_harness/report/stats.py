"""The statistics section: operation counts, lost writes by acks, guarantees."""

from __future__ import annotations

from typing import Any

from elr_harness.core.history import ACKS_LEVELS
from elr_harness.report.html import Safe, join, not_available, table, tag
from elr_harness.report.lost_writes import LostWrites
from elr_harness.report.report_inputs import ReportInputs, checker_stats, json_text

# --------------------------------------------------------------------------
# Stats
# --------------------------------------------------------------------------


#: Kinds of line whose invokes are matched by completions (the clients').
CLIENT_KINDS = ("send", "poll")


def _count(by_acks: Any, acks: str) -> int:
    n = by_acks.get(acks) if isinstance(by_acks, dict) else None
    return n if isinstance(n, int) else 0


def _op_counts_table(results: dict[str, Any] | None) -> Safe:
    """The checker's counts of lines by f, type and acks (results.json stats.ops)."""
    if results is None:
        return not_available("Operation counts", "the history was not checked "
                                                 "(no results.json).")
    ops = checker_stats(results).get("ops")
    ops = ops if isinstance(ops, dict) else {}
    rows = []
    for f in sorted(ops, key=str):
        types = ops[f] if isinstance(ops[f], dict) else {}
        levels = sorted({a for by_acks in types.values() if isinstance(by_acks, dict)
                         for a in by_acks}, key=str)
        for acks in levels:
            done = [_count(types.get(t), acks) for t in ("ok", "fail", "info")]
            # an invoke the history never completed (a client's; the nemesis's are not
            # matched here)
            unfinished = max(0, _count(types.get("invoke"), acks) - sum(done)) \
                if f in CLIENT_KINDS else 0
            rows.append([f, "" if acks == "-" else acks, *done, unfinished])
    if not rows:
        return not_available("Operation counts", "no operation in the history.")
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


#: results.json's stats key for the ISR's churn below min ISR (checker/results.py).
CHURN = "isr_churn_below_min_isr"


def _churn_table(churn: dict[str, Any]) -> Safe:
    """The checker's count of the ISR's changes while below min ISR, per partition."""
    rows = []
    for partition, entry in sorted(churn.items()):
        entry = entry if isinstance(entry, dict) else {}
        rows.append([partition, *(entry.get(k) for k in (
            "expansions", "shrinks", "seconds_below", "expansions_per_minute",
            "shrinks_per_minute"))])
    return table(["partition", "joined the ISR", "left the ISR", "seconds below min ISR",
                  "joined per minute", "left per minute"], rows)


def stats_section(inputs: ReportInputs) -> Safe:
    results = inputs.run.results
    fault_counts: dict[str, int] = {}
    for band in inputs.bands:
        fault_counts[band.kind] = fault_counts.get(band.kind, 0) + 1
    parts = [
        tag("h3", "Operations in the history (the checker's counts)"),
        _op_counts_table(results),
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
    churn = stats.get(CHURN)
    if isinstance(churn, dict) and churn:
        parts.append(tag("h3", "ISR changes while below min ISR (checker)"))
        parts.append(_churn_table(churn))
    other = {k: v for k, v in stats.items()
             if k not in ("loss_rates", "sends_ok", "ops", CHURN)}
    if other:
        parts.append(tag("h3", "Checker statistics"))
        parts.append(_kv_table(other))
    return join(parts)


