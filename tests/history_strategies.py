"""Hypothesis strategies for random histories that follow shared/HISTORY.md
(contract version 3), for property tests of the checkers against
tests/reference_checker.py.

A small model drives them: 1-2 topics of 1-3 partitions, each partition an
in-memory log of values; producers at acks 0/1/all whose sends end ok, fail,
info or never; consumers polling several partitions at once, with seeks and
batches; an observer reporting leader, epoch, ISR, ELR, last known ELR and at
times the high watermark, the fenced brokers, the replicas, the min ISR and the
ELR feature's level; a nemesis whose faults (page-cache losses and disk faults
on broker nodes among them) shrink and restore the ISR, and whose min ISR and
ELR feature changes (with their details, on the invoke, the completion or both)
move the budget;
final reads, complete or incomplete in each of the contract's ways; and at
times the collector's replica lines. Anomalies are injected at random (the
checkers decide what they amount to: the model predicts nothing). Lines carry
only the contract's fields, plus at random unknown extra fields, and at times
blank lines.

txn_histories() (contract version 4, at the end of this file) extends that model
with transactions; histories() draws what it always drew.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import strategies as st

ACKS = ("all", "1", "0")
ELR_FEATURE = "eligible.leader.replicas.version"
#: A broker a reassignment added to some observations' replicas, never in sync.
SPARE_BROKER = 9
#: Every field name of the contract: unknown extra fields never use one.
CONTRACT_FIELDS = frozenset((
    "index", "time", "process", "type", "f", "topic", "partition", "acks", "value", "offset",
    "error", "records", "high_watermark", "final", "seek", "fault", "nodes", "detail",
    "leader", "leader_epoch", "isr", "elr", "last_known_elr", "fenced", "node", "broker",
    "log_end_offset", "min_isr", "replicas", "elr_feature"))
EXTRA_FIELDS = ("retries", "client_id", "attempt", "note", "latency_ms", "assigned")
TOPICS = ("t", "u")


@dataclass
class GeneratedHistory:
    """A test.json dict (None: no test.json) and the history's lines in file order: a
    dict is a line of JSON, a str a raw line (blank, cut short or malformed)."""

    test: dict | None
    lines: list[dict | str] = field(default_factory=list)

    def text(self) -> str:
        return "".join((line if isinstance(line, str) else json.dumps(line)) + "\n"
                       for line in self.lines)

    def write(self, directory: Path) -> Path:
        """history.jsonl (and test.json when there is one) in directory; the history's
        path."""
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / "history.jsonl"
        path.write_text(self.text(), encoding="utf-8")
        if self.test is not None:
            (directory / "test.json").write_text(json.dumps(self.test))
        return path

    def __repr__(self) -> str:
        return (f"GeneratedHistory(test={json.dumps(self.test)}, lines=\n"
                + self.text() + ")")


# -- the model ---------------------------------------------------------------------------


@dataclass
class _Producer:
    pid: int
    acks: str
    #: (value, topic, partition) of the send in flight
    pending: tuple[int, str, int] | None = None


@dataclass
class _Consumer:
    pid: int
    topic: str
    pos: dict[int, int] = field(default_factory=dict)
    pending: bool = False


class _Model:
    def __init__(self, draw, test: dict | None, parts: dict[str, int], broker_ids: list[int],
                 min_isr: int, inject: bool) -> None:
        self.draw = draw
        #: False: a clean run (no injected anomaly, no unclean loss)
        self.inject = inject
        #: a restarted broker the observations keep in the ELR (restart_step, injected)
        self.kept: int | None = None
        self.test = test
        self.parts = parts
        self.keys = [(t, p) for t, n in parts.items() for p in range(n)]
        self.logs: dict[tuple[str, int], list[int | None]] = {k: [] for k in self.keys}
        self.brokers = broker_ids
        self.min_isr = min_isr
        #: the ELR feature's level as the cluster has it (0: KIP-966 off)
        self.elr_level = 1
        self.alive = set(broker_ids)
        self.epoch = 1
        self.last_elr: dict[tuple[str, int], list[int]] = {k: [] for k in self.keys}
        #: each partition's last observation (an election from its ELR follows one)
        self.last_observed: dict[tuple[str, int], dict] = {}
        self.observed_hwm: dict[tuple[str, int], int] = {}
        self.lines: list[dict] = []
        self.next_value = 1
        self.next_pid = 0
        self.producers = [_Producer(self.pid(), acks) for acks in ACKS]
        self.consumers = [_Consumer(self.pid(), t) for t in (*parts, TOPICS[0])]
        self.failed_values: list[tuple[int, tuple[str, int]]] = []

    def pid(self) -> int:
        self.next_pid += 1
        return self.next_pid - 1

    def emit(self, **line) -> dict:
        self.lines.append(line)
        return line

    def key(self) -> tuple[str, int]:
        return self.draw(st.sampled_from(self.keys))

    # -- producers

    def send_step(self) -> None:
        prod = self.producers[self.draw(st.integers(0, len(self.producers) - 1))]
        if prod.pending is None:
            topic, p = self.key()
            value = self.next_value
            self.next_value += 1
            prod.pending = (value, topic, p)
            self.emit(process=prod.pid, type="invoke", f="send", topic=topic, partition=p,
                      acks=prod.acks, value=value)
            return
        outcomes = ["ok", "ok", "ok", "ok", "fail", "info"]
        if self.inject:
            outcomes += ["ok-wrong-offset", "fail-appended"]
        self.complete_send(prod, self.draw(st.sampled_from(outcomes)))

    def complete_send(self, prod: _Producer, outcome: str) -> None:
        value, topic, p = prod.pending
        prod.pending = None
        log = self.logs[(topic, p)]
        head = {"process": prod.pid, "f": "send", "topic": topic, "partition": p,
                "acks": prod.acks, "value": value}
        if outcome.startswith("ok"):
            log.append(value)
            offset = len(log) - 1
            if outcome == "ok-wrong-offset":  # the ack names another record's offset
                offset = self.draw(st.integers(0, len(log)))
            self.emit(**head, type="ok", offset=None if prod.acks == "0" else offset)
        elif outcome.startswith("fail"):
            if outcome == "fail-appended":  # a failed send that made it after all
                log.append(value)
            self.failed_values.append((value, (topic, p)))
            self.emit(**head, type="fail", error="NOT_ENOUGH_REPLICAS")
        else:
            if self.draw(st.booleans()):
                log.append(value)
            self.emit(**head, type="info", error="REQUEST_TIMED_OUT")
            prod.pid = self.pid()  # Jepsen: after info a new process id

    # -- consumers

    def poll_step(self) -> None:
        con = self.consumers[self.draw(st.integers(0, len(self.consumers) - 1))]
        parts = range(self.parts[con.topic])
        if not con.pending:
            line = {"process": con.pid, "type": "invoke", "f": "poll", "topic": con.topic}
            if self.draw(st.integers(0, 3)) == 0 or not con.pos:
                sought = self.draw(st.lists(st.sampled_from(list(parts)), unique=True,
                                            max_size=len(parts)))
                if sought:
                    seek = {p: self.draw(st.integers(0, len(self.logs[(con.topic, p)])))
                            for p in sought}
                    con.pos.update(seek)
                    line["seek"] = {str(p): o for p, o in seek.items()}
            self.emit(**line)
            con.pending = True
            return
        self.complete_poll(con)

    def complete_poll(self, con: _Consumer) -> None:
        parts = range(self.parts[con.topic])
        con.pending = False
        outcome = self.draw(st.sampled_from(["ok"] * 6 + ["fail", "info"]))
        head = {"process": con.pid, "f": "poll", "topic": con.topic}
        if outcome != "ok":
            self.emit(**head, type=outcome, error="NOT_COORDINATOR")
            if outcome == "info":
                con.pid, con.pos = self.pid(), {}
            return
        records = []
        order = self.draw(st.permutations(list(parts)))
        for p in order:
            log = self.logs[(con.topic, p)]
            at = con.pos.get(p, 0)
            batch = self.draw(st.integers(0, 3))
            for o in range(at, min(at + batch, len(log))):
                records.append([p, o, log[o]])
            con.pos[p] = max(at, min(at + batch, len(log)))
        if records and self.inject and self.draw(st.integers(0, 3)) == 3:
            records = self.misread(con.topic, records)
        line = {**head, "type": "ok", "records": records}
        if self.draw(st.booleans()):
            shown = self.draw(st.lists(st.sampled_from(list(parts)), unique=True))
            line["high_watermark"] = {str(p): len(self.logs[(con.topic, p)]) for p in shown}
        self.emit(**line)

    def misread(self, topic: str, records: list[list]) -> list[list]:
        """One injected consumer anomaly in a poll's records."""
        i = self.draw(st.integers(0, len(records) - 1))
        p, o, v = records[i]
        kind = self.draw(st.sampled_from(["back", "skip", "garbage", "other-value",
                                          "failed-value"]))
        records = [list(r) for r in records]
        if kind == "back":
            records.insert(i + 1, [p, max(0, o - self.draw(st.integers(0, 2))), v])
        elif kind == "skip":
            records[i] = [p, o + self.draw(st.integers(1, 2)), v]
        elif kind == "garbage":
            records[i] = [p, o, None]
        elif kind == "other-value":
            log = self.logs[(topic, p)]
            records[i] = [p, o, self.draw(st.sampled_from(log))] if log else records[i]
        elif self.failed_values:
            value, _ = self.draw(st.sampled_from(self.failed_values))
            records[i] = [p, o, value]
        return records

    # -- observer and nemesis

    def isr(self) -> list[int]:
        return sorted(self.alive)

    def observe_step(self) -> None:
        topic, p = self.key()
        isr = self.isr()
        elr = [] if len(isr) >= self.min_isr else sorted(set(self.brokers) - self.alive)
        if isr:
            self.last_elr[(topic, p)] = []
        lkelr = list(self.last_elr[(topic, p)]) if not isr else []
        if not isr:
            lkelr, elr = (elr or [self.brokers[0]]), []
        if not self.elr_level:  # KIP-966 off: the controller cleared them
            elr, lkelr = [], []
        leader = isr[0] if isr else -1
        line = {"process": -2, "type": "ok", "f": "observe", "topic": topic, "partition": p,
                "leader": leader, "leader_epoch": self.epoch, "isr": isr, "elr": elr,
                "last_known_elr": lkelr}
        hwm = len(self.logs[(topic, p)])
        kinds = ["plain"] * 8 + ["no-hwm", "fenced", "elr-null", "isr-null", "leaderless-elr",
                                 "from-elr", "elect"]
        if self.inject:
            kinds += ["hwm-drop", "overlap", "elr-full", "fenced-leader", "lkelr-bad",
                      "lkelr-full", "dropped", "kept-unclean"]
        kind = self.draw(st.sampled_from(kinds))
        self.kip966_state(line, kind)
        self.settings(line, kind)
        if kind != "no-hwm":
            if kind == "hwm-drop":
                hwm = max(0, self.observed_hwm.get((topic, p), hwm) - 1)
            line["high_watermark"] = hwm
            self.observed_hwm[(topic, p)] = hwm
        if kind == "overlap" and isr:
            line["elr"] = [isr[-1]]
        elif kind == "elr-full":
            line["elr"] = [self.brokers[-1]]
        elif kind == "fenced":
            line["fenced"] = sorted(set(self.brokers) - self.alive)
        elif kind == "fenced-leader" and line["leader"] >= 0:  # [-1] would be malformed
            line["fenced"] = [line["leader"]]
        elif kind == "lkelr-full" and isr:
            line["last_known_elr"] = [self.brokers[-1]]
        elif kind == "lkelr-bad":
            line.update(leader=-1, isr=[], elr=[],
                        last_known_elr=[self.draw(st.sampled_from([-1, 7, self.brokers[1]]))])
        elif kind == "elr-null":
            line.update(elr=None, last_known_elr=None)
        elif kind == "isr-null":
            line["isr"] = None
        elif kind == "kept-unclean" and self.alive and line["elr"] is not None:
            # a running broker (perhaps restarted after a kill) kept in the ELR
            line["elr"] = sorted({*line["elr"], self.draw(st.sampled_from(sorted(self.alive)))})
        if self.kept in self.alive and line["elr"] is not None:
            line["elr"] = sorted({*line["elr"], self.kept})
        if "fenced" not in line and (self.test or {}).get("observer") \
                and self.draw(st.integers(0, 3)) > 0:
            # an observer that reads the fenced list (test.json's `observer`) says it
            # on most lines: the brokers down
            line["fenced"] = sorted(set(self.brokers) - self.alive)
        self.last_observed[(topic, p)] = self.emit(**line)

    def kip966_state(self, line: dict, kind: str) -> None:
        """At times the states KIP-966 coverage counts (docs/CHECKING.md): a leaderless
        partition with ELR members (some of them fenced, or not said), and an election
        of a member of the ELR the partition's last observation had with an empty ISR."""
        key = (line["topic"], line["partition"])
        if kind == "leaderless-elr" and self.elr_level:
            elr = self.draw(st.lists(st.sampled_from(self.brokers), min_size=1, max_size=2,
                                     unique=True))
            line.update(leader=-1, isr=[], elr=sorted(elr), last_known_elr=[])
            fenced = self.draw(st.one_of(st.none(), st.lists(st.sampled_from(self.brokers),
                                                             max_size=3, unique=True)))
            if fenced is not None:
                line["fenced"] = sorted(fenced)
        prev = self.last_observed.get(key)
        if kind == "from-elr" and prev is not None and prev["isr"] == [] and prev["elr"]:
            leader = self.draw(st.sampled_from(prev["elr"]))
            line.update(leader=leader, isr=[leader], elr=[], last_known_elr=[])
        if kind == "elect" and prev is not None and prev["leader"] == -1 and prev["elr"]:
            # one election (epoch + 1): of an ELR member, or of another broker
            leader = self.draw(st.sampled_from([*prev["elr"], *self.brokers]))
            line.update(leader=leader, leader_epoch=prev["leader_epoch"] + 1, isr=[leader],
                        elr=[b for b in prev["elr"] if b != leader], last_known_elr=[])
        if kind == "dropped" and prev is not None and prev["isr"] is not None \
                and prev["elr"] is not None:
            # a member of the last ISR or ELR gone from both, below min ISR
            members = sorted({*prev["isr"], *prev["elr"]})
            if members:
                keep = members[:self.draw(st.integers(0, len(members) - 1))]
                line.update(isr=keep[:1], elr=keep[1:2], leader=keep[0] if keep else -1)

    def settings(self, line: dict, kind: str) -> None:
        """At times the observe fields of contract version 3: replicas, the min ISR in
        effect (the observer's word, which may differ from test.json's), the ELR
        feature's level; and, injected, an ELR outside the replicas or ELR while
        the feature is off."""
        if self.draw(st.booleans()):
            # the replicas in force: the brokers; or, as a reassignment leaves them,
            # only the members the observation names (below the replication factor)
            # or the brokers and a spare not in sync: each ends a budget window
            # (a full ISR) by its own rule
            named = sorted({*line["isr"], *line["elr"], *line["last_known_elr"]})
            line["replicas"] = self.draw(st.sampled_from(
                [list(self.brokers)] * 4 + [named or list(self.brokers),
                                            [*self.brokers, SPARE_BROKER]]))
        if self.draw(st.booleans()):
            line["min_isr"] = self.min_isr
        if self.draw(st.booleans()):
            line["elr_feature"] = self.elr_level
        if self.inject and self.draw(st.integers(0, 5)) == 0:
            if self.draw(st.booleans()):
                line["replicas"] = self.brokers[:-1]
                line["elr"] = [self.brokers[-1]]
            else:
                line["elr_feature"] = 0
                line["last_known_elr"] = [self.brokers[0]]

    def restart_step(self) -> None:
        """A broker's shutdown, observed while it is down, its node started, then
        observed again: the path elr-member-unclean judges (the observations and the
        faults' outcomes drawn as the other steps draw them)."""
        node = [self.draw(st.sampled_from([f"broker-{i}" for i in (1, 2, 3)]))]
        self.fault_step(self.draw(st.sampled_from(["kill", "page-cache-loss", "stop"])), node)
        self.observe_step()
        self.fault_step("start", node)
        # injected: a Kafka that keeps the restarted broker in the ELR
        self.kept = self.brokers[int(node[0][-1]) - 1] \
            if self.inject and self.draw(st.booleans()) else None
        for _ in range(self.draw(st.integers(1, 2))):
            self.observe_step()
        self.kept = None

    def fault_step(self, fault: str | None = None, nodes: list[str] | None = None) -> None:
        fault = fault or self.draw(st.sampled_from(["page-cache-loss", "page-cache-loss", "kill",
                                           "partition", "start", "heal", "pause",
                                           "disk-fault", "min-isr-change", "feature-change",
                                           "slow-network", "reassign", "stop",
                                           "controller-kill"]))
        names = [f"broker-{i}" for i in (1, 2, 3)] + ["controller-1"]
        nodes = nodes or self.draw(st.lists(st.sampled_from(names), min_size=1, max_size=2,
                                   unique=True))
        outcome = self.draw(st.sampled_from(["ok", "ok", "ok", "info", "fail"]))
        detail = self.detail(fault)
        # every line of a kind with a documented detail carries it (HISTORY.md); at
        # times the completion's word differs, and wins
        changed = detail is not None and self.draw(st.integers(0, 3)) == 0
        invoke = {"process": -1, "type": "invoke", "f": "fault", "fault": fault, "nodes": nodes}
        if detail is not None:
            invoke["detail"] = self.detail(fault) if changed else detail
        self.emit(**invoke)
        if self.draw(st.integers(0, 4)) == 0:
            self.observe_step()  # an observation while the fault is under way
        if self.draw(st.integers(0, 9)) == 0:
            return  # never completed
        line = {"process": -1, "type": outcome, "f": "fault", "fault": fault, "nodes": nodes}
        if fault == "page-cache-loss" and outcome != "fail":
            line["detail"] = {"bytes_dropped": {"/data/kafka/t-0/0.log": 4096}}
        if detail is not None:
            line["detail"] = detail
        self.emit(**line)
        ids = {self.brokers[int(n[-1]) - 1] for n in nodes if n.startswith("broker-")}
        if outcome == "fail":
            return
        if fault == "min-isr-change":
            # the topics' own min ISR (test.json gives it) wins over the cluster default
            if (outcome == "ok" and type(detail["to"]) is int and detail["to"] in (1, 2, 3)
                    and (detail["topic"] in self.parts
                         or (detail["topic"] is None and not self.test))):
                self.min_isr = detail["to"]
            return
        if fault == "feature-change":
            if (outcome == "ok" and detail["feature"] == ELR_FEATURE
                    and type(detail["to"]) is int and detail["to"] in (0, 1)):
                self.elr_level = detail["to"]
            return
        if fault in ("slow-network", "reassign", "controller-kill"):
            return
        if fault in ("start", "heal"):
            self.alive |= ids
        else:
            self.alive -= ids
        self.epoch += 1

    def detail(self, fault: str) -> dict | None:
        """The detail of a fault of contract version 3 (None for the others): at
        times with a value of the right type that the checkers must ignore (a min
        ISR beyond any int32, a feature level above 1)."""
        draw = self.draw

        def odd_or(usual, odd):
            """Mostly a usual value, at times one the checkers must ignore."""
            return draw(st.sampled_from(odd)) if draw(st.integers(0, 5)) == 0 else draw(usual)

        if fault == "min-isr-change":
            topic = draw(st.sampled_from([*self.parts, *self.parts, None, "elsewhere"]))
            return {"topic": topic, "from": odd_or(st.just(self.min_isr), [2 ** 31, 9]),
                    "to": odd_or(st.integers(1, 3), [2 ** 31, 9])}
        if fault == "feature-change":
            feature = draw(st.sampled_from([ELR_FEATURE, ELR_FEATURE, "metadata.version"]))
            return {"feature": feature, "from": self.elr_level,
                    "to": odd_or(st.integers(0, 1), [2, 7])}
        if fault == "disk-fault":
            return {"error": draw(st.sampled_from(["EIO", "ENOSPC"])),
                    "dropped": draw(st.sampled_from([True, True, False]))}
        if fault == "slow-network":
            return {"rate": "200kbit", "loss": 0.2}
        if fault == "reassign":
            topic, p = self.key()
            return {"topic": topic, "partition": p, "replicas": list(self.brokers)}
        return None

    # -- log injections

    def log_step(self) -> None:
        if not self.inject:
            return
        key = self.key()
        log = self.logs[key]
        kind = self.draw(st.sampled_from(["truncate", "duplicate", "swap", "garbage"]))
        if not log:
            return
        if kind == "truncate":  # an unclean election: the new leader's log is shorter
            del log[len(log) - self.draw(st.integers(1, min(3, len(log)))):]
        elif kind == "duplicate":
            log.append(self.draw(st.sampled_from([v for v in log if v is not None] or [None])))
        elif kind == "swap":
            i = self.draw(st.integers(0, len(log) - 1))
            j = self.draw(st.integers(0, len(log) - 1))
            log[i], log[j] = log[j], log[i]
        else:
            log.append(None)  # bytes this run never wrote


