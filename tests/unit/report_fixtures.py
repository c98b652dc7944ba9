"""Run directories for report tests: a history per HISTORY.md plus the files beside it.

The generator plays the unclean-last-replica scenario on partition 0 of a
3-broker cluster (leader 1, followers 2 and 3): T0 cuts broker-2 off, T1
broker-3 (ISR {1}, ELR [3]), T2 is a power loss of broker-1 (ISR {}, ELR
[1, 3]), T3 heals, T4 restarts broker-1 and broker-3 is elected from the ELR.
Producers send with acks all/1/0, a consumer polls, final reads close the run;
test.json, a hand-written results.json (valid, invalid or unknown) and a
metadata-log.json match the history. The real checker then checks the history
(check_into_cache): its Parquet cache is what the report draws from, and its
counts (stats.ops, history_lines, truncated_lines) go into results.json, so a
report test compares the page against the checker's numbers. It scales to
millions of operations for the benchmark, writing line by line.
"""

from __future__ import annotations

import heapq
import json
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elr_harness.checker.check import check_history
from elr_harness.core.config import CheckerConfig

HOSTILE_ERROR = '<script>alert("pwned")</script><img src=x onerror="alert(1)">&amp;'
HOSTILE_TOPIC = 'evil<b>topic</b>&"\'$x$'
ACKS_BY_PRODUCER = ("all", "1", "0")
BROKERS = (1, 2, 3)
START_MS = 1_763_740_800_000


@dataclass
class Sent:
    """What the generator remembers of one send, to write results.json examples."""

    value: int
    partition: int
    acks: str
    invoke: int
    done: int
    offset: int | None
    lost: bool
    polls: list[int] = field(default_factory=list)
    #: completion time, seconds into the run
    time_s: float = 0.0


@dataclass
class RunSpec:
    variant: str = "valid"  # valid | invalid | unknown
    ops: int = 600
    rate: float = 20.0  # client operations per second
    seed: int = 7
    elr: bool = True
    topic: str = "elr-test"
    error: str = "NOT_ENOUGH_REPLICAS"
    with_results: bool = True
    with_metadata: bool = True
    test_name: str = "unclean-last-replica"
    run_name: str = "20261121T160000"


class HistoryWriter:
    """Appends history lines with consecutive indices."""

    def __init__(self, path: Path) -> None:
        self.f = path.open("w", encoding="utf-8")
        self.index = 0
        self.dumps = json.JSONEncoder(separators=(",", ":")).encode

    def write(self, time_s: float, process: int, typ: str, f: str, **fields: Any) -> int:
        line = {"index": self.index, "time": int(time_s * 1e9), "process": process,
                "type": typ, "f": f, **fields}
        self.f.write(self.dumps(line))
        self.f.write("\n")
        self.index += 1
        return self.index - 1

    def close(self, truncated_tail: str | None = None) -> None:
        if truncated_tail:
            self.f.write(truncated_tail)
        self.f.close()


def _steps(duration: float) -> dict[str, float]:
    return {name: duration * frac for name, frac in
            (("T0", 0.2), ("T1", 0.35), ("T2", 0.5), ("T3", 0.6), ("T4", 0.7), ("full", 0.8))}


def _partition0_state(t: float, steps: dict[str, float], elr: bool) -> tuple:
    """(leader, epoch, isr, elr, last_known_elr) of partition 0 at time t.

    Each step's effect shows a little after its fault, as the controller needs time.
    """
    t -= 0.6
    none = [] if elr else None  # without ELR the cluster cannot say
    if t < steps["T0"]:
        return 1, 0, [1, 2, 3], none, none
    if t < steps["T1"]:
        return 1, 1, [1, 3], none, none
    if t < steps["T2"]:
        return 1, 2, [1], [3] if elr else None, [] if elr else None
    if t < steps["T4"]:
        return -1, 3, [] if elr else [1], [1, 3] if elr else None, [] if elr else None
    if t < steps["full"]:
        if elr:
            return 3, 4, [3], [], [1]
        return 1, 4, [1], None, None
    return (3, 5, [1, 2, 3], [], []) if elr else (1, 5, [1, 2, 3], None, None)


