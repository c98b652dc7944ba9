"""The Transactions section (contract v4), shown only for a run whose test.json has
transactions enabled: a run without them renders as it always has.

What was committed, aborted or unknown, and the transaction anomalies by
protocol, come from results.json (the checker's counts); the LSO plot draws
what the observer recorded (report/lso.py, report/lso_plot.py), and the
hanging transactions beside it are the checker's hanging-txn rows as it wrote
them. Nothing here decides an anomaly.
"""

from __future__ import annotations

from typing import Any

from elr_harness.core.anomalies import BY_NAME, HANGING_TXN, TXN_ANOMALIES
from elr_harness.core.history import PRE_KIP_890, PROTOCOLS
from elr_harness.report.html import Safe, image, join, not_available, table, tag
from elr_harness.report.lso import LsoTables, hanging_examples, named_ops, read_lso
from elr_harness.report.lso_plot import lso_plot, partition_name
from elr_harness.report.phases import workload_start_s
from elr_harness.report.report_inputs import ReportInputs, no_history_reason, seconds
from elr_harness.report.rundir import RunFiles

#: What a reader needs to tell a known protocol hole from a new bug.
PROTOCOL_NOTE = (
    f"{PRE_KIP_890}: the older transaction protocol (librdkafka, or a cluster below "
    "transaction.version 2), where KAFKA-17754 is a known hole: a delayed commit or abort "
    "can commit or abort a later transaction. kip-890: Kafka's transaction.version 2 with "
    "the Java client, which bumps the producer epoch on every transaction to close it.")


def transactions_enabled(test: dict[str, Any]) -> bool:
    """test.json's `transactions.enabled` (absent, or false: a run without them)."""
    txn = test.get("transactions")
    return isinstance(txn, dict) and txn.get("enabled") is True


def lso_of(run: RunFiles, tables_problem: str) -> LsoTables | None:
    """The LSO series of a run with transactions (None for a run without them, so
    its report reads nothing more than before)."""
    if not transactions_enabled(run.test):
        return None
    if tables_problem or run.history_path is None:
        return LsoTables(problem=tables_problem or "history.jsonl is missing.")
    topics = run.test.get("topics")
    return read_lso(run.history_path, list(topics) if isinstance(topics, dict) else [],
                    named_ops(hanging_examples(run.results)))


def _settings(test: dict[str, Any]) -> Safe:
    """One line of test.json's transactions block: what the run asked for."""
    txn = test["transactions"]
    shown = [("client", txn.get("client")), ("transaction.version",
                                             txn.get("transaction_version")),
             ("producers", txn.get("producers")),
             ("transaction timeout", _ms(txn.get("transaction_timeout_ms"))),
             ("abort check interval", _ms(txn.get("abort_check_interval_ms"))),
             ("hang margin", _ms(txn.get("hang_margin_ms")))]
    return tag("p", "test.json: " + "; ".join(f"{k} {v}" for k, v in shown if v is not None),
               class_="muted")


def _ms(value: Any) -> str | None:
    return f"{value} ms" if isinstance(value, int | float) else None


def _count(row: dict[str, Any], key: str) -> object:
    value = row.get(key)
    return value if isinstance(value, int) else "?"


def outcomes_table(results: dict[str, Any] | None) -> Safe:
    """results.json's `transactions`: per client, transaction version and protocol."""
    if results is None:
        return not_available("Transactions by client", "the history was not checked "
                                                       "(no results.json).")
    rows = results.get("transactions")
    if not isinstance(rows, list):
        return not_available("Transactions by client", "results.json has no `transactions` "
                                                       "(checked by an older harness?).")
    rows = [r for r in rows if isinstance(r, dict)]
    if not rows:
        return not_available("Transactions by client", "the history holds no transaction.")
    keys = ("committed", "aborted_on_purpose", "failed", "unknown")
    return table(["client", "transaction version", "protocol", "committed",
                  "aborted on purpose", "failed", "unknown"],
                 [[r.get("client", "?"), r.get("transaction_version", "?"),
                   r.get("protocol", "?"), *(_count(r, k) for k in keys)] for r in rows])


def anomalies_by_protocol(results: dict[str, Any] | None) -> Safe:
    """Each transaction anomaly the checker found, counted per protocol (`by_protocol`)."""
    if results is None:
        return not_available("Transaction anomalies", "the history was not checked "
                                                      "(no results.json).")
    anomalies = results.get("anomalies")
    anomalies = anomalies if isinstance(anomalies, dict) else {}
    found = [name for name, entry in sorted(anomalies.items()) if isinstance(entry, dict)
             and (name in TXN_ANOMALIES or isinstance(entry.get("by_protocol"), dict))]
    if not found:
        return tag("p", "The checker found no transaction anomaly.", class_="muted")
    rows = []
    for name in found:
        entry = anomalies[name]
        by = entry.get("by_protocol")
        by = by if isinstance(by, dict) else {}
        known = BY_NAME.get(name)
        rows.append([Safe(tag("a", name, href=f"#anomaly-{name}")),
                     *(by.get(p, "—") for p in PROTOCOLS), entry.get("count", "?"),
                     entry.get("bad", "?"), known.meaning if known else ""])
    return table(["anomaly", *PROTOCOLS, "total", "bad", "meaning"], rows)