# -- final reads and replica lines -------------------------------------------------------


def _final_reads(m: _Model, topic: str) -> list[dict]:
    """The final reads of one topic's partitions by one or two readers, each complete
    or incomplete in one of the contract's ways; returns the invokes left open, which
    go at the very end of the history."""
    draw = m.draw
    parts = list(range(m.parts[topic]))
    split = draw(st.integers(1, len(parts)))
    groups = [g for g in (parts[:split], parts[split:]) if g]
    tail: list[dict] = []
    for group in groups:
        modes = ["complete"] * 4 + ["retried", "retried-info", "no-seek", "hwm-some"]
        if m.inject:
            modes += ["no-ok", "short", "open", "hole", "moved"]
        mode = draw(st.sampled_from(modes))
        pid = m.pid()
        head = {"f": "poll", "topic": topic, "final": True}
        if mode in ("retried", "retried-info", "no-ok"):
            outcome = "info" if mode == "retried-info" else "fail"
            m.emit(process=pid, type="invoke", **head, seek={str(p): 0 for p in group})
            m.emit(process=pid, type=outcome, **head, error="BROKER_NOT_AVAILABLE")
            if mode == "no-ok":
                continue
            if outcome == "info":
                pid = m.pid()  # after info a new process id
        logs = {p: list(enumerate(m.logs[(topic, p)])) for p in group}
        p = draw(st.sampled_from(group))
        if mode == "hole" and logs[p]:  # an entry missing from the final log
            del logs[p][draw(st.integers(0, len(logs[p]) - 1))]
        elif mode == "moved" and logs[p]:  # an entry found at another offset
            i = draw(st.integers(0, len(logs[p]) - 1))
            logs[p][i] = (logs[p][i][0] + draw(st.integers(1, 2)), logs[p][i][1])
            logs[p].sort(key=lambda r: r[0])
        elif mode == "short":  # the reader stops short of the high watermark
            logs[p] = logs[p][:draw(st.integers(0, max(0, len(logs[p]) - 1)))]
        batch = draw(st.integers(1, 4))
        pos = dict.fromkeys(group, 0)
        first = True
        while True:
            invoke = {"process": pid, "type": "invoke", **head}
            if first and mode != "no-seek":
                invoke["seek"] = {str(q): 0 for q in group}
            records = []
            for q in group:
                rest = [r for r in logs[q] if r[0] >= pos[q]][:batch]
                records += [[q, o, v] for o, v in rest]
                if rest:
                    pos[q] = rest[-1][0] + 1
            m.emit(**invoke)
            done = {"process": pid, "type": "ok", **head, "records": records}
            if mode != "no-seek" or not records:
                shown = group if mode != "hwm-some" else group[:1]
                done["high_watermark"] = {str(q): len(m.logs[(topic, q)]) for q in shown}
            m.emit(**done)
            first = False
            if not records:
                break
        if mode == "open":
            open_invoke = {"process": pid, "type": "invoke", **head}
            if draw(st.booleans()):
                open_invoke["seek"] = {str(q): 0 for q in group}
            tail.append(open_invoke)
    return tail