def _faults(steps: dict[str, float]) -> list[tuple[float, str, list[str], dict[str, Any]]]:
    return [
        (steps["T0"], "partition", ["broker-2"], {"step": "T0", "grudge": {"broker-2": "all"}}),
        (steps["T1"], "partition", ["broker-3"], {"step": "T1", "grudge": {"broker-3": "all"}}),
        (steps["T2"], "page-cache-loss", ["broker-1"],
         {"step": "T2", "bytes_dropped": {"/data/kafka/elr-test-0/0.log": 40960}}),
        (steps["T3"], "heal", ["broker-2", "broker-3"], {"step": "T3"}),
        (steps["T4"], "start", ["broker-1"], {"step": "T4"}),
    ]


class _Clock:
    """Lines due at a time, written in time order: clients run concurrently, one op each."""

    def __init__(self) -> None:
        self.heap: list[tuple[float, int, Callable[[float], None]]] = []
        self.seq = 0

    def at(self, when: float, action: Callable[[float], None]) -> None:
        heapq.heappush(self.heap, (when, self.seq, action))
        self.seq += 1

    def run_until(self, now: float) -> None:
        while self.heap and self.heap[0][0] <= now:
            when, _seq, action = heapq.heappop(self.heap)
            action(when)


def generate_history(run_dir: Path, spec: RunSpec) -> dict[str, Any]:
    """Write history.jsonl; return what results.json examples need to name."""
    rng = random.Random(spec.seed)
    duration = spec.ops / spec.rate
    steps = _steps(duration)
    partitions = 3
    out = HistoryWriter(run_dir / "history.jsonl")
    clock = _Clock()
    logs: list[list[tuple[int, int, int]]] = [[] for _ in range(partitions)]  # value, off, sid
    sent: list[Sent] = []
    polled_upto = [0] * partitions
    hwm = [0] * partitions
    free: dict[str, list[int]] = {role: [] for role in ACKS_BY_PRODUCER}
    next_pid = [4]
    consumer = 3
    consumer_busy = [False]
    poll_indices: list[int] = []
    observe_indices: list[int] = []
    lost_window = (steps["T1"], steps["T2"]) if spec.elr else (steps["T0"], steps["T2"])

    def take(role: str) -> int:
        if free[role]:
            return free[role].pop()
        next_pid[0] += 1
        return next_pid[0]

    for ft, kind, nodes, detail in _faults(steps):
        fields = {"fault": kind, "nodes": nodes, "detail": detail}
        clock.at(ft, lambda now, fl=fields: out.write(now, -1, "invoke", "fault", **fl))
        clock.at(ft + 0.05, lambda now, fl=fields: out.write(now, -1, "ok", "fault", **fl))

    def observe(now: float) -> None:
        for p in range(partitions):
            if p == 0:
                leader, epoch, isr, elr, lke = _partition0_state(now, steps, spec.elr)
            else:
                leader, epoch, isr, elr, lke = p + 1, 0, [1, 2, 3], [], []
                if not spec.elr:
                    elr = lke = None
            observe_indices.append(out.write(
                now, -2, "ok", "observe", topic=spec.topic, partition=p, leader=leader,
                leader_epoch=epoch, isr=isr, elr=elr, last_known_elr=lke,
                high_watermark=hwm[p]))
        if now + 0.25 <= duration + 1.0:
            clock.at(now + 0.25, observe)

    clock.at(0.0, observe)

    def poll_done(now: float) -> None:
        records = []
        for p in range(partitions):
            upto = min(len(logs[p]), polled_upto[p] + 20)
            records.extend([p, off, logs[p][off][0]] for off in range(polled_upto[p], upto))
            polled_upto[p] = upto
        done = out.write(now, consumer, "ok", "poll", topic=spec.topic, records=records,
                         high_watermark={str(p): hwm[p] for p in range(partitions)})
        poll_indices.append(done)
        for p, offset, _v in records:
            sent[logs[p][offset][2]].polls.append(done)
        consumer_busy[0] = False

    def send_done(now: float, process: int, acks: str, partition: int, value: int,
                  invoke: int) -> None:
        fields = {"topic": spec.topic, "partition": partition, "acks": acks, "value": value}
        troubled = partition == 0 and steps["T1"] <= now < steps["T4"]
        if troubled and acks == "all":
            out.write(now, process, "fail", "send", **fields, error=spec.error)
        elif rng.random() < 0.01:
            out.write(now, process, "info", "send", **fields, error="REQUEST_TIMED_OUT")
            return  # a process never issues another op after info
        else:
            offset = len(logs[partition])
            lost = (partition == 0 and lost_window[0] <= now < lost_window[1]
                    and (acks != "all" or not spec.elr))
            logs[partition].append((value, offset, len(sent)))
            done = out.write(now, process, "ok", "send", **fields,
                             offset=None if acks == "0" else offset)
            sent.append(Sent(value, partition, acks, invoke, done, offset, lost, time_s=now))
            if not troubled:
                hwm[partition] = offset + 1
        free[acks].append(process)

    t = 0.0
    for op_no in range(spec.ops):
        t += rng.expovariate(spec.rate)
        clock.run_until(t)
        if op_no % 6 == 5:
            if not consumer_busy[0]:
                consumer_busy[0] = True
                out.write(t, consumer, "invoke", "poll", topic=spec.topic)
                clock.at(t + rng.uniform(0.002, 0.02), poll_done)
            continue
        acks = ACKS_BY_PRODUCER[op_no % 3]
        value = op_no
        partition = rng.randrange(partitions)
        process = take(acks)
        invoke = out.write(t, process, "invoke", "send", topic=spec.topic,
                           partition=partition, acks=acks, value=value)
        troubled = partition == 0 and steps["T1"] <= t < steps["T4"]
        latency = rng.uniform(0.05, 0.4) if troubled else rng.uniform(0.001, 0.03)
        clock.at(t + latency, lambda now, a=(process, acks, partition, value, invoke):
                 send_done(now, *a))

    end = max(t, duration) + 1.0
    clock.run_until(end)
    final_polls: dict[int, list[tuple[int, int, int]]] = {}  # p -> (first, last, index)
    lost_values = {s.value for s in sent if s.lost}
    garbage_index = None
    t = end
    if spec.variant == "invalid" and poll_indices:
        out.write(t, consumer, "invoke", "poll", topic=spec.topic)
        garbage_index = out.write(t + 0.01, consumer, "ok", "poll", topic=spec.topic,
                                  records=[[1, 0, None]])
    final_parts = range(partitions - 1) if spec.variant == "unknown" else range(partitions)
    pid = next_pid[0] + 1
    t = end + 0.5
    for p in final_parts:
        kept = [v for v, _off, _sid in logs[p] if v not in lost_values]
        final_polls[p] = []
        for start in range(0, max(len(kept), 1), 500):
            chunk = kept[start:start + 500]
            records = [[p, offset, v] for offset, v in enumerate(chunk, start=start)]
            out.write(t, pid, "invoke", "poll", topic=spec.topic, final=True, partitions=[p])
            t += 0.01
            idx = out.write(t, pid, "ok", "poll", topic=spec.topic, final=True, partitions=[p],
                            records=records)
            final_polls[p].append((start, start + len(chunk), idx))
        pid += 1
    out.close('{"index": 99999999, "time": 1' if spec.variant == "unknown" else None)
    return {
        "sent": sent, "final_polls": final_polls, "observe": observe_indices,
        "garbage": garbage_index, "lines": out.index, "end": t,
    }


