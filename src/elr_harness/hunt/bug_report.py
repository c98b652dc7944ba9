"""BUG.md of a shrink (hunt.shrink): what a Kafka ticket wants, from the shrink's
state and the runs it made. The Kafka version and config, the smallest schedule's
steps in words, how often it reproduced, the evidence (the anomaly's examples as
the checker gave them, the partition's leader/ISR/ELR/LastKnownELR timeline and
the faults around them, from a reproducing run's history), and the one command
that plays it again."""

from __future__ import annotations

import dataclasses
import json
import shlex
from pathlib import Path
from typing import Any

from elr_harness.core.files import read_json
from elr_harness.hunt.replay import SCHEDULE_FILE
from elr_harness.nemesis.schedule.file import parse_schedule
from elr_harness.nemesis.schedule.step import CONTROLLER, COORDINATOR_PARTITION
from elr_harness.report.atomic import write_atomically

#: How many of the anomaly's examples, and of timeline lines, BUG.md shows.
EXAMPLES = 3
TIMELINE_LINES = 40


def write_bug_report(out: Path, state: dict[str, Any]) -> None:
    write_atomically(out / "BUG.md", bug_report(out, state))


def bug_report(out: Path, state: dict[str, Any]) -> str:
    test, anomaly = state["test"], state["anomaly"]
    schedule = parse_schedule((out / SCHEDULE_FILE).read_text(), SCHEDULE_FILE)
    confirmed = state.get("confirmed", {})
    runs = confirmed.get("runs", [])
    hit = next((r for r in runs if r.get("hit")), None)
    elr = "on" if test.get("elr_enabled") else "off"
    lines = [f"# {anomaly} on Kafka {test.get('kafka_version')} (ELR {elr}): "
             f"{len(schedule.steps)} steps, reproduced {confirmed.get('hits', 0)} of "
             f"{len(runs)} times", "",
             "## Kafka and its config", "",
             f"- Kafka {test.get('kafka_version')}"
             + (f" (build {test['kafka_dist']})" if str(test.get("kafka_dist") or "")
                .startswith("/") else ""),
             f"- eligible leader replicas (KIP-966): {elr}"]
    for topic, config in (test.get("topics") or {}).items():
        lines.append(f"- topic {topic}: " + ", ".join(f"{k} {v}" for k, v in config.items()))
    own = sorted({s.partition_text for s in schedule.steps if s.partition is not None})
    lines += [f"- the harness's flags: `{shlex.join(state['args'])}`", "",
              "## Steps", "",
              "On the first topic's partition 0 (a step that names another says so); L is "
              "its leader at the start." if own else
              "On the first topic's partition 0; L is its leader at the start.", ""]
    placed = schedule.placement
    if placed is not None:
        lines[-1:-1] = [
            f"The nodes are named as the run placed them: {placed.leader} led, the replicas "
            f"were {', '.join(placed.replicas)}"
            f"{', ' + placed.controller + ' the active controller' if placed.controller else ''}"
            "; a replay plays each on the node in the same place ([placement]).", ""]
    for number, step in enumerate(schedule.steps, start=1):
        lines.append(f"{number}. {_in_words(step)}")
    smallest = state.get("smallest", {})
    cut_to = "".join(f"; {name}'s cut to {', '.join(kept)}"
                     for name, kept in (smallest.get("cuts") or {}).items())
    before = len(parse_schedule(state["schedule"], "run").steps)
    lines += ["", f"Shrunk from the run's {before} steps ({state['run_dir']}) by delta "
              f"debugging: a candidate was kept when {state['k']} of {state['n']} replays "
              f"were INVALID with {anomaly}. Steps kept: {', '.join(smallest.get('steps', []))}"
              f"{'; holds shortened: ' + str(smallest['holds']) if smallest.get('holds') else ''}"
              f"{cut_to}.",
              "", "## Reproduction", "",
              f"{confirmed.get('hits', 0)} of {len(runs)} replays of the steps above were "
              f"INVALID with {anomaly}:", ""]
    for number, run in enumerate(runs, start=1):
        bad = ", ".join(run.get("bad") or []) or "none"
        lines.append(f"- replay {number}: {run['verdict']} ({bad}), {run['seconds']:.0f} s, "
                     f"{run.get('run_dir')}")
    lines += ["", "## Evidence", ""]
    if hit is None:
        lines.append("No replay reproduced it in the confirmation: no evidence to show.")
    else:
        lines += _evidence(Path(hit["run_dir"]), anomaly)
    lines += ["", "## Play it again", "", "```",
              shlex.join(["harness", "run", *state["args"], "--schedule",
                          str(out / SCHEDULE_FILE)]), "```", ""]
    return "\n".join(lines)


def _in_words(step: Any) -> str:
    """Every field of a step in words: what it does, on which partition when it names
    its own, what it waits for and reads, what it watches through its hold."""
    if step.end:
        said = f"end step {step.end}'s fault"
    elif step.fault:
        if step.cut:
            said = f"{step.fault}: " + "; ".join(f"{node} drops {', '.join(peers)}"
                                                 for node, peers in step.cut.items())
        else:
            where = "the cluster default" if step.scope else "the cluster"
            said = f"{step.fault} on {step.target or where}"
        said += f" (now {step.bind})" if step.bind else ""
        said += f", to {step.to}" if step.to is not None else ""
        if step.settings is not None:
            said += f", settings {_settings_in_words(step.settings)}"
    else:
        said = "wait" if step.until else "no fault"
    if step.partition is not None:
        said += (" (on the transaction coordinator's __transaction_state partition)"
                 if step.partition == COORDINATOR_PARTITION
                 else f" (on partition {step.partition_text})")
    read = "the active controller's metadata" if step.read == CONTROLLER else "the observer"
    if step.until:
        said += f"; wait until {step.until.text} (at most {step.within_s:g} s, read from " \
                f"{read})"
    if step.hold_s:
        said += f"; hold {step.hold_s:g} s"
    if step.watch:
        said += f"; watch for {step.watch.text} through the hold (read from {read}; " \
                "recorded if seen)"
    return f"`{step.name}`: {said}"