def _replicas(m: _Model) -> None:
    draw = m.draw
    for (topic, p), log in m.logs.items():
        if not draw(st.booleans()):
            continue
        for name, broker in zip(("broker-1", "broker-2", "broker-3"), m.brokers, strict=True):
            records = [[o, v, 1] for o, v in enumerate(log)]
            kinds = ["same"] * 5 + ["no-hwm", "short-hwm"]
            if m.inject:
                kinds += ["changed", "missing"]
            kind = draw(st.sampled_from(kinds))
            hwm: int | None = len(log)
            if kind == "changed" and records:
                i = draw(st.integers(0, len(records) - 1))
                records[i][1] = draw(st.sampled_from([None, 10_000 + i]))
            elif kind == "missing" and records:
                del records[draw(st.integers(0, len(records) - 1))]
            elif kind == "no-hwm":
                hwm = None
            elif kind == "short-hwm":
                hwm = draw(st.integers(0, len(log)))
            line = {"process": -3, "type": "ok", "f": "replica", "topic": topic,
                    "partition": p, "node": name, "broker": broker,
                    "log_end_offset": len(records), "records": records}
            if hwm is not None:
                line["high_watermark"] = hwm
            m.emit(**line)


# -- the strategies ------------------------------------------------------------------------

_STEPS = ["send"] * 6 + ["poll"] * 4 + ["observe"] * 2 + ["fault", "fault", "log", "restart"]


