"""slow-network against real Kafka (#33, KAFKA-19996's first half): a follower whose
links to the other brokers are throttled hard (low rate and random loss), with no
partition anywhere, falls behind an acks=all producer and leaves the ISR while it
stays registered and unfenced; once the throttle ends it rejoins, and nothing of
the throttle is left on any node.

One cluster for the module: 1 controller, 3 brokers, a topic of RF 3 and min ISR 2,
with the harness's replica.lag.time.max.ms (KafkaTimings, 5 s).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from elr_harness.cluster.cluster import Cluster
from elr_harness.cluster.observe import ObservationError, PartitionObserver, PartitionState
from elr_harness.core.config import ClusterConfig, TopicConfig
from elr_harness.core.history import Fault
from elr_harness.nemesis.faults import slow_network
from elr_harness.nemesis.faults.slow_network import peers_of
from elr_harness.nemesis.injector import FaultInjector
from elr_harness.nemesis.targets import Topology
from elr_harness.workloads.recorder import HistoryRecorder

pytestmark = pytest.mark.integration

TOPIC = TopicConfig(name="slow", partitions=1, replication_factor=3, min_insync_replicas=2)
#: The throttle: 8 kB/s each way and a fifth of the packets lost, against a
#: producer writing ~50 kB/s.
RATE_KBIT, LOSS = 64, 0.2
PRODUCE_PER_S, VALUE_BYTES = 100, 500
#: Bounds on the ISR shrinking (replica.lag.time.max.ms is 5 s) and growing back.
SHRINK_WITHIN_S, REJOIN_WITHIN_S = 45.0, 60.0
#: Watched after the shrink: the slow follower must stay unfenced all along.
WATCH_AFTER_SHRINK_S = 6.0


class SteadyProducer:
    """acks=all sends at a fixed rate in a thread; counts what was acknowledged when.

    One produce request in flight: a broker reads one request of a connection at
    a time, so many small acks=all requests in flight would append one message
    per round trip of the slow follower, which then always caught up (measured:
    ~5 acks/s with librdkafka's default, the follower never left the ISR). With
    one in flight, what the producer wrote meanwhile goes in the next request,
    and the leader's log grows as fast as the producer writes.
    """

    def __init__(self, bootstrap: list[str]) -> None:
        self.producer = Producer({"bootstrap.servers": ",".join(bootstrap), "acks": "all",
                                  "linger.ms": 5, "max.in.flight.requests.per.connection": 1,
                                  "message.timeout.ms": 120_000, "log_level": 0})
        self.acked: list[float] = []
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="steady-producer", daemon=True)

    def _delivered(self, err, _msg) -> None:  # noqa: ANN001 - librdkafka's callback
        if err is None:
            self.acked.append(time.monotonic())
        else:
            self.errors.append(err.name())

    def _run(self) -> None:
        value = b"v" * VALUE_BYTES
        started, sent = time.monotonic(), 0
        while not self.stop.is_set():
            self.producer.produce(TOPIC.name, value, partition=0, on_delivery=self._delivered)
            sent += 1
            self.producer.poll(0)
            self.stop.wait(max(0.0, started + sent / PRODUCE_PER_S - time.monotonic()))
        self.producer.flush(30)

    def acked_since(self, moment: float) -> int:
        return sum(1 for t in list(self.acked) if t >= moment)


@pytest.fixture(scope="module")
def rig(docker_client, tmp_path_factory) -> Iterator[tuple]:
    cluster = Cluster(ClusterConfig(name="it-slow", controllers=1, brokers=3,
                                    subnet="10.213.93.0/24"), client=docker_client)
    history = tmp_path_factory.mktemp("slow") / "history.jsonl"
    recorder = HistoryRecorder(history)
    observer: PartitionObserver | None = None
    producer: SteadyProducer | None = None
    try:
        cluster.up()
        cluster.create_topic(TOPIC)
        observer = cluster.observer()
        producer = SteadyProducer(cluster.bootstrap)
        producer.thread.start()
        yield cluster, FaultInjector(cluster, recorder), observer, producer, history, recorder
    finally:
        if producer is not None:
            producer.stop.set()
            producer.thread.join(60)
        if observer is not None:
            observer.close()
        recorder.close()
        cluster.down()


def _state(observer: PartitionObserver) -> PartitionState | None:
    try:
        (state,) = observer.describe([TOPIC.name])
    except ObservationError:
        return None
    return state


def _wait_state(observer: PartitionObserver, predicate, timeout_s: float,
                seen: list[PartitionState]) -> PartitionState | None:
    """The first observed state that meets predicate within timeout_s (each kept in seen)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        state = _state(observer)
        if state is not None:
            seen.append(state)
            if predicate(state):
                return state
        time.sleep(0.5)
    return None


def _read(node, command: str) -> str:
    """What `command` printed in `node`, read again while it came back empty: under
    load an exec's output can come back cut short (cluster/docker_backend.py's
    read_file says when), and an empty read is no evidence of an empty table.
    Every command read here prints something when all is well."""
    for _ in range(5):
        result = node.exec(command)
        assert result.ok, (node.spec.name, command, result.exit_code, result.output)
        if result.output.strip():
            return result.output
        time.sleep(1)
    return result.output


def _history(path: Path, recorder: HistoryRecorder) -> list[dict]:
    recorder.flush()
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_throttled_follower_leaves_the_isr_unfenced_and_rejoins_once_healed(rig) -> None:
    cluster, injector, observer, producer, history, recorder = rig
    seen: list[PartitionState] = []
    full = _wait_state(observer, lambda s: s.leader >= 0 and len(s.isr) == 3, 60, seen)
    assert full is not None, seen[-3:]
    # acks=all traffic flowing to every replica (each of those acks had all three)
    flowing = time.monotonic()
    deadline = flowing + 60
    while producer.acked_since(flowing) < 30 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert producer.acked_since(flowing) >= 30 and not producer.errors, producer.errors[:5]
    target_id = min(b for b in full.isr if b != full.leader)
    target = cluster.broker_by_id(target_id).spec.name
    peers = peers_of(target, Topology.of(cluster.nodes.values()))
    assert peers == sorted(n.spec.name for n in cluster.brokers if n.spec.name != target)

    throttled_at = time.monotonic()
    throttled = slow_network.throttle(injector, target, peers, RATE_KBIT, LOSS,
                                      detail={"role": "follower"})
    shrunk = _wait_state(observer, lambda s: target_id not in s.isr, SHRINK_WITHIN_S, seen)
    assert shrunk is not None, f"{target} never left the ISR: {seen[-3:]}"
    shrink_s = time.monotonic() - throttled_at
    # no partition: the slow follower is still registered and unfenced
    assert shrunk.fenced is not None and target_id not in shrunk.fenced, shrunk
    assert shrunk.leader == full.leader and len(shrunk.isr) == 2, shrunk
    watched = []
    watch_until = time.monotonic() + WATCH_AFTER_SHRINK_S
    while time.monotonic() < watch_until:
        unfenced = cluster.unfenced_brokers()
        state = _state(observer)
        watched.append((unfenced, state))
        assert target_id in unfenced, f"{target} fenced while slow: {unfenced}"
        assert state is None or state.fenced is None or target_id not in state.fenced, state
        time.sleep(1)
    assert len(watched) >= 3
    # the ISR of two still meets min ISR 2: acks=all writes go on being acknowledged
    assert producer.acked_since(throttled_at + shrink_s) > 0

    # the throttle really was in force: loss counted on the target, the leader's class shaped
    node = cluster.nodes[target]
    drops = [int(line.split()[0]) for line in _read(
        node, "iptables -L INPUT -v -n -x; iptables -L OUTPUT -v -n -x").splitlines()
             if "elr-harness-slow" in line]
    leader_node = cluster.broker_by_id(full.leader)
    leader_dev = throttled["interfaces"][leader_node.spec.name]
    shaped = _read(leader_node, f"tc -s class show dev {leader_dev}")
    print(f"\nISR shrank {shrink_s:.1f} s after the throttle; packets dropped on "
          f"{target}: {sum(drops)}; leader's class to it:\n{shaped}")
    assert len(drops) == 4 and sum(drops) > 0, drops
    assert "class htb e1a:1" in shaped and "rate 64Kbit" in shaped, shaped

    ended_at = time.monotonic()
    slow_network.unthrottle(injector, target, detail={"role": "follower"})
    rejoined = _wait_state(observer, lambda s: len(s.isr) == 3, REJOIN_WITHIN_S, seen)
    assert rejoined is not None, f"{target} never rejoined: {seen[-3:]}"
    print(f"rejoined {time.monotonic() - ended_at:.1f} s after the throttle ended; "
          f"{len(producer.acked)} acks=all sends acknowledged, errors {producer.errors[:5]}")
    for name, each in cluster.nodes.items():
        qdiscs = _read(each, "tc qdisc show")
        rules = _read(each, "iptables -S")
        assert "e1a:" not in qdiscs, (name, qdiscs)
        assert "elr-harness-slow" not in rules, (name, rules)

    lines = [e for e in _history(history, recorder) if e["f"] == "fault" and e["type"] == "ok"]
    begin, end = lines[-2:]
    assert (begin["fault"], end["fault"]) == (Fault.SLOW_NETWORK, Fault.UNTHROTTLE)
    assert begin["nodes"] == end["nodes"] == [target]
    assert {k: begin["detail"][k] for k in ("target", "role", "rate_kbit", "loss",
                                            "interface", "peers")} == {
        "target": target, "role": "follower", "rate_kbit": RATE_KBIT, "loss": LOSS,
        "interface": "eth0", "peers": peers}
