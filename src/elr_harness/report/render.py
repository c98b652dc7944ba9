"""report.html: the banner, the plots and the page around the other sections.

The sections live beside it: anomalies with their evidence (report/evidence.py),
the KIP-966 states reached (report/coverage.py),
partitions, faults and the metadata log (report/timeline.py), statistics
(report/stats.py), and for a run with transactions only, transactions
(report/transactions.py); each reads ReportInputs (report/report_inputs.py). Every
section renders something for every run: a run never checked, a missing file
or an empty history gives a "not available" note saying why, never an exception.
What the history holds comes from the checker (results.json and its Parquet
tables, report/checked_tables.py); the report never reads history.jsonl.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from elr_harness.core.history import ACKS_LEVELS
from elr_harness.report import plots
from elr_harness.report.atomic import REPORT_GENERATED_BY, REPORT_GENERATOR
from elr_harness.report.checked_tables import CheckedTables
from elr_harness.report.coverage import coverage_section
from elr_harness.report.evidence import anomalies_section
from elr_harness.report.html import (
    NO_FAVICON,
    Safe,
    h,
    image,
    join,
    not_available,
    stylesheet,
    table,
    tag,
)
from elr_harness.report.phases import phases_bar, workload_start_s
from elr_harness.report.report_inputs import (
    ReportInputs,
    checker_stats,
    no_history_reason,
    parse_time,
)
from elr_harness.report.stats import stats_section
from elr_harness.report.timeline import faults_section, metadata_section, partitions_section
from elr_harness.report.transactions import transactions_enabled, transactions_section
from elr_harness.report.verdict import checked_line, verdict_of

# --------------------------------------------------------------------------
# Banner and facts
# --------------------------------------------------------------------------


def _topology(test: dict[str, Any]) -> str:
    nodes = test.get("nodes")
    if not isinstance(nodes, dict):
        return "unknown"
    roles: dict[str, list[str]] = {}
    for name, node in sorted(nodes.items()):
        role = node.get("role", "?") if isinstance(node, dict) else "?"
        ident = node.get("id") if isinstance(node, dict) else None
        roles.setdefault(str(role), []).append(f"{name} (id {ident})")
    return "; ".join(f"{len(v)} {role}s: {', '.join(v)}" for role, v in sorted(roles.items()))


def _duration(test: dict[str, Any], tables: CheckedTables) -> str:
    duration = test.get("duration_s")
    if isinstance(duration, int | float):
        return f"{duration:.1f} s"
    start, end = parse_time(test.get("started_at")), parse_time(test.get("ended_at"))
    if start and end:
        return f"{(end - start).total_seconds():.1f} s"
    if tables.end_time_s > 0:
        return f"{tables.end_time_s:.1f} s (from the history)"
    return "unknown"


def _command(test: dict[str, Any]) -> str:
    """The reproduce command: test.json's (the Kafka release that ran pinned), else
    the command as typed (runs from before it was recorded)."""
    command = test.get("reproduce") or test.get("command")
    if isinstance(command, str) and command:
        return command
    args = test.get("cli_args")
    if isinstance(args, list):
        return "harness " + " ".join(str(a) for a in args)
    return "unknown (test.json has neither command nor cli_args)"


def _elr(test: dict[str, Any]) -> str:
    elr = test.get("elr_enabled")
    return "on" if elr is True else "off" if elr is False else "unknown"


def topic_table(test: dict[str, Any]) -> Safe:
    topics = test.get("topics")
    if not isinstance(topics, dict) or not topics:
        return not_available("Topic configuration", "test.json lists no topics.")
    rows = []
    for name, conf in sorted(topics.items()):
        conf = conf if isinstance(conf, dict) else {}
        rows.append([name, conf.get("partitions"), conf.get("replication_factor"),
                     conf.get("min_insync_replicas"), conf.get("unclean_leader_election")])
    return table(["topic", "partitions", "replication factor", "min.insync.replicas",
                  "unclean.leader.election"], rows)


def banner(inputs: ReportInputs) -> Safe:
    run = inputs.run
    test, results = run.test, run.results
    css, word = verdict_of(results)
    if results is None:
        reason = run.results_problem or "no results"
    else:
        reason = results.get("reason") or "results.json gives no reason"
    name = test.get("test", run.run_dir.name)
    facts = [
        ("test", name),
        ("nemesis / scenario", test.get("nemesis", "unknown")),
        ("seed", test.get("seed", "unknown")),
        ("Kafka version", test.get("kafka_version", "unknown")),
        ("Kafka distribution", test.get("kafka_dist", "unknown")),
        ("ELR", _elr(test)),
        ("idempotent producers", test.get("idempotent_producers", "unknown")),
        ("topology", _topology(test)),
        ("started", test.get("started_at", "unknown")),
        ("duration", _duration(test, inputs.tables)),
        ("run directory", str(run.run_dir)),
    ]
    checked = checked_line(results) if results else None
    if checked:
        facts.insert(0, ("checker read", checked))
    dl = join(join([tag("dt", k), tag("dd", v)]) for k, v in facts)
    return join([
        tag("div", join([tag("div", word, class_="verdict"), tag("div", reason, class_="reason"),
                         tag("div", f"{name} · ELR {_elr(test)} · Kafka "
                                    f"{test.get('kafka_version', '?')} · seed "
                                    f"{test.get('seed', '?')}")]),
            class_=f"banner {css}", id="verdict"),
        tag("dl", dl, class_="facts"),
        tag("div", join(["reproduce: ", tag("code", _command(test), class_="cmd")])),
        tag("h3", "Phases"),
        phases_bar(test, results),
        tag("h3", "Topics"),
        topic_table(test),
    ])


def history_warnings(inputs: ReportInputs) -> Safe:
    """What the report can say of the history: only what the checker read of it."""
    run = inputs.run
    parts = []
    error = run.test.get("error")
    if run.history_path is None:
        parts.append(not_available("History", "history.jsonl is missing from the run "
                                              "directory; plots and examples cannot be drawn."))
    elif run.results is None:
        parts.append(not_available(
            "History", "the history was not checked (" + (run.results_problem or "no results")
            + "; recorded with --no-check, or its check failed: `harness check` on the run "
            "directory says why). The plots and the operations of examples are drawn from "
            "the checker's tables, so they are omitted."))
    elif inputs.tables.problem:
        parts.append(not_available("History", inputs.tables.problem))
    elif checker_stats(run.results).get("history_lines") == 0:
        parts.append(not_available("History", "history.jsonl is empty: the run recorded "
                                              "no operation."))
    if isinstance(error, str) and error:
        parts.append(tag("div", f"The run ended with an error: {error}", class_="warn"))
    truncated = checker_stats(run.results).get("truncated_lines")
    if isinstance(truncated, int) and truncated:
        parts.append(tag("div", "The last line of history.jsonl was cut short (the recorder "
                                "stopped mid-line); the checker ignored it, as the contract "
                                "says.", class_="na"))
    return join(parts)


# --------------------------------------------------------------------------
# Plots and partitions
# --------------------------------------------------------------------------


def plots_section(inputs: ReportInputs) -> Safe:
    tables, bands, cfg = inputs.tables, inputs.bands, inputs.config
    pts, labels, dpi = cfg.max_plot_points, cfg.max_fault_labels, cfg.plot_dpi
    why = no_history_reason(inputs)
    start = workload_start_s(inputs.run.test)
    latency = plots.latency_plot(tables, bands, pts, labels, dpi, start)
    throughput = plots.throughput_plot(tables, bands, pts, labels, dpi, start)
    hwm = plots.hwm_plot(tables, bands, pts, labels, dpi, start)
    # the checker's losses, drawn over the run the history shows (none without one)
    lost = None if why else plots.lost_writes_plot(inputs.lost, bands, tables.end_time_s, pts,
                                                   labels, dpi, start)
    counts = inputs.lost.counts_by_acks
    lost_alt = "lost writes plot: " + ", ".join(f"acks={a} {counts.get(a, 0)}"
                                                for a in ACKS_LEVELS)
    if not inputs.lost.checked:
        lost_why = why or "the history was not checked (no results.json)."
    else:
        lost_why = why or "the checker found no lost write."
    return join([
        tag("h3", "Latency"),
        image(latency, "latency plot", why or "no completed client operation."),
        tag("h3", "Throughput"),
        image(throughput, "throughput plot", why or "no completed client operation."),
        tag("h3", "Lost writes over time"),
        image(lost, lost_alt, lost_why),
        tag("h3", "High watermark"),
        image(hwm, "high watermark plot", why or "the observer recorded no high watermark."),
    ])


# --------------------------------------------------------------------------
# The page
# --------------------------------------------------------------------------

SECTIONS = (
    ("anomalies", "Anomalies", anomalies_section),
    ("coverage", "KIP-966 states", coverage_section),
    ("plots", "Plots", plots_section),
    ("partitions", "Partitions", partitions_section),
    ("faults", "Faults", faults_section),
    ("stats", "Statistics", stats_section),
    ("metadata", "Controller metadata log", metadata_section),
)
#: A run with transactions adds its section after the plots (same clock as theirs).
TRANSACTIONS = ("transactions", "Transactions", transactions_section)


def sections_of(inputs: ReportInputs) -> tuple:
    """The page's sections: SECTIONS, with Transactions for a run that had them."""
    if not transactions_enabled(inputs.run.test):
        return SECTIONS
    at = [anchor for anchor, _label, _f in SECTIONS].index("plots") + 1
    return (*SECTIONS[:at], TRANSACTIONS, *SECTIONS[at:])


def render_report(inputs: ReportInputs) -> str:
    """The whole self-contained page: CSS and images inline, no script, no external URL."""
    test = inputs.run.test
    _css, word = verdict_of(inputs.run.results)
    title = f"{word} · {test.get('test', inputs.run.run_dir.name)} · {inputs.run.run_dir.name}"
    sections = sections_of(inputs)
    nav = join([tag("a", "Verdict", href="#verdict"),
                *(tag("a", label, href=f"#{anchor}") for anchor, label, _f in sections)])
    body = [banner(inputs), history_warnings(inputs)]
    for anchor, label, section in sections:
        body.append(tag("section", join([tag("h2", label), section(inputs)]), id=anchor))
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    body.append(tag("p", f"{REPORT_GENERATED_BY} {generated}.",
                     class_="muted"))
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"{NO_FAVICON}{REPORT_GENERATOR}"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{h(title)}</title><style>{stylesheet()}</style></head>"
        f"<body>{tag('nav', nav)}<main>{join(body)}</main></body></html>\n"
    )