@st.composite
def test_jsons(draw) -> tuple[dict | None, dict[str, int], list[int], int]:
    """(test.json or None, partitions per topic, broker ids of broker-1..3, min ISR)."""
    n_topics = draw(st.integers(1, 2))
    parts = {t: draw(st.integers(1, 3)) for t in TOPICS[:n_topics]}
    if draw(st.integers(0, 5)) == 0:
        return None, parts, [1, 2, 3], 2
    ids = draw(st.sampled_from([[1, 2, 3], [101, 102, 103]]))
    min_isr = draw(st.integers(1, 3))
    nodes = {f"broker-{i}": {"role": "broker", "id": ids[i - 1]} for i in (1, 2, 3)}
    nodes["controller-1"] = {"role": "controller", "id": 1000}
    topics = {t: {"partitions": n + (draw(st.integers(0, 7)) == 7),
                  "replication_factor": 3, "min_insync_replicas": min_isr,
                  "unclean_leader_election": draw(st.booleans())}
              for t, n in parts.items()}
    test = {"topics": topics, "elr_enabled": True,
            "idempotent_producers": draw(st.booleans()), "nodes": nodes,
            "seed": draw(st.integers(0, 1000)), "kafka_version": "4.1.1"}
    return test, parts, ids, min_isr


@st.composite
def histories(draw, max_steps: int = 80) -> GeneratedHistory:
    """A random history that follows the contract (with, at times, a cut-short last
    line: the one malformed line the contract allows)."""
    test, parts, ids, min_isr = draw(test_jsons())
    if test is not None and draw(st.integers(0, 2)) < 2:
        # how the observer read (contract v4): elr-member-unclean judged when both
        test["observer"] = draw(st.sampled_from([
            {"fenced_first": True, "same_broker": True},
            {"fenced_first": True, "same_broker": False},
            {"fenced_first": False, "same_broker": True}]))
    m = _Model(draw, test, parts, ids, min_isr, inject=draw(st.integers(0, 2)) > 0)
    for _ in range(draw(st.integers(min(8, max_steps), max_steps))):
        getattr(m, f"{draw(st.sampled_from(_STEPS))}_step")()
    # wind down: some sends and polls complete, the others never do
    for prod in m.producers:
        if prod.pending is not None and draw(st.booleans()):
            m.complete_send(prod, draw(st.sampled_from(["ok", "fail", "info"])))
    for con in m.consumers:
        if con.pending and draw(st.booleans()):
            m.complete_poll(con)
    if draw(st.booleans()):  # healed: a full ISR observed
        m.alive = set(m.brokers)
        for _ in range(draw(st.integers(1, 2))):
            m.observe_step()
    tail = []
    for topic in parts:
        tail += _final_reads(m, topic)
    if draw(st.booleans()):
        _replicas(m)
    m.lines += tail
    return _dress(draw, test, m.lines)


def _dress(draw, test: dict | None, lines: list[dict]) -> GeneratedHistory:
    """Index and time in file order, unknown extra fields, blank lines, and at times a
    cut-short last line."""
    out: list[dict | str] = []
    time = 0
    times: list[int] = []
    #: txn completions whose end_time is the time of a line (the model's _END_AT)
    ends: list[tuple[dict, int]] = []
    for i, line in enumerate(lines):
        time += draw(st.sampled_from([0, 1, 1000, 1000]))
        time += line.pop(_GAP, 0)  # the txn model's final observations: a clock jump
        end_at = line.pop(_END_AT, None)
        line = {"index": i, "time": time, **line}
        times.append(time)
        if end_at is not None:
            ends.append((line, end_at))
        if draw(st.integers(0, 9)) == 9:
            name = draw(st.sampled_from(EXTRA_FIELDS))
            line[name] = draw(st.sampled_from([None, 3, "x", [1, "y"], {"a": 1.5}]))
        if draw(st.integers(0, 19)) == 19:
            out.append(draw(st.sampled_from(["", "  ", "\t"])))
        out.append(line)
    for line, end_at in ends:  # commit (or abort) was called just after line end_at - 1
        line["end_time"] = times[end_at - 1] if end_at > 0 else 0
    if lines and draw(st.integers(0, 11)) == 11:
        cut = json.dumps({"index": len(lines), "time": time + 1, "process": -2, "type": "ok",
                          "f": "observe", "topic": "t", "partition": 0, "leader": 1})
        out.append(cut[:draw(st.integers(1, len(cut) - 2))])
        if draw(st.booleans()):
            out.append("")
    return GeneratedHistory(test, out)