def _summary_table(lso: LsoTables) -> Safe:
    """Per partition, what the plot shows in numbers: how far and how long the LSO
    sat below the high watermark, and where both stood at the last observation (a
    row still below it at the end is highlighted)."""
    rows, classes = [], []
    for key in sorted(lso.series):
        s = lso.series[key]
        end_gap = int(s.gap[-1])
        rows.append([partition_name(key), s.observations, int(s.gap.max()),
                     f"{s.seconds_below():.3f}", int(s.lso[-1]), int(s.hwm[-1]), end_gap])
        classes.append("unreached" if end_gap > 0 else None)
    return table(["partition", "observations", "largest gap", "time below HWM (s)",
                  "last LSO", "last HWM", "last gap"], rows, row_classes=classes)


def hanging_table(results: dict[str, Any] | None) -> Safe:
    """The checker's hanging-txn rows: partition, first offset that hangs, its
    transactional id (where a delivery report named it), how long it stayed."""
    if results is None:
        return not_available("Hanging transactions", "the history was not checked "
                                                     "(no results.json).")
    examples = hanging_examples(results)
    if not examples:
        return tag("p", "The checker found no hanging transaction (hanging-txn).",
                   class_="muted")
    entry = results["anomalies"][HANGING_TXN]
    rows = []
    for e in examples:
        lasted = e.get("lasted_ns")
        rows.append([partition_name((e.get("topic"), e.get("partition"))),
                     e.get("first_offset", e.get("offset")),
                     e.get("txn_id") or "unknown (no delivery report named it)",
                     f"{seconds(lasted)} s" if isinstance(lasted, int | float) else "?",
                     ", ".join(str(i) for i in e.get("ops") or [])])
    count = entry.get("count") if isinstance(entry, dict) else None
    more = ""
    if isinstance(count, int) and count > len(examples):
        more = tag("div", f"{count - len(examples)} more not listed (results.json keeps "
                          f"{len(examples)}).", class_="muted")
    return join([table(["partition", "first offset", "transactional id", "lasted",
                        "observations (ops)"], rows, class_="hanging"),
                 tag("p", join(["The checker's rows (results.json); its description and "
                                "the observations it names are under ",
                                tag("a", HANGING_TXN, href=f"#anomaly-{HANGING_TXN}"),
                                " in Anomalies."]), class_="muted"),
                 more])


def _lso_part(inputs: ReportInputs) -> Safe:
    lso = inputs.lso or LsoTables(problem="not read")
    cfg, tables = inputs.config, inputs.tables
    why = no_history_reason(inputs) or lso.problem
    examples = hanging_examples(inputs.run.results)
    uri = None if why else lso_plot(lso, examples, inputs.bands, tables.end_time_s,
                                    cfg.max_plot_points, cfg.max_fault_labels, cfg.plot_dpi,
                                    workload_start_s(inputs.run.test))
    names = ", ".join(partition_name(k) for k in sorted(lso.series))
    alt = f"LSO plot: {names}" if names else "LSO plot"
    parts = [
        tag("p", "Each data partition's last stable offset (solid) and high watermark "
                 "(dashed) as the observer read them, on the latency plot's clock with the "
                 "faults shaded; the space between them is filled, and the lower panel "
                 "draws that gap alone: records a read_committed consumer cannot read yet. "
                 "A gap that stays open after the transactions end is a transaction left "
                 "hanging; red marks where the checker found one.", class_="muted"),
        image(uri, alt, why or "the observer recorded no last stable offset."),
    ]
    if lso.series and not why:
        parts.append(_summary_table(lso))
    parts += [tag("h3", "Hanging transactions", id="hanging-txns"),
              hanging_table(inputs.run.results)]
    return join(parts)


def transactions_section(inputs: ReportInputs) -> Safe:
    results = inputs.run.results
    return join([
        _settings(inputs.run.test),
        tag("h3", "Transactions by client"),
        outcomes_table(results),
        tag("h3", "Transaction anomalies by protocol"),
        anomalies_by_protocol(results),
        tag("p", PROTOCOL_NOTE, class_="muted"),
        tag("h3", "Last stable offset against the high watermark"),
        _lso_part(inputs),
    ])