def _final_index(info: dict[str, Any], s: Sent) -> list[int]:
    chunks = info["final_polls"].get(s.partition) or []
    if not chunks:
        return []
    for first, last, idx in chunks:
        if first <= (s.offset or 0) < last:
            return [idx]
    return [chunks[-1][2]]


def _lost_example(info: dict[str, Any], s: Sent, topic: str) -> dict[str, Any]:
    return {"topic": topic, "partition": s.partition, "value": s.value, "offset": s.offset,
            "acks": s.acks, "ops": [s.invoke, s.done, *s.polls[:2], *_final_index(info, s)],
            "description": f"value {s.value} acked with acks={s.acks} at offset {s.offset} "
                           "is absent from the final log"}


def make_results(spec: RunSpec, info: dict[str, Any]) -> dict[str, Any]:
    """A hand-written results.json per docs/FORMATS.md for the variant."""
    sent: list[Sent] = info["sent"]
    lost = [s for s in sent if s.lost]
    by_acks = {a: sum(1 for s in lost if s.acks == a) for a in ACKS_BY_PRODUCER}
    ok_by_acks = {a: sum(1 for s in sent if s.acks == a) for a in ACKS_BY_PRODUCER}
    topic = spec.topic
    anomalies: dict[str, Any] = {}
    bad: list[str] = []
    if lost:
        # as the checker writes them: per partition, and per second of the run
        by_partition: dict[str, dict[str, int]] = {}
        seconds: dict[str, Counter] = {a: Counter() for a in ACKS_BY_PRODUCER}
        for s in lost:
            row = by_partition.setdefault(f"{topic}-{s.partition}",
                                          dict.fromkeys(ACKS_BY_PRODUCER, 0))
            row[s.acks] += 1
            seconds[s.acks][int(s.time_s)] += 1
        anomalies["lost-write"] = {
            "count": len(lost), "bad": by_acks["all"] if spec.variant == "invalid" else 0,
            "by_acks": by_acks, "by_partition": by_partition,
            "over_time": {a: sorted([sec, n] for sec, n in c.items())
                          for a, c in seconds.items()},
            "examples": [_lost_example(info, s, topic) for s in lost[:20]]}
    stats: dict[str, Any] = {
        "ops": {"send": {"ok": ok_by_acks}},
        "loss_rates": {a: (by_acks[a] / ok_by_acks[a] if ok_by_acks[a] else 0.0)
                       for a in ACKS_BY_PRODUCER},
        "sends_ok": ok_by_acks, "final_reads_complete": spec.variant != "unknown",
        "incomplete_partitions": [f"{topic}-2"] if spec.variant == "unknown" else [],
        "truncated_lines": 1 if spec.variant == "unknown" else 0,
        "history_lines": info["lines"], "faults": {"partition": 2, "page-cache-loss": 1},
        "checker_seconds": 1.5}
    guarantee = {f"{topic}-{p}": {"within_budget": True, "page_cache_losses": int(p == 0),
                                  "budget": 1, "acks_all_lost": by_acks["all"] if p == 0 else 0,
                                  "reason": "one page-cache loss, min.insync.replicas=2"}
                 for p in range(3)}
    if spec.variant == "valid":
        valid: Any = True
        reason = "no bad anomaly; acks=1 losses are expected under KIP-966"
    elif spec.variant == "invalid":
        valid = False
        reason = f"{by_acks['all']} acks=all writes lost within the fault budget"
        bad = ["lost-write", "lost-committed-read", "garbage-read"]
        seen = [s for s in lost if s.polls]
        anomalies["lost-committed-read"] = {
            "count": len(seen),
            "examples": [{**_lost_example(info, s, topic),
                          "description": f"value {s.value} was polled, then vanished"}
                         for s in seen[:20]]}
        anomalies["garbage-read"] = {"count": 1, "examples": [{
            "topic": topic, "partition": 1, "offset": 0, "ops": [info["garbage"]],
            "description": f"a polled record that no send wrote; error text {spec.error}"}]}
    else:
        valid = "unknown"
        reason = f"final reads of {topic}-2 incomplete; the history's last line was cut short"
        unseen = [s for s in sent if s.partition == 2][:3]
        anomalies["unseen"] = {"count": sum(1 for s in sent if s.partition == 2),
                               "examples": [_lost_example(info, s, topic) for s in unseen]}
    return {"valid": valid, "reason": reason, "anomaly_types": sorted(anomalies),
            "bad_anomaly_types": bad, "anomalies": anomalies, "stats": stats,
            "guarantee": guarantee,
            "test": {"elr_enabled": spec.elr, "kafka_version": "4.1.1", "seed": spec.seed}}