#: Ways to break one line, as (name, function of the line's dict -> the line's text).
def _text_with(line: dict, name: str, raw: str) -> str:
    """line's JSON with field name's value written as the raw JSON text raw."""
    marked = {**line, name: "@@MARK@@"}
    return json.dumps(marked).replace('"@@MARK@@"', raw)


def _breakers(line: dict) -> list[tuple[str, str]]:
    out = [("not-json", json.dumps(line)[:-1]), ("array", "[]"), ("number", "3"),
           ("string", '"x"'), ("null", "null"),
           ("big-int", _text_with(line, "time", str(1 << 64))),
           ("fraction", _text_with(line, "time", "1.5")),
           ("exponent", _text_with(line, "time", "1e3")),
           ("int-as-text", _text_with(line, "process", '"3"')),
           ("bool-as-int", _text_with(line, "index", "true")),
           ("bad-type", _text_with(line, "type", '"done"')),
           ("no-f", json.dumps({k: v for k, v in line.items() if k != "f"})),
           ("null-time", _text_with(line, "time", "null")),
           ("f-int", _text_with(line, "f", "1"))]
    f = line.get("f")
    if "topic" in line:
        out += [("topic-int", _text_with(line, "topic", "5"))]
    if line.get("error") is not None:
        out += [("error-int", _text_with(line, "error", "3"))]
    if f == "send":
        out += [("big-value", _text_with(line, "value", str(-(1 << 63) - 1))),
                ("acks-2", _text_with(line, "acks", '"2"')),
                ("no-value", json.dumps({k: v for k, v in line.items() if k != "value"}))]
        if line["type"] == "ok" and line.get("acks") != "0":
            out.append(("null-offset", _text_with(line, "offset", "null")))
        if line["type"] == "ok":
            out.append(("negative-offset", _text_with(line, "offset", "-1")))
    if f == "poll" and line["type"] == "ok":
        out += [("negative-record-offset", _text_with(line, "records", "[[0, -3, 2]]")),
                ("negative-hwm", _text_with(line, "high_watermark", '{"0": -1}')),
                ("short-record", _text_with(line, "records", "[[0, 1]]")),
                ("record-text", _text_with(line, "records", '[[0, "1", 2]]')),
                ("hwm-key", _text_with(line, "high_watermark", '{"p0": 1}')),
                ("hwm-int", _text_with(line, "high_watermark", "3")),
                ("no-records", json.dumps({k: v for k, v in line.items()
                                           if k != "records"}))]
    if f == "poll" and line["type"] == "invoke":
        out += [("seek-key", _text_with(line, "seek", '{"first": 0}')),
                ("seek-value", _text_with(line, "seek", '{"0": 0.5}')),
                ("seek-negative", _text_with(line, "seek", '{"0": -2}')),
                ("final-text", _text_with(line, "final", '"true"'))]
    if f == "observe":
        out += [("min-isr-0", _text_with(line, "min_isr", "0")),
                ("min-isr-negative", _text_with(line, "min_isr", "-5")),
                ("feature-negative", _text_with(line, "elr_feature", "-1")),
                ("isr-minus-one", _text_with(line, "isr", "[-1]")),
                ("replicas-negative", _text_with(line, "replicas", "[1, -2]")),
                ("fenced-minus-one", _text_with(line, "fenced", "[-1]")),
                ("leader-minus-two", _text_with(line, "leader", "-2")),
                ("lkelr-minus-two", _text_with(line, "last_known_elr", "[-2]")),
                ("observe-negative-hwm", _text_with(line, "high_watermark", "-4")),
                ("isr-text", _text_with(line, "isr", '["1"]')),
                ("hwm-object", _text_with(line, "high_watermark", '{"0": 1}')),
                ("observe-invoke", _text_with(line, "type", '"invoke"'))]
    if f == "fault":
        documented = {"min-isr-change": ("to", "0"), "feature-change": ("from", '"1"'),
                      "disk-fault": ("dropped", '"true"'), "reassign": ("partition", "null")}
        if line.get("fault") in documented:
            key, raw = documented[line["fault"]]
            detail = {**(line.get("detail") or {}), key: "@@KEY@@"}
            out += [("detail-missing", json.dumps({k: v for k, v in line.items()
                                                   if k != "detail"})),
                    ("detail-key-bad", json.dumps({**line, "detail": detail})
                     .replace('"@@KEY@@"', raw))]
        out += [("nodes-int", _text_with(line, "nodes", "[2]")),
                ("detail-list", _text_with(line, "detail", "[1]")),
                ("fault-int", _text_with(line, "fault", "7"))]
    if f == "replica":
        out += [("replica-null-offset", _text_with(line, "records", "[[null, 1, 1]]")),
                ("replica-negative-offset", _text_with(line, "records", "[[-1, 1, 1]]")),
                ("replica-negative-leo", _text_with(line, "log_end_offset", "-1")),
                ("replica-broker-negative", _text_with(line, "broker", "-1"))]
    return out


@st.composite
def malformed_histories(draw) -> tuple[GeneratedHistory, int, str]:
    """A history with one malformed line that is not a cut-short last line: (the
    history, the malformed line's 1-based number, how it was broken)."""
    history = draw(histories(max_steps=15))
    lines = [line for line in history.lines if not (isinstance(line, str) and line.strip())]
    history.lines = lines  # no cut-short last line: the broken one must be named
    objects = [i for i, line in enumerate(lines) if isinstance(line, dict)]
    at = draw(st.sampled_from(objects)) if objects else 0
    if not objects:
        lines.append({"index": 0, "time": 0, "process": 0, "type": "invoke", "f": "poll",
                      "topic": "t"})
    name, text = draw(st.sampled_from(_breakers(lines[at])))
    if name == "not-json" and at == max(i for i, line in enumerate(lines)
                                        if isinstance(line, dict)):
        lines.append({"index": 99, "time": 10**9, "process": -2, "type": "ok", "f": "observe",
                      "topic": "t", "partition": 0, "leader": 1, "leader_epoch": 1})
    lines[at] = text
    return history, at + 1, name


# -- contract version 4: transactions -------------------------------------------------------
#
# txn_histories() extends the model above with HISTORY.md's "Transactions (v4)":
# transactional producers whose transactions send across partitions and end ok,
# fail, info or never (some meant to abort), each value landing in its partition's
# log as an open record that a commit or abort marker (a control record, which no
# consumer returns but which takes an offset) later settles; a producer that ends
# info is replaced by a new instance, at times of the same transactional.id, whose
# start settles the old one's dangling transaction (commit only if commit had been
# called), and a coordinator that at times settles a dangling one on its own
# (timeout). read_committed consumers read up to the last stable offset (the first
# open record), beside the read_uncommitted ones; the observer at times says the
# LSO and the open transactions' first offsets; the final reads are made at both
# isolations with positions; test.json has "transactions". As above, the model
# predicts nothing: anomalies are injected at random (a marker lost, a commit that
# lands as an abort or half of one, a value dropped, an aborted or open record
# returned to a read_committed reader, a wrong delivery offset, an end_time
# missing, a final read short of the LSO) and the checkers decide.

#: Private keys of the model's lines, consumed by _dress: a clock jump in ns before
#: the line, and the position of the line after which commit (or abort) was called
#: (the completion's end_time is that line's predecessor's time).
_GAP = "_gap"
_END_AT = "_end_at"
#: Version 4's field names (CONTRACT_FIELDS holds version 3's).
V4_FIELDS = frozenset((
    "txn_id", "sends", "abort", "inputs", "group", "commit_offsets", "offsets", "end_time",
    "client", "isolation", "position", "last_stable_offset", "open_txn_offsets",
    "group_offsets"))