def _settings_in_words(settings: Any) -> str:
    """A step's settings as its file gave them: the fields that differ from its
    kind's defaults (every field when those cannot be told)."""
    if not dataclasses.is_dataclass(settings):
        return str(settings)
    fields = dataclasses.asdict(settings)
    try:
        defaults = dataclasses.asdict(type(settings)())
    except TypeError:
        defaults = {}
    # a schedule file read back gives lists where the defaults are tuples
    shown = {k: v for k, v in fields.items()
             if k not in defaults or json.dumps(defaults[k]) != json.dumps(v)}
    if defaults and not shown:
        return "its kind's defaults"
    return ", ".join(f"{k} {json.dumps(v)}" for k, v in (shown or fields).items())


def _evidence(run_dir: Path, anomaly: str) -> list[str]:
    results = read_json(run_dir / "results.json", str(run_dir / "results.json"),
                        max_bytes=1 << 30)
    found = (results.get("anomalies") or {}).get(anomaly) or {}
    examples = found.get("examples") or []
    lines = [f"From {run_dir}: {found.get('count', 0)} {anomaly}. The checker's first "
             "examples:", ""]
    lines += [f"- {e.get('description', json.dumps(e)[:300])}" for e in examples[:EXAMPLES]]
    where = next(((e.get("topic"), e.get("partition")) for e in examples
                  if e.get("topic") is not None), None)
    lines += ["", f"The partition {where[0]}-{where[1]} as observed, and the faults "
              "(each line a change):" if where else "The faults:", "", "```"]
    lines += _timeline(run_dir / "history.jsonl", where)
    lines += ["```", ""]
    records = _controller_records(run_dir, where)
    if records:
        lines += ["The controller's metadata records of that partition, and the brokers' "
                  "fencing, from the run's metadata-log.json (on the timeline's clock, to "
                  "about a second):", "", "```", *records, "```"]
    else:
        lines.append("The run kept no controller metadata log.")
    return lines


def _controller_records(run_dir: Path, where: tuple[Any, Any] | None) -> list[str]:
    """PartitionChangeRecords of the partition and BrokerRegistrationChangeRecords,
    from the first controller's metadata-log.json the run kept."""
    from datetime import datetime

    logs = sorted((run_dir / "nodes").glob("controller-*/metadata-log.json"))
    if not logs or where is None:
        return []
    try:
        records = json.loads(logs[0].read_text())
        test = json.loads((run_dir / "test.json").read_text())
        # the history's clock starts with the workload: its phase's start after
        # started_at (which is to the second, so these times are to about a second)
        workload_s = next((p["start_s"] for p in test.get("phases") or []
                           if p.get("name") == "workload + nemesis"), 0.0)
        started_ms = (datetime.fromisoformat(test["started_at"]).timestamp()
                      + workload_s) * 1000
    except (OSError, ValueError, KeyError, TypeError):
        return []
    topic_ids = {r["data"].get("name"): r["data"].get("topicId") for r in records
                 if isinstance(r, dict) and r.get("type") == "TOPIC_RECORD"}
    wanted = topic_ids.get(where[0])
    shown = []
    for record in records:
        kind, data = record.get("type"), record.get("data") or {}
        mine = kind == "PARTITION_CHANGE_RECORD" and data.get("topicId") == wanted and \
            data.get("partitionId") == where[1]
        fencing = kind == "BROKER_REGISTRATION_CHANGE_RECORD" and "fenced" in data
        if mine or fencing:
            at = (record.get("timestamp_ms", started_ms) - started_ms) / 1000
            fields = {k: v for k, v in data.items() if k not in ("topicId", "partitionId")}
            shown.append(f"{at:7.1f} s  {kind} {json.dumps(fields)}")
    if len(shown) > TIMELINE_LINES:
        shown = shown[:TIMELINE_LINES] + [f"... {len(shown) - TIMELINE_LINES} more"]
    return shown


def _timeline(history: Path, where: tuple[Any, Any] | None) -> list[str]:
    """Fault lines and the partition's changes of leader/ISR/ELR/LastKnownELR."""
    shown: list[str] = []
    last: tuple[Any, ...] | None = None
    start = None
    with history.open() as lines:
        for raw in lines:
            try:
                op = json.loads(raw)
            except ValueError:
                continue
            start = op.get("time") if start is None else start
            at = f"{(op.get('time', 0) - (start or 0)) / 1e9:7.1f} s"
            if op.get("f") == "fault" and op.get("type") in ("ok", "info"):
                step = (op.get("detail") or {}).get("step")
                shown.append(f"{at}  fault {op.get('fault')} {' '.join(op.get('nodes') or [])}"
                             f" ({op.get('type')}{', ' + str(step) if step else ''})")
            elif op.get("f") == "observe" and where is not None and \
                    (op.get("topic"), op.get("partition")) == where:
                now = (op.get("leader"), op.get("isr"), op.get("elr"),
                       op.get("last_known_elr"), op.get("fenced"))
                if now != last:
                    shown.append(f"{at}  leader {now[0]} ISR {now[1]} ELR {now[2]} "
                                 f"LastKnownELR {now[3]} fenced {now[4]}")
                    last = now
    if len(shown) > TIMELINE_LINES:
        shown = shown[:TIMELINE_LINES] + [f"... {len(shown) - TIMELINE_LINES} more"]
    return shown