def make_test_json(spec: RunSpec, info: dict[str, Any]) -> dict[str, Any]:
    nodes = {f"controller-{i}": {"role": "controller", "id": 1000 + i,
                                 "address": f"10.213.77.{10 + i}"} for i in (1, 2, 3)}
    nodes.update({f"broker-{b}": {"role": "broker", "id": b, "address": f"10.213.77.{13 + b}"}
                  for b in BROKERS})
    args = ["run", "--nemesis", spec.test_name, "--seed", str(spec.seed)]
    if not spec.elr:
        args += ["--elr", "off"]
    return {
        "test": spec.test_name, "nemesis": spec.test_name, "seed": spec.seed,
        "kafka_version": "4.1.1", "kafka_dist": "maven:4.1.1", "elr_enabled": spec.elr,
        "idempotent_producers": False,
        "topics": {spec.topic: {"partitions": 3, "replication_factor": 3,
                                "min_insync_replicas": 2, "unclean_leader_election": False}},
        "nodes": nodes,
        "workload": {"producers": 3, "acks": list(ACKS_BY_PRODUCER), "consumers": 1,
                     "rate": spec.rate, "time_limit_s": spec.ops / spec.rate},
        "command": "harness " + " ".join(args), "cli_args": args,
        "started_at": "2025-11-21T16:00:00Z", "ended_at": "2025-11-21T16:02:10Z",
        "duration_s": round(info["end"], 1), "config": {},
    }