TXN_CLIENTS = ("java", "librdkafka")
_TXN_ERRORS = {
    "fail": ("INVALID_TXN_STATE", "NOT_ENOUGH_REPLICAS", "PRODUCER_FENCED"),
    "info": ("REQUEST_TIMED_OUT", "TRANSACTION_TIMED_OUT", "COORDINATOR_NOT_AVAILABLE")}


class _Control:
    """A commit or abort marker in a model log: an offset no consumer returns."""

    def __repr__(self) -> str:
        return "MARKER"


MARKER = _Control()


@dataclass(eq=False)
class _Txn:
    txn_id: str
    sends: list[tuple[str, int, int]]
    abort: bool
    #: how many of sends were made (each landed in its partition's log)
    sent: int = 0
    #: aligned with sends: the offset each landed at, None before it was sent
    offsets: list[int | None] = field(default_factory=list)
    #: the partitions holding a record of it with no marker yet
    open_keys: set[tuple[str, int]] = field(default_factory=set)
    #: len(lines) when commit (or abort) was called; None: never called
    end_at: int | None = None
    #: what its end decided for its markers (True: commit), None while undecided
    decided: bool | None = None


@dataclass
class _TxnProducer:
    pid: int
    txn_id: str
    pending: _Txn | None = None


@dataclass
class _TxnConsumer(_Consumer):
    isolation: str = "read_committed"


class _TxnModel(_Model):
    def __init__(self, draw, test: dict | None, parts: dict[str, int], broker_ids: list[int],
                 min_isr: int, inject: bool, client: str, producers: int) -> None:
        super().__init__(draw, test, parts, broker_ids, min_isr, inject)
        self.client = client
        self.txn_producers = [_TxnProducer(self.pid(), f"tx-{i}") for i in range(producers)]
        self.next_txn_id = producers
        self.consumers += [_TxnConsumer(self.pid(), t) for t in (*parts, TOPICS[0])]
        #: a txn value's state: open, committed or aborted (a plain value has none)
        self.vstate: dict[int, str] = {}
        self.txn_of: dict[int, _Txn] = {}
        #: transactions left with records but no marker by no live producer's doing
        self.unresolved: list[_Txn] = []
        #: injected: the LSO the final observations of a partition report, stuck
        self.stuck_lso: dict[tuple[str, int], int] = {}

    # -- what the log says

    def lso(self, key: tuple[str, int]) -> int:
        """The last stable offset: the first open record's offset, else the log's end."""
        log = self.logs[key]
        return next((o for o, v in enumerate(log) if self.vstate.get(v) == "open"), len(log))

    def open_offsets(self, key: tuple[str, int]) -> list[int]:
        firsts: dict[int, int] = {}
        for o, v in enumerate(self.logs[key]):
            if self.vstate.get(v) == "open":
                firsts.setdefault(id(self.txn_of[v]), o)
        return sorted(firsts.values())

    def visible(self, v, committed: bool) -> bool:
        """A record a consumer at that isolation returns (below its end)."""
        if isinstance(v, _Control):
            return False
        return not committed or self.vstate.get(v) in (None, "committed")

    # -- transactional producers

    def txn_step(self) -> None:
        if not self.txn_producers:  # a run whose transactional producers never began
            return
        prod = self.txn_producers[self.draw(st.integers(0, len(self.txn_producers) - 1))]
        txn = prod.pending
        if txn is None:
            self.begin_txn(prod)
        elif txn.sent < len(txn.sends):
            if self.draw(st.integers(0, 5)) == 0:  # an error before commit was called
                self.complete_txn(prod, self.draw(st.sampled_from(["fail", "info"])))
            else:
                for _ in range(self.draw(st.integers(1, 2))):
                    self.txn_send(txn)
        elif txn.end_at is None:
            txn.end_at = len(self.lines)  # commit (or abort) called now
        else:
            self.complete_txn(prod, self.draw(st.sampled_from(["ok"] * 4 + ["fail", "info"])))

    def begin_txn(self, prod: _TxnProducer) -> None:
        # a new instance's InitProducerId settles what the old one of its id left
        for old in [t for t in self.unresolved if t.txn_id == prod.txn_id]:
            self.resolve(old, self.prepared(old))
        sends = []
        for _ in range(self.draw(st.integers(1, 4))):
            topic, p = self.key()
            sends.append((topic, p, self.next_value))
            self.next_value += 1
        txn = _Txn(prod.txn_id, sends, abort=self.draw(st.integers(0, 4)) == 0,
                   offsets=[None] * len(sends))
        prod.pending = txn
        line = {"process": prod.pid, "type": "invoke", "f": "txn", "txn_id": prod.txn_id,
                "sends": [list(s) for s in sends]}
        if txn.abort:
            line["abort"] = True
        client = self.draw(st.sampled_from([self.client] * 4 + [None, *TXN_CLIENTS]))
        if client is not None:
            line["client"] = client
        self.emit(**line)
        if self.draw(st.booleans()):
            self.txn_send(txn)

    def txn_send(self, txn: _Txn) -> None:
        if txn.sent >= len(txn.sends):
            return
        topic, p, value = txn.sends[txn.sent]
        log = self.logs[(topic, p)]
        log.append(value)
        txn.offsets[txn.sent] = len(log) - 1
        txn.sent += 1
        self.vstate[value] = "open"
        self.txn_of[value] = txn
        txn.open_keys.add((topic, p))

    def prepared(self, txn: _Txn) -> bool:
        """How a dangling transaction is settled by its fencing or its timeout: commit
        only when it had called commit (and then not always: it may not have been
        prepared yet), or when its end had decided so."""
        if txn.decided is not None:
            return txn.decided
        return txn.end_at is not None and not txn.abort and self.draw(st.booleans())

    def complete_txn(self, prod: _TxnProducer, outcome: str) -> None:
        txn = prod.pending
        prod.pending = None
        line = {"process": prod.pid, "type": outcome, "f": "txn", "txn_id": txn.txn_id}
        if outcome != "ok":
            line["error"] = self.draw(st.sampled_from(_TXN_ERRORS[outcome]))
        if outcome != "fail" and self.draw(st.integers(0, 3)) > 0:
            offsets = list(txn.offsets)
            if self.inject and self.draw(st.integers(0, 5)) == 0:  # a wrong delivery report
                i = self.draw(st.integers(0, len(offsets) - 1))
                offsets[i] = (offsets[i] or 0) + self.draw(st.integers(1, 2))
            line["offsets"] = offsets
        if txn.end_at is not None and (outcome != "ok" or self.draw(st.integers(0, 9)) > 0):
            line[_END_AT] = txn.end_at  # an ok's end_time missing at times: a recorder's slip
        self.emit(**line)
        if outcome == "ok":
            self.resolve(txn, not txn.abort)
        elif outcome == "fail":
            self.resolve(txn, False)
        else:
            fates = ["abort", "dangle", "dangle"]
            if txn.end_at is not None and not txn.abort:
                fates += ["commit", "commit"]
            fate = self.draw(st.sampled_from(fates))
            if fate == "dangle":
                self.unresolved.append(txn)
            else:
                self.resolve(txn, fate == "commit")
            prod.pid = self.pid()  # Jepsen: after info a new process id (a new instance)
            if self.draw(st.booleans()):
                prod.txn_id = f"tx-{self.next_txn_id}"
                self.next_txn_id += 1

    def resolve(self, txn: _Txn, commit: bool) -> None:
        """The markers of txn's partitions (commit or abort); at times, injected, a
        partition settled the other way (torn), all of them the other way, one left
        without a marker (it hangs), or one of its values dropped from the log."""
        txn.decided = commit
        keys = sorted(txn.open_keys)
        decisions = dict.fromkeys(keys, commit)
        if self.inject and keys and self.draw(st.integers(0, 3)) == 0:
            kind = self.draw(st.sampled_from(["torn", "torn", "flip", "no-marker", "drop"]))
            key = self.draw(st.sampled_from(keys))
            if kind == "torn":
                decisions[key] = not commit
            elif kind == "flip":
                decisions = dict.fromkeys(keys, not commit)
            elif kind == "no-marker":
                del decisions[key]
            else:
                log = self.logs[key]
                mine = [v for t, p, v in txn.sends if (t, p) == key and v in log]
                if mine:
                    log.remove(self.draw(st.sampled_from(mine)))
        for key, settled in decisions.items():
            for t, p, v in txn.sends:
                if (t, p) == key and self.vstate.get(v) == "open":
                    self.vstate[v] = "committed" if settled else "aborted"
            self.logs[key].append(MARKER)
            txn.open_keys.discard(key)
        if txn.open_keys and txn not in self.unresolved:
            self.unresolved.append(txn)
        elif not txn.open_keys and txn in self.unresolved:
            self.unresolved.remove(txn)

    def coordinator_step(self) -> None:
        """The coordinator settles a dangling transaction (its timeout, or a marker
        written late)."""
        if self.unresolved:
            txn = self.unresolved[self.draw(st.integers(0, len(self.unresolved) - 1))]
            self.resolve(txn, self.prepared(txn))

    # -- consumers at both isolations

    def poll_step(self) -> None:
        before = len(self.lines)
        super().poll_step()
        line = self.lines[-1]
        if len(self.lines) == before or line["type"] != "invoke":
            return
        con = next(c for c in self.consumers if c.pid == line["process"])
        if isinstance(con, _TxnConsumer):
            line["isolation"] = con.isolation
        elif self.draw(st.integers(0, 3)) == 0:
            line["isolation"] = "read_uncommitted"
        if self.draw(st.integers(0, 3)) == 0:
            line["group"] = f"g-{con.topic}"

    def complete_poll(self, con: _Consumer) -> None:
        committed = isinstance(con, _TxnConsumer)
        parts = range(self.parts[con.topic])
        con.pending = False
        outcome = self.draw(st.sampled_from(["ok"] * 6 + ["fail", "info"]))
        head = {"process": con.pid, "f": "poll", "topic": con.topic}
        if outcome != "ok":
            self.emit(**head, type=outcome, error="NOT_COORDINATOR")
            if outcome == "info":
                con.pid, con.pos = self.pid(), {}
            return
        records = []
        order = self.draw(st.permutations(list(parts)))
        for p in order:
            key = (con.topic, p)
            log = self.logs[key]
            end = self.lso(key) if committed else len(log)
            at = o = con.pos.get(p, 0)
            batch = self.draw(st.integers(0, 3))
            taken = 0
            while o < end and taken < batch:
                if self.visible(log[o], committed):
                    records.append([p, o, log[o]])
                    taken += 1
                o += 1
            con.pos[p] = max(at, o)
        if records and self.inject and self.draw(st.integers(0, 3)) == 3:
            records = self.misread(con.topic, records, committed)
        line = {**head, "type": "ok", "records": records}
        if self.draw(st.booleans()):
            shown = self.draw(st.lists(st.sampled_from(list(parts)), unique=True))
            line["high_watermark"] = {str(p): len(self.logs[(con.topic, p)]) for p in shown}
        if self.draw(st.integers(0, 3)) < (3 if committed else 2):
            line["position"] = {str(p): con.pos[p] for p in order}
        if committed and self.draw(st.booleans()):
            line["last_stable_offset"] = {str(p): self.lso((con.topic, p)) for p in order}
        self.emit(**line)

    def misread(self, topic: str, records: list[list], committed: bool = False) -> list[list]:
        """One injected consumer anomaly in a poll's records (the v3 kinds, and for a
        read_committed reader a record of an aborted or still open transaction)."""
        i = self.draw(st.integers(0, len(records) - 1))
        p, o, v = records[i]
        kinds = ["back", "skip", "garbage", "other-value", "failed-value"]
        if committed:
            kinds += ["aborted-value", "open-value", "open-value"]
        kind = self.draw(st.sampled_from(kinds))
        records = [list(r) for r in records]
        if kind == "back":
            records.insert(i + 1, [p, max(0, o - self.draw(st.integers(0, 2))), v])
        elif kind == "skip":
            records[i] = [p, o + self.draw(st.integers(1, 2)), v]
        elif kind == "garbage":
            records[i] = [p, o, None]
        elif kind == "other-value":
            values = [x for x in self.logs[(topic, p)] if isinstance(x, int)]
            if values:
                records[i] = [p, o, self.draw(st.sampled_from(values))]
        elif kind in ("aborted-value", "open-value"):
            state = "aborted" if kind == "aborted-value" else "open"
            hidden = [[q, at, x] for q in range(self.parts[topic])
                      for at, x in enumerate(self.logs[(topic, q)])
                      if self.vstate.get(x) == state]
            if hidden:
                records.append(self.draw(st.sampled_from(hidden)))
        elif self.failed_values:
            value, _ = self.draw(st.sampled_from(self.failed_values))
            records[i] = [p, o, value]
        return records

    # -- the observer

    def observe_step(self) -> None:
        super().observe_step()
        line = self.lines[-1]
        key = (line["topic"], line["partition"])
        if self.draw(st.integers(0, 2)) > 0:
            lso = self.lso(key)
            if self.inject and self.draw(st.integers(0, 7)) == 0:  # a wrong or stale LSO
                lso = self.draw(st.integers(0, len(self.logs[key]) + 1))
            line["last_stable_offset"] = lso
        if self.draw(st.booleans()):
            line["open_txn_offsets"] = self.open_offsets(key)


