"""report.html's sections, each from the loaded run files and the history scan.

Every section renders something for every run: a missing file or an empty
history gives a "not available" note saying why, never an exception.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from harness.core.config import ReportConfig
from harness.core.history import ACKS_LEVELS
from reports import plots
from reports.faults import FaultBand
from reports.history_scan import (
    HistoryScan,
    Interest,
    ObservedState,
    example_interest,
    matching_records,
)
from reports.html import NO_FAVICON, Safe, h, image, join, not_available, stylesheet, table, tag
from reports.lost_writes import LostWrites
from reports.metadata import PARTITION_FIELDS, decode_metadata
from reports.rundir import RunFiles
from reports.verdict import checked_line, count_label, verdict_of

#: Examples of an anomaly shown open; the rest sit in a collapsed list.
EXAMPLES_OPEN = 3


@dataclass(frozen=True)
class ReportInputs:
    """Everything a report is made of, gathered by reports.build."""

    run: RunFiles
    scan: HistoryScan
    bands: list[FaultBand]
    lost: LostWrites
    config: ReportConfig


def seconds(time_ns: Any) -> str:
    """History times (ns since start) as seconds, the unit the whole report uses."""
    if isinstance(time_ns, int | float):
        return f"{time_ns / 1e9:.3f}"
    return "?"


def ids(members: Any) -> str:
    if members is None:
        return "unknown"
    if isinstance(members, list | tuple):
        return "{" + ", ".join(str(m) for m in members) + "}"
    return str(members)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _parse_time(text: Any) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


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


def _duration(test: dict[str, Any], scan: HistoryScan) -> str:
    duration = test.get("duration_s")
    if isinstance(duration, int | float):
        return f"{duration:.1f} s"
    start, end = _parse_time(test.get("started_at")), _parse_time(test.get("ended_at"))
    if start and end:
        return f"{(end - start).total_seconds():.1f} s"
    if scan.lines:
        return f"{scan.end_time_s:.1f} s (from the history)"
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
    run, scan = inputs.run, inputs.scan
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
        ("duration", _duration(test, scan)),
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
        tag("h3", "Topics"),
        topic_table(test),
    ])


def history_warnings(inputs: ReportInputs) -> Safe:
    run, scan = inputs.run, inputs.scan
    parts = []
    if run.history_path is None:
        parts.append(not_available("History", "history.jsonl is missing from the run "
                                              "directory; plots and examples cannot be drawn."))
    elif scan.lines == 0:
        parts.append(not_available("History", "history.jsonl is empty: the run recorded "
                                              "no operation."))
    if scan.malformed_count:
        listed = ", ".join(str(n) for n in scan.malformed_lines)
        parts.append(tag("div", f"history.jsonl has {scan.malformed_count} malformed line(s) "
                                f"that are not the last one (lines {listed}); they were "
                                "skipped here, and the history breaks its contract.",
                         class_="warn"))
    if scan.truncated_last_line:
        parts.append(tag("div", "The last line of history.jsonl was cut short (the recorder "
                                "stopped mid-line); it is ignored, as the contract says.",
                         class_="na"))
    return join(parts)


# --------------------------------------------------------------------------
# Anomalies with their evidence
# --------------------------------------------------------------------------


def _records_text(records: Any) -> str:
    if not isinstance(records, list):
        return ""
    return " ".join(_json(r) for r in records)


def _poll_evidence(op: dict[str, Any], interest: Interest, cap: int) -> list[object]:
    """What a poll says about the example: the records it is about, or that a value is absent."""
    if "records_total" not in op:
        return []
    parts: list[object] = [f" {op['records_total']} records"]
    relevant = matching_records(op.get("records_relevant"), interest)
    if relevant:
        parts.append(join([" · about this example: ", tag("code", _records_text(relevant[:cap]))]))
        if len(relevant) > cap:
            parts.append(f" (+{len(relevant) - cap} more)")
    found = {r[2] for r in relevant}
    absent = sorted(v for v in interest.values if v not in found)
    if absent and op.get("records_total"):
        parts.append(join([" · ", tag("strong", "absent: " + ", ".join(map(str, absent)))]))
    if not interest.values and not interest.positions and op.get("records_first"):
        parts.append(join([" · first: ", tag("code", _records_text(op["records_first"]))]))
    return parts


def op_detail(op: dict[str, Any], interest: Interest, cap: int) -> Safe:
    """What one op says, compactly: the fields a reader needs for its f."""
    f = op.get("f")
    parts: list[object] = []
    if f == "send":
        parts.append(f"{op.get('topic')}-{op.get('partition')} acks={op.get('acks')} "
                     f"value={op.get('value')}")
        if "offset" in op:
            parts.append(f" offset={_json(op.get('offset'))}")
    elif f == "poll":
        parts.append(f"topic={op.get('topic')}")
        if op.get("final"):
            parts.append(tag("strong", " final read"))
            if "partitions" in op:
                parts.append(f" partitions={_json(op.get('partitions'))}")
        if "seek" in op:
            parts.append(f" seek={_json(op.get('seek'))}")
        parts.extend(_poll_evidence(op, interest, cap))
        if "high_watermark" in op:
            parts.append(f" · hwm={_json(op.get('high_watermark'))}")
    elif f == "observe":
        parts.append(f"{op.get('topic')}-{op.get('partition')} leader={op.get('leader')} "
                     f"epoch={op.get('leader_epoch')} ISR={ids(op.get('isr'))} "
                     f"ELR={ids(op.get('elr'))} LastKnownELR={ids(op.get('last_known_elr'))}")
        if "high_watermark" in op:
            parts.append(f" hwm={op.get('high_watermark')}")
        if op.get("fenced") is not None:
            parts.append(f" fenced={ids(op.get('fenced'))}")
    elif f == "fault":
        parts.append(f"{op.get('fault')} {_json(op.get('nodes'))}")
        if op.get("detail"):
            parts.append(f" {_json(op.get('detail'))}")
    if "error" in op:
        parts.append(join([" error: ", tag("strong", op.get("error"))]))
    return join(parts)


def ops_table(indices: list[Any], ops: dict[int, dict[str, Any]], interest: Interest,
              cap: int) -> Safe:
    rows = []
    for index in indices:
        op = ops.get(index) if isinstance(index, int) else None
        if op is None:
            rows.append([index, "", "", "", "", "not found in history.jsonl"])
            continue
        rows.append([index, seconds(op.get("time")), op.get("process"), op.get("type"),
                     op.get("f"), op_detail(op, interest, cap)])
    return table(["op", "time (s)", "process", "type", "f", "what"], rows, class_="ops")


def example_block(example: Any, ops: dict[int, dict[str, Any]], history_known: bool,
                  cap: int) -> Safe:
    if not isinstance(example, dict):
        return tag("div", join(["example: ", tag("code", _json(example))]), class_="example")
    description = example.get("description")
    scalars = [
        f"{key}={_json(value) if not isinstance(value, str) else value}"
        for key, value in example.items()
        if key not in ("ops", "description")
    ]
    indices = example.get("ops") if isinstance(example.get("ops"), list) else []
    if not indices:
        evidence: Safe = tag("div", "this example names no operations", class_="muted")
    elif not history_known:
        evidence = not_available("Operations", "history.jsonl is missing, so the ops "
                                               f"{_json(indices)} cannot be shown.")
    else:
        evidence = ops_table(indices, ops, example_interest(example), cap)
    return tag("div", join([
        tag("div", description, class_="desc") if description else "",
        tag("div", tag("code", " ".join(scalars))),
        evidence,
    ]), class_="example")


def anomalies_section(inputs: ReportInputs) -> Safe:
    results = inputs.run.results
    if results is None:
        return not_available("Anomalies", inputs.run.results_problem or "no results.json")
    anomalies = results.get("anomalies")
    anomalies = anomalies if isinstance(anomalies, dict) else {}
    bad = {str(n) for n in results.get("bad_anomaly_types") or []}
    names = {str(n) for n in results.get("anomaly_types") or []} | set(anomalies)
    if not names:
        return tag("p", "The checker found no anomaly of any type.")
    order = sorted(names, key=lambda n: (n not in bad, n))
    summary_rows, blocks = [], []
    for name in order:
        entry = anomalies.get(name)
        entry = entry if isinstance(entry, dict) else {}
        count = entry.get("count", "?")
        by_acks = entry.get("by_acks")
        by_acks_text = (", ".join(f"acks={k}: {v}" for k, v in by_acks.items())
                        if isinstance(by_acks, dict) else "")
        verdict = count_label(results, name).split(" ", 1)[1].strip("()")
        summary_rows.append([Safe(f'<a href="#anomaly-{h(name)}">{h(name)}</a>'), count,
                             verdict, by_acks_text])
        examples = entry.get("examples") if isinstance(entry.get("examples"), list) else []
        heading = join([name, f" — {count}",
                        tag("span", verdict, class_=f"badge {'bad' if name in bad else 'benign'}")])
        body = [tag("h3", heading)]
        if by_acks_text:
            body.append(tag("div", f"by acks: {by_acks_text}", class_="muted"))
        if examples:
            body.append(tag("div", f"{len(examples)} example(s) of {count}:", class_="muted"))
            blocks_of = [example_block(e, inputs.scan.ops, inputs.run.history_path is not None,
                                       inputs.config.max_example_records) for e in examples]
            shown = EXAMPLES_OPEN
            body.extend(blocks_of[:shown])
            if len(blocks_of) > shown:
                body.append(tag("details", join([
                    tag("summary", f"{len(blocks_of) - shown} more example(s)"),
                    join(blocks_of[shown:])])))
        else:
            body.append(tag("div", "results.json gives no example.", class_="muted"))
        blocks.append(tag("div", join(body), class_="anomaly", id=f"anomaly-{name}"))
    return join([table(["anomaly", "count", "verdict", "by acks"], summary_rows),
                 join(blocks)])


# --------------------------------------------------------------------------
# Plots and partitions
# --------------------------------------------------------------------------


def _no_history_reason(inputs: ReportInputs) -> str:
    if inputs.run.history_path is None:
        return "history.jsonl is missing."
    if inputs.scan.lines == 0:
        return "history.jsonl is empty."
    return ""


def plots_section(inputs: ReportInputs) -> Safe:
    scan, bands, cfg = inputs.scan, inputs.bands, inputs.config
    pts, labels, dpi = cfg.max_plot_points, cfg.max_fault_labels, cfg.plot_dpi
    why = _no_history_reason(inputs)
    latency = plots.latency_plot(scan, bands, pts, labels, dpi)
    throughput = plots.throughput_plot(scan, bands, pts, labels, dpi)
    hwm = plots.hwm_plot(scan, bands, pts, labels, dpi)
    # the checker's losses, drawn over the run the history shows (none without one)
    lost = None if why else plots.lost_writes_plot(inputs.lost, bands, scan.end_time_s, pts,
                                                   labels, dpi)
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


def _brokers(test: dict[str, Any]) -> list[int]:
    nodes = test.get("nodes")
    if not isinstance(nodes, dict):
        return []
    return sorted(
        node["id"] for node in nodes.values()
        if isinstance(node, dict) and node.get("role") == "broker"
        and isinstance(node.get("id"), int)
    )


def state_table(states: list[ObservedState], bands: list[FaultBand], limit: int) -> Safe:
    """Observed changes with the faults between them, in time order: the KIP-966 table."""
    events: list[tuple[float, int, Any]] = [(s.time_s, 1, s) for s in states]
    for band in bands:
        events.append((band.start_s, 0, ("start", band)))
        if band.end_s is not None and band.end_s > band.start_s:
            events.append((band.end_s, 0, ("end", band)))
    events.sort(key=lambda e: (e[0], e[1]))
    rows = []
    previous: ObservedState | None = None
    for time_s, _kind, item in events[:limit]:
        if isinstance(item, ObservedState):
            cells = []
            for name, value in (("leader", item.leader), ("epoch", item.leader_epoch),
                                ("isr", item.isr), ("elr", item.elr),
                                ("lke", item.last_known_elr), ("fenced", item.fenced)):
                old = None if previous is None else {
                    "leader": previous.leader, "epoch": previous.leader_epoch,
                    "isr": previous.isr, "elr": previous.elr, "lke": previous.last_known_elr,
                    "fenced": previous.fenced,
                }[name]
                text = ids(value) if name in ("isr", "elr", "lke", "fenced") else str(value)
                changed = previous is not None and old != value
                cells.append(Safe(f'<span class="changed">{h(text)}</span>') if changed
                             else text)
            rows.append(Safe(tag("tr", join(
                tag("td", c) for c in [f"{time_s:.3f}", "observed", *cells]))))
            previous = item
        else:
            what, band = item
            if what == "start":
                label = f"{band.label} begins" if band.lasting else band.label
            else:
                label = f"{band.label} ends ({band.ended_by})"
            if band.uncertain and what == "start":
                label += " (info: may have half happened)"
            rows.append(Safe(tag("tr", join([tag("td", f"{time_s:.3f}"),
                                             tag("td", "fault"), tag("td", label, colspan=6)]),
                                 class_="fault")))
    more = ""
    if len(events) > limit:
        more = tag("div", f"{len(events) - limit} more rows not shown "
                          "(ReportConfig.max_state_rows).", class_="muted")
    head = join(tag("th", c) for c in ["time (s)", "event", "leader", "leader epoch", "ISR",
                                      "ELR", "LastKnownELR", "fenced"])
    body = Safe("".join(rows))
    return join([tag("table", Safe(f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody>")),
                 more])


def partitions_section(inputs: ReportInputs) -> Safe:
    scan, cfg = inputs.scan, inputs.config
    if not scan.states:
        return not_available("Partition state", _no_history_reason(inputs)
                             or "the history has no observe lines.")
    brokers = _brokers(inputs.run.test)
    parts = [tag("p", "Leader, ISR, ELR and LastKnownELR as the observer saw them, one lane per "
                      "broker, with the faults shaded; the table lists every change with the "
                      "faults in between, changed cells highlighted.", class_="muted")]
    keys = sorted(scan.states)
    for key in keys[:cfg.max_partition_timelines]:
        states = scan.states[key]
        uri = plots.membership_plot(key, states, brokers, inputs.bands, scan.end_time_s,
                                    cfg.max_fault_labels, cfg.plot_dpi)
        parts.append(tag("h3", f"{key[0]}-{key[1]}", id=f"partition-{key[0]}-{key[1]}"))
        parts.append(image(uri, f"{key[0]}-{key[1]} membership timeline", ""))
        parts.append(tag("details", join([
            tag("summary", f"{len(states)} observed state changes with faults"),
            state_table(states, inputs.bands, cfg.max_state_rows),
        ]), open="open" if len(keys) <= 3 else None))
    if len(keys) > cfg.max_partition_timelines:
        rest = ", ".join(f"{t}-{p}" for t, p in keys[cfg.max_partition_timelines:])
        parts.append(tag("div", f"Not drawn (ReportConfig.max_partition_timelines): {rest}",
                         class_="muted"))
    return join(parts)


def faults_section(inputs: ReportInputs) -> Safe:
    if not inputs.bands:
        return not_available("Faults", _no_history_reason(inputs)
                             or "the nemesis recorded no fault that took effect.")
    rows = []
    for band in inputs.bands:
        if not band.lasting:
            end, duration, ended_by = "", "", "(an event, not a lasting fault)"
        elif band.end_s is None:
            end, duration, ended_by = "never ended", "", ""
        else:
            end, duration = f"{band.end_s:.3f}", f"{band.end_s - band.start_s:.3f}"
            ended_by = band.ended_by or ""
        rows.append([band.step or "", band.kind, ", ".join(band.nodes), f"{band.start_s:.3f}",
                     end, duration, ended_by, "info (uncertain)" if band.uncertain else "ok",
                     band.start_index])
    return table(["step", "fault", "nodes", "start (s)", "end (s)", "duration (s)", "ended by",
                  "outcome", "op"], rows)


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
                                  else _json(v)] for k, v in mapping.items()])


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


# --------------------------------------------------------------------------
# Controller metadata log
# --------------------------------------------------------------------------


def _metadata_time(timestamp_ms: Any, start: datetime | None) -> tuple[str, str]:
    if not isinstance(timestamp_ms, int | float):
        return "", ""
    moment = datetime.fromtimestamp(timestamp_ms / 1000, tz=UTC)
    since = f"{(moment - start).total_seconds():.3f}" if start else ""
    return since, moment.strftime("%H:%M:%S.%f")[:-3]


def metadata_section(inputs: ReportInputs) -> Safe:
    log = inputs.run.metadata
    if log.problem is not None:
        return not_available("Controller metadata log", log.problem)
    decoded = decode_metadata(log.records)
    start = _parse_time(inputs.run.test.get("started_at"))
    limit = inputs.config.max_metadata_rows
    rows = []
    for row in decoded.rows[:limit]:
        since, clock = _metadata_time(row.timestamp_ms, start)
        if row.event:
            cells: list[object] = [tag("td", row.event, colspan=len(PARTITION_FIELDS))]
        else:
            cells = []
            for name, _title in PARTITION_FIELDS:
                value = row.values.get(name)
                text = ids(value) if isinstance(value, list) else ("" if value is None
                                                                   else str(value))
                cells.append(tag("td", text, class_="changed" if name in row.changed else None))
        rows.append(tag("tr", join([tag("td", row.offset), tag("td", since), tag("td", clock),
                                    tag("td", row.type), tag("td", row.subject), *cells])))
    head = join(tag("th", c) for c in ["offset", "time (s)", "UTC", "record", "partition / broker",
                                      *(title for _n, title in PARTITION_FIELDS)])
    notes = [tag("p", f"{log.node}: {decoded.total_records} records; {len(decoded.rows)} about "
                      "partitions and brokers below (the state after each record, the fields "
                      "the record changed highlighted).", class_="muted")]
    if decoded.other_types:
        notes.append(tag("div", "Other records: " + ", ".join(
            f"{k} ×{v}" for k, v in sorted(decoded.other_types.items())), class_="muted"))
    if len(decoded.rows) > limit:
        notes.append(tag("div", f"{len(decoded.rows) - limit} more rows not shown "
                                "(ReportConfig.max_metadata_rows).", class_="muted"))
    if not decoded.rows:
        return join([*notes, not_available("Partition and broker records",
                                           "the metadata log holds none.")])
    return join([*notes, tag("table", Safe(f"<thead><tr>{head}</tr></thead>"
                                           f"<tbody>{join(rows)}</tbody>"))])


# --------------------------------------------------------------------------
# The page
# --------------------------------------------------------------------------

SECTIONS = (
    ("anomalies", "Anomalies", anomalies_section),
    ("plots", "Plots", plots_section),
    ("partitions", "Partitions", partitions_section),
    ("faults", "Faults", faults_section),
    ("stats", "Statistics", stats_section),
    ("metadata", "Controller metadata log", metadata_section),
)


def render_report(inputs: ReportInputs) -> str:
    """The whole self-contained page: CSS and images inline, no script, no external URL."""
    test = inputs.run.test
    _css, word = verdict_of(inputs.run.results)
    title = f"{word} · {test.get('test', inputs.run.run_dir.name)} · {inputs.run.run_dir.name}"
    nav = join([tag("a", "Verdict", href="#verdict"),
                *(tag("a", label, href=f"#{anchor}") for anchor, label, _f in SECTIONS)])
    body = [banner(inputs), history_warnings(inputs)]
    for anchor, label, section in SECTIONS:
        body.append(tag("section", join([tag("h2", label), section(inputs)]), id=anchor))
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    body.append(tag("p", f"Generated by elr-harness `harness report` at {generated}.",
                     class_="muted"))
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"{NO_FAVICON}"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{h(title)}</title><style>{stylesheet()}</style></head>"
        f"<body>{tag('nav', nav)}<main>{join(body)}</main></body></html>\n"
    )
