"""Synthetic histories that follow shared/HISTORY.md, for tests and benchmarks.

A small simulation of producers, consumers, an observer and a nemesis against
an in-memory model of each partition's log writes lines straight to a file (no
list of operations is kept, so 10M lines stream in bounded memory). Clean
histories contain no anomaly; `Injection`s plant one anomaly each at a known
place, and the generator returns the op indices the checker must report, using
the same rules as the checker (see checker/anomalies.py for the ops of each
example).

With `transactions` (contract v4, HISTORY.md "Transactions (v4)") transactional
producers and read_committed consumers join the plain clients: each transaction
sends records across partitions (appended to the logs one by one, between the
other clients' steps), then commits or aborts, which appends a marker to each
partition it wrote; the observer reports each partition's LSO and open
transactions, and the final reads run at both isolation levels. Such a history
is clean (no injection can be planted in it). Without it every output is as it
was before transactions existed, byte for byte.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from array import array
from dataclasses import dataclass, field
from pathlib import Path

from elr_harness.core.history import ACKS_LEVELS

_ACK_CODE = {"all": 1, "1": 2, "0": 3}
INJECTABLE = (
    "lost-write", "lost-write-beyond-budget", "lost-committed-read", "inconsistent-offset",
    "duplicate", "aborted-read", "realtime-order", "nonmonotonic-poll", "poll-skip",
    "garbage-read", "hwm-regression", "elr-invariant", "incomplete-final-read",
)


@dataclass(frozen=True)
class Injection:
    """One anomaly planted at a fraction `at` of the run, on one partition."""

    anomaly: str
    at: float = 0.5
    partition: int = 0
    acks: str = "all"


@dataclass(frozen=True)
class SyntheticSpec:
    """Shape of a generated run; every rate is per operation."""

    lines: int = 2000
    partitions: int = 3
    producers: int = 3
    consumers: int = 2
    seed: int = 0
    topic: str = "elr-test"
    info_rate: float = 0.03
    fail_rate: float = 0.02
    seek_rate: float = 0.03
    #: Share of ok sends that carry an unknown extra field ("retries"), which a
    #: checker must ignore; 0 unless a test asks for it (HISTORY.md's fields only).
    retry_rate: float = 0.0
    consumer_crash_rate: float = 0.005
    observe_every: int = 150
    fault_every: int = 700
    poll_batch: int = 20
    final_batch: int = 300
    final_readers: int = 2
    idempotent: bool = False
    leave_pending: bool = True
    injections: tuple[Injection, ...] = ()
    #: Contract v4: transactional producers (the Java client's, on
    #: transaction.version 2) and read_committed consumers beside the plain clients.
    transactions: bool = False
    txn_producers: int = 2
    read_committed_consumers: int = 1
    #: Share of the simulation's steps given to the transactional producers (a
    #: transaction takes one step to begin, one per record and one to end).
    txn_share: float = 0.2
    txn_min_sends: int = 2
    txn_max_sends: int = 5
    #: Per transaction: aborted on purpose (`abort: true`), failed (aborted after an
    #: error), or committed while the client timed out (`info`).
    txn_abort_rate: float = 0.1
    txn_fail_rate: float = 0.02
    txn_info_rate: float = 0.01


#: The anomalies that one history can carry together, one of each.
MIXABLE = ("lost-write", "lost-committed-read", "inconsistent-offset", "duplicate",
           "aborted-read", "realtime-order", "nonmonotonic-poll", "poll-skip",
           "garbage-read", "hwm-regression", "elr-invariant")


def every_anomaly(lines: int, seed: int) -> SyntheticSpec:
    """A history with each MIXABLE anomaly planted once, spread over the run and
    over three partitions (the checker benchmark's and the JVM training's)."""
    return SyntheticSpec(lines=lines, seed=seed, injections=tuple(
        Injection(name, at=0.05 + 0.08 * i, partition=i % 3)
        for i, name in enumerate(MIXABLE)))


@dataclass(frozen=True)
class ExpectedAnomaly:
    """What the checker must report for one planted anomaly."""

    partition: int
    ops: tuple[int, ...]
    value: int | None = None
    offset: int | None = None
    acks: str | None = None


@dataclass
class Generated:
    """What a generated history holds, for assertions."""

    lines: int = 0
    expected: dict[str, list[ExpectedAnomaly]] = field(default_factory=dict)
    sends_ok: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ACKS_LEVELS, 0))
    lost_by_acks: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ACKS_LEVELS, 0))
    unseen_by_acks: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ACKS_LEVELS, 0))
    incomplete_partitions: list[str] = field(default_factory=list)
    beyond_budget: bool = False
    #: transactions by outcome, as results.json's tally counts them
    txn_outcomes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        ("committed", "aborted_on_purpose", "failed", "unknown"), 0))


#: test.json's transactions block of a synthetic run with transactions (the
#: harness's defaults: WorkloadConfig and ClusterTimings).
TXN_TEST_JSON = {"enabled": True, "client": "java", "transaction_version": 2,
                 "transaction_timeout_ms": 10000, "abort_check_interval_ms": 2000,
                 "hang_margin_ms": 10000}
#: The Java client's values start here (WorkloadConfig.txn_value_base).
TXN_VALUE_BASE = 10**15


def synthetic_test_json(spec: SyntheticSpec) -> dict:
    """The test.json a real run with this shape would write."""
    nodes = {f"controller-{i}": {"role": "controller", "id": 1000 + i} for i in (1, 2, 3)}
    nodes.update({f"broker-{i}": {"role": "broker", "id": i} for i in (1, 2, 3)})
    out = {
        "test": "synthetic", "nemesis": "synthetic", "seed": spec.seed,
        "kafka_version": "4.1.1", "elr_enabled": True,
        "idempotent_producers": spec.idempotent,
        "topics": {spec.topic: {"partitions": spec.partitions, "replication_factor": 3,
                                "min_insync_replicas": 2, "unclean_leader_election": False}},
        "nodes": nodes,
    }
    if spec.transactions:
        out["transactions"] = {**TXN_TEST_JSON, "producers": spec.txn_producers,
                               "read_committed_consumers": spec.read_committed_consumers}
    return out


def write_run_dir(run_dir: Path, spec: SyntheticSpec, with_test_json: bool = True) -> Generated:
    """Write history.jsonl (and test.json) of a synthetic run into run_dir."""
    run_dir.mkdir(parents=True, exist_ok=True)
    if with_test_json:
        (run_dir / "test.json").write_text(json.dumps(synthetic_test_json(spec), indent=2))
    return write_history(run_dir / "history.jsonl", spec)


def write_history(path: Path, spec: SyntheticSpec) -> Generated:
    """Stream a history of about spec.lines lines (plus final reads) to path."""
    for inj in spec.injections:
        if inj.anomaly not in INJECTABLE:
            raise ValueError(f"cannot inject {inj.anomaly!r}; known: {', '.join(INJECTABLE)}")
    if spec.transactions and spec.injections:
        raise ValueError("a history with transactions is clean: no injection")
    if spec.transactions and not 1 <= spec.txn_min_sends <= spec.txn_max_sends:
        raise ValueError("txn_min_sends must be at least 1 and at most txn_max_sends")
    with open(path, "w", encoding="utf-8", buffering=1 << 20) as out:
        sim = _Simulation(spec, out)
        sim.run()
        return sim.result


class _Producer:
    __slots__ = ("pid", "acks", "pending")

    def __init__(self, pid: int, acks: str) -> None:
        self.pid = pid
        self.acks = acks
        self.pending: tuple[int, int, int] | None = None  # value, partition, invoke index


class _Consumer:
    __slots__ = ("pid", "pos", "pending", "last", "need_seek", "rc")

    def __init__(self, pid: int, partitions: int, rc: bool = False) -> None:
        self.pid = pid
        self.rc = rc  # a read_committed consumer (contract v4)
        self.pos = [0] * partitions
        self.pending: tuple[int, bool] | None = None  # invoke index, had seek
        # per partition: (kind, offset, index) of the last event: "r" record or "s" seek
        self.last: list[tuple[str, int, int] | None] = [None] * partitions
        self.need_seek = True


class _Txn:
    """One transaction in flight: its sends (partition, value), the offsets of
    those appended so far, and its first offset in each partition it wrote."""

    __slots__ = ("sends", "abort", "offsets", "first")

    def __init__(self, sends: list[tuple[int, int]], abort: bool) -> None:
        self.sends = sends
        self.abort = abort
        self.offsets: list[int] = []
        self.first: dict[int, int] = {}


class _TxnProducer:
    __slots__ = ("pid", "txn_id", "pending")

    def __init__(self, pid: int, txn_id: str) -> None:
        self.pid = pid
        self.txn_id = txn_id
        self.pending: _Txn | None = None


# fault cycle: (fault, nodes, isr after, elr after); broker ids are 1..3
_FAULT_CYCLE = (
    ("partition", ("broker-3",), [1, 2], []),
    ("heal", ("broker-3",), [1, 2, 3], []),
    ("kill", ("broker-2",), [1, 3], []),
    ("start", ("broker-2",), [1, 2, 3], []),
    ("page-cache-loss", ("broker-3",), [1, 2], []),
    ("start", ("broker-3",), [1, 2, 3], []),
    ("partition", ("broker-2", "broker-3"), [1], [2, 3]),
    ("heal", ("broker-2", "broker-3"), [1, 2, 3], []),
)
_FULL = [1, 2, 3]


class _Simulation:
    def __init__(self, spec: SyntheticSpec, out) -> None:
        self.spec = spec
        self.out = out
        self.rng = random.Random(spec.seed)
        self.topic = spec.topic
        self.index = 0
        self.time = 0
        self.buf: list[str] = []
        self.result = Generated()
        self.expected = self.result.expected
        parts = spec.partitions
        self.logs = [array("q") for _ in range(parts)]
        self.codes = [array("b") for _ in range(parts)]  # 0 not an ok send, else _ACK_CODE
        self.hidden: set[tuple[int, int]] = set()
        self.next_value = 1
        self.next_pid = 0
        self.producers = [_Producer(self._pid(), ACKS_LEVELS[i % 3])
                          for i in range(spec.producers)]
        self.consumers = [_Consumer(self._pid(), parts) for _ in range(spec.consumers)]
        self.reads: dict[tuple[int, int], list[int]] = {}  # watched (p, o) -> read poll indices
        self.final_seen: dict[tuple[int, int], list[int]] = {}
        self.final_max: list[list[tuple[int, int]]] = [[] for _ in range(parts)]
        self.final_polls: list[list[int]] = [[] for _ in range(parts)]
        self.last_ok: list[tuple[int, int, int] | None] = [None] * parts  # value, offset, index
        self.isr, self.elr, self.epoch = list(_FULL), [], 1
        self.last_hwm: list[tuple[int, int] | None] = [None] * parts
        self.fault_step = 0
        self.finishers: list = []
        # contract v4 (spec.transactions): markers are in self.hidden (no read returns
        # one); the records of aborted transactions in self.aborted (read_committed
        # reads skip them)
        self.txn = spec.transactions
        self.txn_producers: list[_TxnProducer] = []
        self.open_txns: list[_Txn] = []
        self.aborted: set[tuple[int, int]] = set()
        self.next_txn_value = TXN_VALUE_BASE
        if self.txn:
            self.consumers += [_Consumer(self._pid(), parts, rc=True)
                               for _ in range(spec.read_committed_consumers)]
            self.txn_producers = [_TxnProducer(self._pid(), f"elr-txn-java-{i}")
                                  for i in range(spec.txn_producers)]

    # -- output ---------------------------------------------------------------

    def _pid(self) -> int:
        self.next_pid += 1
        return self.next_pid - 1

    def emit(self, body: str) -> int:
        idx = self.index
        self.time += 1000 + int(self.rng.random() * 50_000)
        self.buf.append(f'{{"index":{idx},"time":{self.time},{body}}}\n')
        self.index += 1
        if len(self.buf) >= 4096:
            self.out.write("".join(self.buf))
            self.buf.clear()
        return idx

    def flush(self) -> None:
        self.out.write("".join(self.buf))
        self.buf.clear()

    def expect(self, name: str, partition: int, ops, value=None, offset=None, acks=None) -> None:
        ops = tuple(sorted({o for o in ops if o is not None}))
        self.expected.setdefault(name, []).append(
            ExpectedAnomaly(partition, ops, value, offset, acks))

    # -- the model ------------------------------------------------------------

    def append(self, p: int, value: int, code: int) -> int:
        self.logs[p].append(value)
        self.codes[p].append(code)
        return len(self.logs[p]) - 1

    def send_invoke(self, pid: int, p: int, acks: str, value: int) -> int:
        return self.emit(f'"process":{pid},"type":"invoke","f":"send","topic":"{self.topic}",'
                         f'"partition":{p},"acks":"{acks}","value":{value}')

    def send_done(self, pid: int, p: int, acks: str, value: int, kind: str,
                  offset: int | None = None, error: str | None = None, extra: str = "") -> int:
        head = (f'"process":{pid},"type":"{kind}","f":"send","topic":"{self.topic}",'
                f'"partition":{p},"acks":"{acks}","value":{value}')
        if kind == "ok":
            off = "null" if offset is None else str(offset)
            return self.emit(f'{head},"offset":{off}{extra}')
        return self.emit(f'{head},"error":"{error}"{extra}')

    def new_value(self) -> int:
        self.next_value += 1
        return self.next_value - 1

    def ok_send(self, p: int, acks: str, value: int, offset: int | None, idx: int) -> None:
        self.result.sends_ok[acks] += 1
        if offset is not None and acks != "0":
            self.last_ok[p] = (value, offset, idx)

    def producer_step(self, prod: _Producer) -> None:
        if prod.pending is None:
            value = self.new_value()
            p = int(self.rng.random() * self.spec.partitions)
            prod.pending = (value, p, self.send_invoke(prod.pid, p, prod.acks, value))
            return
        value, p, _ = prod.pending
        prod.pending = None
        r = self.rng.random()
        if r < self.spec.fail_rate:
            err = "NOT_ENOUGH_REPLICAS" if prod.acks == "all" else "NETWORK_EXCEPTION"
            self.send_done(prod.pid, p, prod.acks, value, "fail", error=err)
        elif r < self.spec.fail_rate + self.spec.info_rate:
            if self.rng.random() < 0.5:  # the record made it although the client timed out
                self.append(p, value, 0)
            self.send_done(prod.pid, p, prod.acks, value, "info", error="REQUEST_TIMED_OUT")
            prod.pid = self._pid()  # Jepsen: after info the process takes a new id
        else:
            offset = self.append(p, value, _ACK_CODE[prod.acks])
            extra = ',"retries":1' if self.rng.random() < self.spec.retry_rate else ""
            shown = None if prod.acks == "0" else offset
            idx = self.send_done(prod.pid, p, prod.acks, value, "ok", shown, extra=extra)
            self.ok_send(p, prod.acks, value, shown, idx)

    def one_send(self, p: int, acks: str, kind: str = "ok", shown_offset=False, hide=False,
                 append: bool = True, error: str = "REQUEST_TIMED_OUT"):
        """A whole send by a fresh process; returns (value, offset, invoke, completion)."""
        pid, value = self._pid(), self.new_value()
        inv = self.send_invoke(pid, p, acks, value)
        offset = None
        if append:
            code = _ACK_CODE[acks] if kind == "ok" else 0
            offset = self.append(p, value, code)
            if hide:
                self.hidden.add((p, offset))
        if kind == "ok":
            shown = offset if shown_offset is False else shown_offset
            shown = None if acks == "0" else shown
            comp = self.send_done(pid, p, acks, value, "ok", shown)
            self.ok_send(p, acks, value, None if hide else shown, comp)
        else:
            comp = self.send_done(pid, p, acks, value, kind, error=error)
        return value, offset, inv, comp

    def consumer_invoke(self, con: _Consumer, seek: dict[int, int] | None = None) -> int:
        body = f'"process":{con.pid},"type":"invoke","f":"poll","topic":"{self.topic}"'
        if con.rc:
            body += ',"isolation":"read_committed"'
        if seek is None and con.need_seek:
            seek = {p: con.pos[p] for p in range(self.spec.partitions)}
        elif seek is None and self.rng.random() < self.spec.seek_rate:
            p = int(self.rng.random() * self.spec.partitions)
            seek = {p: max(0, con.pos[p] - 1 - int(self.rng.random() * 10))}
        if seek:
            body += ',"seek":{' + ",".join(f'"{p}":{o}' for p, o in seek.items()) + "}"
        idx = self.emit(body)
        con.need_seek = False
        for p, o in (seek or {}).items():
            con.pos[p] = o
            con.last[p] = ("s", o, idx)
        con.pending = (idx, bool(seek))
        return idx

    def consumer_complete(self, con: _Consumer, records: list[tuple[int, int, int | None]]
                          | None = None) -> int:
        """Complete con's poll: normal reading unless records are given."""
        if con.rc:
            return self.rc_complete(con)
        con.pending = None
        if records is None:
            records = self.read_records(con.pos, self.spec.poll_batch)
        idx = self.index
        for p, o, _ in records:
            if (p, o) in self.reads:
                self.reads[(p, o)].append(idx)
            con.pos[p] = max(con.pos[p], o + 1)
            con.last[p] = ("r", o, idx)
        recs = ",".join(f"[{p},{o},{'null' if v is None else v}]" for p, o, v in records)
        hwm = ",".join(f'"{p}":{len(self.logs[p])}' for p in range(self.spec.partitions))
        return self.emit(f'"process":{con.pid},"type":"ok","f":"poll","topic":"{self.topic}",'
                         f'"records":[{recs}],"high_watermark":{{{hwm}}}')

    def read_records(self, pos: list[int], batch: int, parts=None) -> list:
        out = []
        for p in parts if parts is not None else range(self.spec.partitions):
            log, o, end = self.logs[p], pos[p], len(self.logs[p])
            taken = 0
            while o < end and taken < batch:
                if (p, o) not in self.hidden:
                    out.append((p, o, log[o]))
                    taken += 1
                o += 1
        return out

    def consumer_step(self, con: _Consumer) -> None:
        if con.pending is None:
            self.consumer_invoke(con)
            return
        r = self.rng.random()
        if r < self.spec.consumer_crash_rate:
            con.pending = None
            self.emit(f'"process":{con.pid},"type":"info","f":"poll","topic":"{self.topic}",'
                      f'"error":"REQUEST_TIMED_OUT"')
            con.pid, con.need_seek = self._pid(), True
            con.last = [None] * self.spec.partitions
        elif r < 2 * self.spec.consumer_crash_rate:
            con.pending = None
            self.emit(f'"process":{con.pid},"type":"fail","f":"poll","topic":"{self.topic}",'
                      f'"error":"NOT_COORDINATOR"')
        else:
            self.consumer_complete(con)

    def observe_round(self, hwm_override: dict[int, int] | None = None,
                      isr=None, elr=None) -> None:
        isr = self.isr if isr is None else isr
        elr = self.elr if elr is None else elr
        for p in range(self.spec.partitions):
            hwm = len(self.logs[p])
            if hwm_override and p in hwm_override:
                hwm = hwm_override[p]
            elif self.rng.random() < 0.05:
                hwm = None  # observations may omit the high watermark
            body = (f'"process":-2,"type":"ok","f":"observe","topic":"{self.topic}",'
                    f'"partition":{p},"leader":{isr[0] if isr else -1},'
                    f'"leader_epoch":{self.epoch},"isr":{isr},"elr":{elr},'
                    f'"last_known_elr":[]')
            if hwm is not None:
                body += f',"high_watermark":{hwm}'
            if self.txn:
                opened = ",".join(str(o) for o in self.open_offsets(p))
                body += f',"last_stable_offset":{self.lso(p)},"open_txn_offsets":[{opened}]'
            idx = self.emit(body)
            if hwm is not None:
                self.last_hwm[p] = (hwm, idx)

    def fault(self, kind: str, nodes, detail: str = "") -> None:
        names = ",".join(f'"{n}"' for n in nodes)
        for t in ("invoke", "ok"):
            self.emit(f'"process":-1,"type":"{t}","f":"fault","fault":"{kind}",'
                      f'"nodes":[{names}]{detail}')

    def fault_cycle_step(self) -> None:
        kind, nodes, isr, elr = _FAULT_CYCLE[self.fault_step % len(_FAULT_CYCLE)]
        self.fault_step += 1
        detail = ""
        if kind == "page-cache-loss":
            detail = ',"detail":{"bytes_dropped":{"/data/kafka/elr-test-0/0.log":4096}}'
        self.fault(kind, nodes, detail)
        self.isr, self.elr = list(isr), list(elr)
        self.epoch += 1
        self.observe_round()

    # -- the run ----------------------------------------------------------------

    def run(self) -> None:
        spec = self.spec
        triggers = sorted(spec.injections, key=lambda i: i.at)
        next_observe, next_fault = spec.observe_every, spec.fault_every
        rng = self.rng
        prod_share = 0.6 if self.consumers else 1.0
        txn_share = spec.txn_share if self.txn_producers else 0.0
        while self.index < spec.lines:
            while triggers and self.index >= triggers[0].at * spec.lines:
                self.inject(triggers.pop(0))
            if self.index >= next_observe:
                self.observe_round()
                next_observe = self.index + spec.observe_every
            if self.index >= next_fault:
                self.fault_cycle_step()
                next_fault = self.index + spec.fault_every
            if txn_share and rng.random() < txn_share:
                self.txn_step(self.txn_producers[int(rng.random() * len(self.txn_producers))])
            elif rng.random() < prod_share:
                self.producer_step(self.producers[int(rng.random() * len(self.producers))])
            else:
                self.consumer_step(self.consumers[int(rng.random() * len(self.consumers))])
        for inj in triggers:
            self.inject(inj)
        self.wind_down()
        self.final_reads()
        for finish in self.finishers:
            finish()
        self.flush()
        self.result.lines = self.index

    def wind_down(self) -> None:
        """Complete what is in flight (one send may stay pending: it counts as info)."""
        for i, prod in enumerate(self.producers):
            if prod.pending is not None and not (self.spec.leave_pending and i == 0):
                self.producer_step(prod)
        for txn_prod in self.txn_producers:  # every transaction ends
            while txn_prod.pending is not None:
                self.txn_step(txn_prod)
        for con in self.consumers:
            if con.pending is not None:
                self.consumer_complete(con)
        if self.isr != _FULL:
            self.fault("heal", ("broker-1", "broker-2", "broker-3"))
            self.isr, self.elr = list(_FULL), []
        self.observe_round()

    def final_reads(self) -> None:
        parts = list(range(self.spec.partitions))
        readers = max(1, min(self.spec.final_readers, len(parts)))
        groups = [parts[i::readers] for i in range(readers)]
        if self.txn:  # both isolation levels, each over every partition
            for rc in (False, True):
                for group in groups:
                    self.txn_final_read(group, rc)
            return
        incomplete = {i.partition for i in self.spec.injections
                      if i.anomaly == "incomplete-final-read"}
        for group in groups:
            self.final_read(sorted(group), cut=bool(incomplete & set(group)))

    def final_read(self, group: list[int], cut: bool) -> None:
        """Read group from offset 0 to the end; a cut read ends with an info poll.

        Lines carry only the contract's fields: the first invoke seeks every
        partition of the group to 0 and each ok poll reports the group's high
        watermarks, so a cut read is incomplete by rule (b) of HISTORY.md."""
        pid = self._pid()
        pos = [0] * self.spec.partitions
        stop_after = sum(len(self.logs[p]) for p in group) // 2 if cut else None
        done, first, batch = 0, True, self.spec.final_batch
        hwm = ",".join(f'"{p}":{len(self.logs[p])}' for p in group)
        while True:
            body = (f'"process":{pid},"type":"invoke","f":"poll","topic":"{self.topic}",'
                    f'"final":true')
            if first:
                body += ',"seek":{' + ",".join(f'"{p}":0' for p in group) + "}"
            self.emit(body)
            if stop_after is not None and done >= stop_after:
                self.emit(f'"process":{pid},"type":"info","f":"poll","topic":"{self.topic}",'
                          f'"final":true,"error":"FINAL_READ_INCOMPLETE"')
                self.account_unseen(group, pos)
                return
            if stop_after is not None:  # a cut read stops about half way
                batch = max(1, min(self.spec.final_batch, stop_after - done))
            records = self.read_records(pos, batch, group)
            idx = self.index
            maxes: dict[int, int] = {}
            counts = dict.fromkeys(group, 0)
            for p, o, _ in records:
                if (p, o) in self.final_seen:
                    self.final_seen[(p, o)].append(idx)
                pos[p] = o + 1
                maxes[p] = o
                counts[p] += 1
            for p in group:
                self.final_polls[p].append(idx)
                if p in maxes:
                    self.final_max[p].append((idx, maxes[p]))
            recs = ",".join(f"[{p},{o},{v}]" for p, o, v in records)
            self.emit(f'"process":{pid},"type":"ok","f":"poll","topic":"{self.topic}",'
                      f'"final":true,"records":[{recs}],"high_watermark":{{{hwm}}}')
            done += len(records)
            first = False
            if all(n < batch for n in counts.values()) and stop_after is None:
                return

    def account_unseen(self, group: list[int], pos: list[int]) -> None:
        """A cut read's missing values: beyond the offsets it read they are unseen;
        below them, a hidden (lost) value is a lost-write all the same, unless it
        was sent with acks=0 and so has no offset to place it by."""
        names = {v: k for k, v in _ACK_CODE.items()}
        for p in group:
            if pos[p] >= len(self.logs[p]):
                continue  # read to its high watermark before the cut: complete
            self.result.incomplete_partitions.append(f"{self.topic}-{p}")
            codes = self.codes[p]
            for o in range(len(codes)):
                if codes[o] and (o >= pos[p] or ((p, o) in self.hidden
                                                 and names[codes[o]] == "0")):
                    self.result.unseen_by_acks[names[codes[o]]] += 1

    def should_hold(self, p: int, offset: int | None) -> int | None:
        """The final poll that should hold an offset (same rule as the checker)."""
        if offset is not None:
            for idx, top in self.final_max[p]:
                if top >= offset:
                    return idx
        return self.final_polls[p][-1] if self.final_polls[p] else None

    # -- transactions (contract v4) ---------------------------------------------

    def lso(self, p: int) -> int:
        """p's last stable offset: the first offset of its earliest open transaction,
        else its high watermark."""
        return min((t.first[p] for t in self.open_txns if p in t.first),
                   default=len(self.logs[p]))

    def open_offsets(self, p: int) -> list[int]:
        return sorted(t.first[p] for t in self.open_txns if p in t.first)

    def scan(self, p: int, start: int, end: int, batch: int,
             rc: bool) -> tuple[list[tuple[int, int, int]], int]:
        """Up to batch records of p from start below end, markers (and, read
        committed, aborted records) passed over; and the position after them."""
        log, hidden, aborted = self.logs[p], self.hidden, self.aborted
        out: list[tuple[int, int, int]] = []
        o = start
        while o < end and len(out) < batch:
            if (p, o) not in hidden and not (rc and (p, o) in aborted):
                out.append((p, o, log[o]))
            o += 1
        return out, o

    def rc_complete(self, con: _Consumer) -> int:
        """Complete a read_committed poll: up to the LSO, with its position and LSOs."""
        con.pending = None
        idx = self.index
        records: list[tuple[int, int, int]] = []
        position, lsos = [], []
        for p in range(self.spec.partitions):
            lso = self.lso(p)
            got, con.pos[p] = self.scan(p, con.pos[p], lso, self.spec.poll_batch, rc=True)
            if got:
                con.last[p] = ("r", got[-1][1], idx)
            records += got
            position.append(f'"{p}":{con.pos[p]}')
            lsos.append(f'"{p}":{lso}')
        recs = ",".join(f"[{p},{o},{v}]" for p, o, v in records)
        return self.emit(f'"process":{con.pid},"type":"ok","f":"poll","topic":"{self.topic}",'
                         f'"records":[{recs}],"position":{{{",".join(position)}}},'
                         f'"last_stable_offset":{{{",".join(lsos)}}}')

    def txn_step(self, prod: _TxnProducer) -> None:
        """Begin a transaction, append its next record, or end it."""
        txn = prod.pending
        if txn is None:
            spec, rng = self.spec, self.rng
            n = spec.txn_min_sends + int(rng.random() * (spec.txn_max_sends
                                                         - spec.txn_min_sends + 1))
            sends = []
            for _ in range(n):
                sends.append((int(rng.random() * spec.partitions), self.next_txn_value))
                self.next_txn_value += 1
            txn = prod.pending = _Txn(sends, rng.random() < spec.txn_abort_rate)
            self.open_txns.append(txn)
            listed = ",".join(f'["{self.topic}",{p},{v}]' for p, v in sends)
            self.emit(f'"process":{prod.pid},"type":"invoke","f":"txn",'
                      f'"txn_id":"{prod.txn_id}","sends":[{listed}]'
                      + (',"abort":true' if txn.abort else "") + ',"client":"java"')
        elif len(txn.offsets) < len(txn.sends):
            p, value = txn.sends[len(txn.offsets)]
            offset = self.append(p, value, 0)
            txn.offsets.append(offset)
            txn.first.setdefault(p, offset)
        else:
            self.txn_end(prod, txn)

    def txn_end(self, prod: _TxnProducer, txn: _Txn) -> None:
        """Commit or abort: a marker on each partition written, then the completion."""
        spec = self.spec
        prod.pending = None
        self.open_txns.remove(txn)
        end_time = self.time  # read just before the commit (or abort) call
        r = self.rng.random()
        if txn.abort:
            kind, commit, outcome = "ok", False, "aborted_on_purpose"
        elif r < spec.txn_fail_rate:
            kind, commit, outcome = "fail", False, "failed"
        elif r < spec.txn_fail_rate + spec.txn_info_rate:
            kind, commit, outcome = "info", True, "unknown"  # it committed all the same
        else:
            kind, commit, outcome = "ok", True, "committed"
        self.result.txn_outcomes[outcome] += 1
        for p in txn.first:
            self.hidden.add((p, self.append(p, 0, 0)))
        if not commit:
            self.aborted.update((p, o) for (p, _), o in zip(txn.sends, txn.offsets,
                                                             strict=True))
        head = (f'"process":{prod.pid},"type":"{kind}","f":"txn","txn_id":"{prod.txn_id}"')
        if kind == "ok":
            # the Java client's delivery reports of an aborted transaction give no offset
            shown = ",".join(str(o) if commit else "null" for o in txn.offsets)
            self.emit(f'{head},"offsets":[{shown}],"end_time":{end_time}')
        else:
            error = "REQUEST_TIMED_OUT" if kind == "info" else "NOT_ENOUGH_REPLICAS"
            self.emit(f'{head},"end_time":{end_time},"error":"{error}"')
        if kind == "info":
            prod.pid = self._pid()  # a new instance, the same transactional.id

    def txn_final_read(self, group: list[int], rc: bool) -> None:
        """Read group from offset 0 to its end at one isolation level; every ok poll
        reports each partition's position (past trailing markers and aborted
        records), and the high watermarks or, read committed, the LSOs."""
        pid = self._pid()
        pos = dict.fromkeys(group, 0)
        ends = {p: self.lso(p) for p in group}  # every transaction has ended: the hwm
        marks = ",".join(f'"{p}":{ends[p]}' for p in group)
        first = True
        while True:
            body = (f'"process":{pid},"type":"invoke","f":"poll","topic":"{self.topic}",'
                    f'"final":true')
            if rc:
                body += ',"isolation":"read_committed"'
            if first:
                body += ',"seek":{' + ",".join(f'"{p}":0' for p in group) + "}"
            self.emit(body)
            records: list[tuple[int, int, int]] = []
            for p in group:
                got, pos[p] = self.scan(p, pos[p], ends[p], self.spec.final_batch, rc)
                records += got
            recs = ",".join(f"[{p},{o},{v}]" for p, o, v in records)
            position = ",".join(f'"{p}":{pos[p]}' for p in group)
            tail = (f'"position":{{{position}}},"last_stable_offset":{{{marks}}}' if rc
                    else f'"high_watermark":{{{marks}}},"position":{{{position}}}')
            self.emit(f'"process":{pid},"type":"ok","f":"poll","topic":"{self.topic}",'
                      f'"final":true,"records":[{recs}],{tail}')
            first = False
            if all(pos[p] >= ends[p] for p in group):
                return

    # -- injections -------------------------------------------------------------

    def free_consumer(self) -> _Consumer:
        con = self.consumers[0]
        if con.pending is not None:
            self.consumer_complete(con)
        return con

    def inject(self, inj: Injection) -> None:
        getattr(self, "inject_" + inj.anomaly.replace("-", "_"))(inj)

    def inject_lost_write(self, inj: Injection, name: str = "lost-write") -> None:
        p = inj.partition
        value, offset, inv, comp = self.one_send(p, inj.acks, hide=True)
        self.result.lost_by_acks[inj.acks] += 1
        shown = None if inj.acks == "0" else offset
        self.finishers.append(lambda: self.expect(
            name, p, (inv, comp, self.should_hold(p, shown)), value, shown, inj.acks))

    def inject_lost_write_beyond_budget(self, inj: Injection) -> None:
        self.observe_round(isr=_FULL, elr=[])
        self.fault("page-cache-loss", ("broker-2",))
        self.observe_round(isr=[1, 3], elr=[])
        self.fault("page-cache-loss", ("broker-3",))
        self.observe_round(isr=[1], elr=[])
        self.fault("start", ("broker-2", "broker-3"))
        self.observe_round(isr=_FULL, elr=[])
        self.result.beyond_budget = True
        self.inject_lost_write(Injection("lost-write", inj.at, inj.partition, "all"))

    def inject_lost_committed_read(self, inj: Injection) -> None:
        p = inj.partition
        value, offset, inv, comp = self.one_send(p, "1", kind="info")
        self.reads[(p, offset)] = []
        con = self.free_consumer()
        while con.pos[p] <= offset:
            self.consumer_invoke(con, seek={})
            self.consumer_complete(con)
        self.hidden.add((p, offset))  # truncated away after it was read
        seen = self.reads.pop((p, offset))
        self.finishers.append(lambda: self.expect(
            "lost-committed-read", p, (inv, comp, seen[0], seen[-1],
                                       self.should_hold(p, offset)), value, offset, None))

    def inject_inconsistent_offset(self, inj: Injection) -> None:
        p = inj.partition
        if self.last_ok[p] is None:
            self.one_send(p, "all")
        _, old_offset, old_idx = self.last_ok[p]
        value, _, _, comp = self.one_send(p, "all", shown_offset=old_offset)
        self.expect("inconsistent-offset", p, (old_idx, comp), None, old_offset)

    def inject_duplicate(self, inj: Injection) -> None:
        p = inj.partition
        value, offset, inv, comp = self.one_send(p, "1")
        self.append(p, value, 0)  # the producer's retry wrote it again
        self.final_seen[(p, offset)] = []
        self.final_seen[(p, offset + 1)] = []

        def finish() -> None:
            held = self.final_seen[(p, offset)] + self.final_seen[(p, offset + 1)]
            self.expect("duplicate", p, (inv, comp, min(held), max(held)), value, offset, "1")
        self.finishers.append(finish)

    def inject_aborted_read(self, inj: Injection) -> None:
        p = inj.partition
        value, offset, inv, comp = self.one_send(p, "all", kind="fail",
                                                 error="NOT_ENOUGH_REPLICAS")
        self.reads[(p, offset)] = []
        self.final_seen[(p, offset)] = []

        def finish() -> None:
            seen = self.reads[(p, offset)]
            ops = (inv, comp, min(seen, default=None), max(seen, default=None),
                   min(self.final_seen[(p, offset)]))
            self.expect("aborted-read", p, ops, value, offset, "all")
        self.finishers.append(finish)

    def inject_realtime_order(self, inj: Injection) -> None:
        p = inj.partition
        end = len(self.logs[p])
        pa, pb = self._pid(), self._pid()
        va, vb = self.new_value(), self.new_value()
        a_inv = self.send_invoke(pa, p, "all", va)
        a_ok = self.send_done(pa, p, "all", va, "ok", end + 1)
        b_inv = self.send_invoke(pb, p, "all", vb)
        b_ok = self.send_done(pb, p, "all", vb, "ok", end)
        self.append(p, vb, _ACK_CODE["all"])
        self.append(p, va, _ACK_CODE["all"])
        self.ok_send(p, "all", va, end + 1, a_ok)
        self.ok_send(p, "all", vb, end, b_ok)
        # the example names the final polls holding both values' offsets too
        self.finishers.append(lambda: self.expect(
            "realtime-order", p, (a_inv, a_ok, b_inv, b_ok, self.should_hold(p, end),
                                  self.should_hold(p, end + 1)), vb, end, "all"))

    def _consumer_at_record(self, p: int) -> _Consumer:
        """A consumer whose last event on p is a record at the log's end."""
        con = self.free_consumer()
        for _ in range(3):
            self.one_send(p, "all")
        while True:
            self.consumer_invoke(con, seek={})
            records = self.read_records(con.pos, self.spec.poll_batch)
            self.consumer_complete(con, records)
            if sum(1 for r in records if r[0] == p) < self.spec.poll_batch:
                return con

    def inject_nonmonotonic_poll(self, inj: Injection) -> None:
        p = inj.partition
        con = self._consumer_at_record(p)
        _, last_offset, last_idx = con.last[p]
        self.consumer_invoke(con, seek={})
        records = [(p, last_offset, self.logs[p][last_offset])]
        records += self.read_records(con.pos, self.spec.poll_batch)
        idx = self.consumer_complete(con, records)
        self.expect("nonmonotonic-poll", p, (last_idx, idx), None, last_offset)

    def inject_poll_skip(self, inj: Injection) -> None:
        p = inj.partition
        con = self._consumer_at_record(p)
        _, last_offset, last_idx = con.last[p]
        for _ in range(3):
            self.one_send(p, "all")
        self.consumer_invoke(con, seek={})
        con.pos[p] = last_offset + 2  # jumps over last_offset + 1
        idx = self.consumer_complete(con)
        # the example names the final poll holding the skipped offset too
        self.finishers.append(lambda: self.expect(
            "poll-skip", p, (last_idx, idx, self.should_hold(p, last_offset + 1)), None,
            last_offset + 2))

    def inject_garbage_read(self, inj: Injection) -> None:
        p = inj.partition
        con = self.free_consumer()
        for _ in range(2):
            self.one_send(p, "all")
        self.consumer_invoke(con, seek={p: len(self.logs[p]) - 2})
        records = self.read_records(con.pos, self.spec.poll_batch)
        at = next(i for i, r in enumerate(records) if r[0] == p)
        records[at] = (p, records[at][1], None)
        idx = self.consumer_complete(con, records)
        self.expect("garbage-read", p, (idx,), None, records[at][1])

    def inject_hwm_regression(self, inj: Injection) -> None:
        p = inj.partition
        for _ in range(2):
            self.one_send(p, "all")
        self.observe_round(hwm_override={q: len(self.logs[q]) for q in
                                         range(self.spec.partitions)})
        _, prev_idx = self.last_hwm[p]
        self.observe_round(hwm_override={p: len(self.logs[p]) - 1})
        _, idx = self.last_hwm[p]
        self.expect("hwm-regression", p, (prev_idx, idx), None, None)

    def inject_elr_invariant(self, inj: Injection) -> None:
        p = inj.partition
        idx = self.emit(f'"process":-2,"type":"ok","f":"observe","topic":"{self.topic}",'
                        f'"partition":{p},"leader":1,"leader_epoch":{self.epoch},'
                        f'"isr":[1,2,3],"elr":[3],"last_known_elr":[]')
        self.expect("elr-invariant", p, (idx,))

    def inject_incomplete_final_read(self, inj: Injection) -> None:
        """Nothing to do now: final_reads() cuts the read of this partition short."""


def ensure_run_dir(base: Path, name: str, spec: SyntheticSpec) -> Path:
    """A benchmark's run folder base/name of `spec`, generated once (a marker
    records the spec it was made from; another spec makes it again)."""
    run_dir = base / name
    marker = run_dir / "spec.txt"
    if not (marker.exists() and marker.read_text() == repr(spec)):
        shutil.rmtree(run_dir, ignore_errors=True)
        started = time.monotonic()
        write_run_dir(run_dir, spec)
        marker.write_text(repr(spec))
        print(f"generated {name}: {spec.lines:,} lines in "
              f"{time.monotonic() - started:.1f}s", flush=True)
    return run_dir