def _txn_final_reads(m: _TxnModel, topic: str, committed: bool) -> list[dict]:
    """The final reads of one topic's partitions at one isolation by one or two
    readers, each poll with its position (and, read_committed, the LSO), complete or
    incomplete in one of the contract's ways; returns the invokes left open."""
    draw = m.draw
    parts = list(range(m.parts[topic]))
    split = draw(st.integers(1, len(parts)))
    groups = [g for g in (parts[:split], parts[split:]) if g]
    tail: list[dict] = []
    for group in groups:
        iso = {"isolation": "read_committed"} if committed else (
            {"isolation": "read_uncommitted"} if draw(st.booleans()) else {})
        modes = ["complete"] * 5 + ["retried", "retried-info", "no-seek", "hwm-some",
                                    "no-position"]
        if m.inject:
            modes += ["no-ok", "short", "open", "hole", "moved"]
            if committed:
                modes += ["extra", "lso-ahead"]
        mode = draw(st.sampled_from(modes))
        pid = m.pid()
        head = {"f": "poll", "topic": topic, "final": True}
        if mode in ("retried", "retried-info", "no-ok"):
            outcome = "info" if mode == "retried-info" else "fail"
            m.emit(process=pid, type="invoke", **head, **iso, seek={str(p): 0 for p in group})
            m.emit(process=pid, type=outcome, **head, error="BROKER_NOT_AVAILABLE")
            if mode == "no-ok":
                continue
            if outcome == "info":
                pid = m.pid()
        ends = {q: m.lso((topic, q)) if committed else len(m.logs[(topic, q)]) for q in group}
        logs = {q: [(o, v) for o, v in enumerate(m.logs[(topic, q)][:ends[q]])
                    if m.visible(v, committed)] for q in group}
        p = draw(st.sampled_from(group))
        if mode == "hole" and logs[p]:
            del logs[p][draw(st.integers(0, len(logs[p]) - 1))]
        elif mode == "moved" and logs[p]:
            i = draw(st.integers(0, len(logs[p]) - 1))
            logs[p][i] = (logs[p][i][0] + draw(st.integers(1, 2)), logs[p][i][1])
            logs[p].sort(key=lambda r: r[0])
        elif mode == "short":  # the reader stops short of the end
            logs[p] = logs[p][:draw(st.integers(0, max(0, len(logs[p]) - 1)))]
        elif mode == "extra":  # an aborted or open record returned at read_committed
            hidden = [(o, v) for o, v in enumerate(m.logs[(topic, p)])
                      if m.vstate.get(v) in ("aborted", "open")]
            if hidden:
                o, v = draw(st.sampled_from(hidden))
                logs[p] = sorted([*logs[p], (o, v)], key=lambda r: r[0])
                ends[p] = max(ends[p], o + 1)
        batch = draw(st.integers(1, 4))
        pos = dict.fromkeys(group, 0)
        first = True
        while True:
            invoke = {"process": pid, "type": "invoke", **head, **iso}
            if first and mode != "no-seek":
                invoke["seek"] = {str(q): 0 for q in group}
            records = []
            for q in group:
                rest = [r for r in logs[q] if r[0] >= pos[q]]
                taken = rest[:batch]
                records += [[q, o, v] for o, v in taken]
                if taken:
                    pos[q] = taken[-1][0] + 1
                if len(rest) <= batch and not (mode == "short" and q == p):
                    pos[q] = max(pos[q], ends[q])  # past trailing markers, hidden records
            m.emit(**invoke)
            done = {"process": pid, "type": "ok", **head, "records": records}
            shown = group if mode != "hwm-some" else group[:1]
            done["high_watermark"] = {str(q): len(m.logs[(topic, q)]) for q in shown}
            if mode != "no-position":
                done["position"] = {str(q): pos[q] for q in group}
            if committed:
                done["last_stable_offset"] = {
                    str(q): m.lso((topic, q)) + int(mode == "lso-ahead" and q == p)
                    for q in group}
            m.emit(**done)
            first = False
            if not records:
                break
        if mode == "open":
            open_invoke = {"process": pid, "type": "invoke", **head, **iso}
            if draw(st.booleans()):
                open_invoke["seek"] = {str(q): 0 for q in group}
            tail.append(open_invoke)
    return tail