def make_metadata_log(spec: RunSpec, duration: float) -> list[dict[str, Any]]:
    """Controller records for the scenario, as FORMATS.md shapes DumpLogSegments output."""
    steps = _steps(duration)
    topic_id = "Zx9Qm1TzS4m0aBcDeFgHiA"
    records: list[dict[str, Any]] = []

    def rec(t: float, rtype: str, data: dict[str, Any]) -> None:
        records.append({"node": "controller-1", "offset": len(records),
                        "timestamp_ms": START_MS + int(t * 1000), "type": rtype, "version": 0,
                        "data": data})

    for b in BROKERS:
        rec(0, "REGISTER_BROKER_RECORD", {"brokerId": b, "brokerEpoch": 10 + b, "fenced": True})
        rec(0, "UNFENCE_BROKER_RECORD", {"id": b, "epoch": 10 + b})
    rec(0, "TOPIC_RECORD", {"name": spec.topic, "topicId": topic_id})
    for p in range(3):
        rec(0, "PARTITION_RECORD", {"partitionId": p, "topicId": topic_id, "replicas": [1, 2, 3],
                                    "isr": [1, 2, 3], "leader": p + 1, "leaderEpoch": 0,
                                    "eligibleLeaderReplicas": [], "lastKnownElr": []})
    rec(0.1, "FEATURE_LEVEL_RECORD", {"name": "eligible.leader.replicas.version",
                                      "featureLevel": int(spec.elr)})
    change = "PARTITION_CHANGE_RECORD"
    rec(steps["T0"] + 5, change, {"partitionId": 0, "topicId": topic_id, "isr": [1, 3],
                                  "leader": -2})
    rec(steps["T1"] + 5, change, {"partitionId": 0, "topicId": topic_id, "isr": [1],
                                  "eligibleLeaderReplicas": [3]})
    rec(steps["T2"] + 6, "FENCE_BROKER_RECORD", {"id": 1, "epoch": 11})
    rec(steps["T2"] + 6, change, {"partitionId": 0, "topicId": topic_id, "isr": [],
                                  "leader": -1, "eligibleLeaderReplicas": [1, 3]})
    rec(steps["T4"] + 1, "REGISTER_BROKER_RECORD", {"brokerId": 1, "brokerEpoch": 40,
                                                    "fenced": True})
    rec(steps["T4"] + 1, change, {"partitionId": 0, "topicId": topic_id, "leader": 3, "isr": [3],
                                  "eligibleLeaderReplicas": [], "lastKnownElr": [1]})
    rec(steps["T4"] + 2, "BROKER_REGISTRATION_CHANGE_RECORD", {"brokerId": 1, "brokerEpoch": 40,
                                                               "fenced": -1})
    rec(steps["full"], change, {"partitionId": 0, "topicId": topic_id, "isr": [1, 2, 3],
                                "lastKnownElr": []})
    return records


#: Small shuffles: the report tests' histories are small and the machine has 2 cores.
CHECKER_CONFIG = CheckerConfig(shuffle_partitions=2, quick_jit_below_bytes=0)  # as TEST_CONFIG
#: What the report reads of results.json's stats that the real checker counts.
CHECKER_COUNTS = ("ops", "history_lines", "truncated_lines")


def check_into_cache(run_dir: Path) -> dict[str, Any]:
    """Run the real checker on the run's history (writing its Parquet cache and
    report table beside it) and return its results; results.json is not touched."""
    test = json.loads((run_dir / "test.json").read_text())
    return check_history(run_dir / "history.jsonl", test, CHECKER_CONFIG)


def make_run(store: Path, spec: RunSpec | None = None) -> Path:
    """A complete run directory store/<test>/<run_name>/ for the spec; returns its path."""
    spec = spec or RunSpec()
    run_dir = store / spec.test_name / spec.run_name
    run_dir.mkdir(parents=True, exist_ok=True)
    info = generate_history(run_dir, spec)
    (run_dir / "test.json").write_text(json.dumps(make_test_json(spec, info), indent=1))
    if spec.with_results:
        results = make_results(spec, info)
        checked = check_into_cache(run_dir)
        results["stats"].update({k: checked["stats"][k] for k in CHECKER_COUNTS})
        (run_dir / "results.json").write_text(json.dumps(results, indent=1))
    if spec.with_metadata:
        controller = run_dir / "nodes" / "controller-1"
        controller.mkdir(parents=True, exist_ok=True)
        log = make_metadata_log(spec, spec.ops / spec.rate)
        (controller / "metadata-log.json").write_text(json.dumps(log))
    latest = store / "latest"
    if latest.is_symlink():
        latest.unlink()
    latest.symlink_to(run_dir.relative_to(store))
    return run_dir