def _final_observations(m: _TxnModel) -> None:
    """A round of observations after the final reads began, the clock jumping
    (0 to 5 ms) before each: enough, at times, to outlast hanging-txn's T; and,
    injected, an LSO stuck below the high watermark whatever the transactions did
    (where the partition's last observation put it, or anywhere below its end),
    from then on."""
    for _ in range(m.draw(st.integers(1, len(m.keys) + 1))):
        m.observe_step()
        line = m.lines[-1]
        line[_GAP] = m.draw(st.sampled_from([0, 1_000_000, 2_500_000, 5_000_000]))
        key = (line["topic"], line["partition"])
        if key not in m.stuck_lso and m.inject and m.draw(st.integers(0, 3)) == 0:
            last = next((seen["last_stable_offset"] for seen in reversed(m.lines[:-1])
                         if seen.get("f") == "observe" and "last_stable_offset" in seen
                         and (seen["topic"], seen["partition"]) == key), None)
            end = len(m.logs[key])
            m.stuck_lso[key] = (last if last is not None and last < end
                                else m.draw(st.integers(0, max(0, end - 1))))
        if key in m.stuck_lso and m.draw(st.integers(0, 3)) > 0:
            line["last_stable_offset"] = m.stuck_lso[key]


def _txn_replicas(m: _TxnModel) -> None:
    """The collector's replica lines, a marker's value null (its bytes are no int)."""
    logs = m.logs
    m.logs = {key: [None if isinstance(v, _Control) else v for v in log]
              for key, log in logs.items()}
    try:
        _replicas(m)
    finally:
        m.logs = logs


_TXN_STEPS = (["send"] * 2 + ["txn"] * 7 + ["poll"] * 5 + ["observe"] * 2
              + ["fault", "log", "coordinator"])


@st.composite
def transactions_jsons(draw, producers: int) -> dict:
    """test.json's `transactions`: T = timeout + check interval + margin is 1-4 ms
    (the histories' clock moves in microseconds), at times a part of it missing."""
    conf = {"enabled": True, "client": draw(st.sampled_from(["java", "java", "librdkafka"])),
            "transaction_version": draw(st.sampled_from([2, 2, 1, None])),
            "transaction_timeout_ms": draw(st.integers(1, 2)),
            "abort_check_interval_ms": draw(st.integers(0, 1)),
            "hang_margin_ms": draw(st.integers(0, 1)), "producers": producers}
    if draw(st.integers(0, 7)) == 0:
        del conf[draw(st.sampled_from(["transaction_timeout_ms", "hang_margin_ms"]))]
    return conf


@st.composite
def txn_histories(draw, max_steps: int = 80) -> GeneratedHistory:
    """A random history of contract version 4: the v3 model's plain producers,
    consumers, observer and nemesis, with transactional producers, read_committed
    consumers, LSO observations and final reads at both isolations."""
    test, parts, ids, min_isr = draw(test_jsons())
    producers = draw(st.sampled_from([0, 1, 2, 2, 3, 3]))
    txn_conf = draw(transactions_jsons(producers))
    if test is not None:
        test["transactions"] = txn_conf
        if draw(st.booleans()):
            test["observer"] = {"fenced_first": draw(st.booleans()),
                                "same_broker": draw(st.booleans())}
    m = _TxnModel(draw, test, parts, ids, min_isr, inject=draw(st.integers(0, 2)) > 0,
                  client=txn_conf["client"], producers=producers)
    for _ in range(draw(st.integers(min(8, max_steps), max_steps))):
        getattr(m, f"{draw(st.sampled_from(_TXN_STEPS))}_step")()
    # wind down: some operations complete, the others never do
    for prod in m.producers:
        if prod.pending is not None and draw(st.booleans()):
            m.complete_send(prod, draw(st.sampled_from(["ok", "fail", "info"])))
    for tp in m.txn_producers:
        if tp.pending is None:
            continue
        if draw(st.booleans()):
            if tp.pending.sent == len(tp.pending.sends) and tp.pending.end_at is None:
                tp.pending.end_at = len(m.lines)
            done = tp.pending.end_at is not None
            m.complete_txn(tp, draw(st.sampled_from(["ok", "fail", "info"] if done
                                                    else ["fail", "info"])))
        elif tp.pending.open_keys:
            m.unresolved.append(tp.pending)  # never completed: it dangles
    for con in m.consumers:
        if con.pending and draw(st.booleans()):
            m.complete_poll(con)
    if draw(st.booleans()):  # healed: a full ISR observed
        m.alive = set(m.brokers)
        for _ in range(draw(st.integers(1, 2))):
            m.observe_step()
    # the final reads: read_uncommitted, observations (the coordinator settling
    # dangling transactions at times between them), read_committed
    tail = []
    for topic in parts:
        tail += _txn_final_reads(m, topic, committed=False)
    for _ in range(draw(st.integers(0, 3))):
        if draw(st.integers(0, 2)) == 0:
            m.coordinator_step()
        _final_observations(m)
    for topic in parts:
        tail += _txn_final_reads(m, topic, committed=True)
    if draw(st.booleans()):
        _final_observations(m)
    if draw(st.booleans()):
        _txn_replicas(m)
    m.lines += tail
    return _dress(draw, test, m.lines)
