"""disk-fault against real Kafka: one log dir of a live broker fails, Kafka takes
that dir (only) offline while the broker stays registered and unfenced, the
controller moves the dir's partitions away, and the heal brings the dir back.

One cluster for the module: 1 controller, 3 brokers with two log dirs each
under the FUSE page-cache layer, a topic of RF 3 over 6 partitions (Kafka puts
a broker's replicas in whichever dir has fewest, so both dirs hold some), and
an acks=all producer writing to every partition all along, so the failing dir
meets writes and fsyncs at once.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from elr_harness.cluster import kraft
from elr_harness.cluster.cluster import Cluster
from elr_harness.cluster.kafka_wire import WireConnection, WireError
from elr_harness.cluster.node import Node
from elr_harness.cluster.observe import ObservationError, PartitionState
from elr_harness.core.config import ClusterConfig, PageCacheConfig, TopicConfig
from elr_harness.nemesis.faults import disk_fault
from elr_harness.nemesis.injector import FaultInjector
from elr_harness.nemesis.pagecache.control import PageCacheLayer
from elr_harness.workloads.recorder import HistoryRecorder

pytestmark = pytest.mark.integration

TOPIC = TopicConfig(name="disk-test", partitions=6, replication_factor=3,
                    min_insync_replicas=2)
#: Bounds on what Kafka does on its own (seconds).
OFFLINE_S = 45.0
MOVED_S = 30.0
RECOVERED_S = 120.0
LOG_DIRS_TOOL = "org.apache.kafka.tools.LogDirsCommand"


class AcksAllProducer:
    """Writes to every partition in turn with acks=all until stopped; counts outcomes."""

    def __init__(self, bootstrap: list[str]) -> None:
        self.producer = Producer({"bootstrap.servers": ",".join(bootstrap), "acks": "all",
                                  "linger.ms": 5, "message.timeout.ms": 5000,
                                  "request.timeout.ms": 3000,
                                  "topic.metadata.refresh.interval.ms": 1000})
        self.stop = threading.Event()
        self.outcomes = {"ok": 0, "error": 0}
        self.thread = threading.Thread(target=self._run, name="acks-all", daemon=True)

    def _delivered(self, err: Any, _msg: Any) -> None:
        self.outcomes["error" if err else "ok"] += 1

    def _run(self) -> None:
        value = 0
        while not self.stop.is_set():
            try:
                self.producer.produce(TOPIC.name, str(value).encode(),
                                      partition=value % TOPIC.partitions,
                                      on_delivery=self._delivered)
            except BufferError:
                pass
            value += 1
            self.producer.poll(0.01)
        self.producer.flush(10)


@pytest.fixture(scope="module")
def rig(docker_client, tmp_path_factory) -> Iterator[tuple[Cluster, FaultInjector, Path,
                                                          HistoryRecorder, AcksAllProducer]]:
    layer = PageCacheLayer()
    cluster = Cluster(ClusterConfig(name="it-disk", controllers=1, brokers=3,
                                    subnet="10.213.94.0/24", log_dirs=2),
                      client=docker_client, broker_storage=layer)
    history = tmp_path_factory.mktemp("disk") / "history.jsonl"
    recorder = HistoryRecorder(history)
    producer = None
    try:
        cluster.up()
        cluster.create_topic(TOPIC)
        producer = AcksAllProducer(cluster.bootstrap)
        producer.thread.start()
        yield cluster, FaultInjector(cluster, recorder, layer), history, recorder, producer
    finally:
        if producer is not None:
            producer.stop.set()
            producer.thread.join(20)
        recorder.close()
        cluster.down()


def _wait(what: str, timeout_s: float, probe: Callable[[], Any]) -> Any:
    """probe() until it returns something truthy; its last answer in the failure."""
    deadline = time.monotonic() + timeout_s
    answer = None
    while time.monotonic() < deadline:
        answer = probe()
        if answer:
            return answer
        time.sleep(0.5)
    raise AssertionError(f"{what} within {timeout_s:.0f} s; last: {answer!r}")


def _log_dirs(cluster: Cluster, broker: Node) -> dict[str, dict[str, Any]]:
    """DescribeLogDirs of one broker (Kafka's own tool, run in a node): dir -> {error,
    partitions of the test topic}."""
    asker = next(n for n in cluster.brokers if n is not broker)
    result = asker.exec(kraft.tool_command(
        "128m", LOG_DIRS_TOOL, "--bootstrap-server",
        f"{broker.spec.address}:{cluster.config.broker_port}",
        "--describe", "--broker-list", str(broker.spec.node_id)), timeout_s=60)
    assert result.ok, result.output[-1000:]
    (answer,) = [json.loads(line) for line in result.output.splitlines()
                 if line.startswith("{")]
    (entry,) = answer["brokers"]
    return {d["logDir"]: {"error": d["error"],
                          "partitions": sorted(int(p["partition"].rsplit("-", 1)[1])
                                               for p in d["partitions"]
                                               if p["partition"].startswith(TOPIC.name + "-"))}
            for d in entry["logDirs"]}


def _states(cluster: Cluster) -> dict[int, PartitionState]:
    try:
        return {s.partition: s for s in cluster.describe_all() if s.topic == TOPIC.name}
    except ObservationError:
        return {}


def _fenced(cluster: Cluster, broker_id: int) -> dict[int, bool]:
    """DescribeCluster (fenced brokers included), asked of another broker."""
    for node in cluster.brokers:
        if node.spec.node_id == broker_id:
            continue
        connection = WireConnection(f"{node.spec.address}:{cluster.config.broker_port}", 3.0)
        try:
            return connection.brokers_fenced()
        except WireError:
            continue
        finally:
            connection.close()
    return {}


def _target(cluster: Cluster) -> tuple[Node, str, dict[str, dict[str, Any]]]:
    """A broker and one of its dirs holding a partition it leads (and the other dir
    holding some too), so both leadership moving and the other dir living are seen."""
    states = _wait("every partition led with a full ISR", 60, lambda: (
        s if len(s := _states(cluster)) == TOPIC.partitions
        and all(len(p.isr) == 3 for p in s.values()) else None))
    for broker in cluster.brokers:
        dirs = _log_dirs(cluster, broker)
        for directory, info in dirs.items():
            led = [p for p in info["partitions"] if states[p].leader == broker.spec.node_id]
            others = [d for d in dirs if d != directory and dirs[d]["partitions"]]
            if led and others:
                return broker, directory, dirs
    raise AssertionError("no broker leads a partition in a dir while its other dir holds some")


def _fault_lines(history: Path, recorder: HistoryRecorder) -> list[dict[str, Any]]:
    recorder.flush()
    return [line for line in map(json.loads, history.read_text().splitlines())
            if line["f"] == "fault"]


def _wait_offline(cluster: Cluster, broker: Node, directory: str) -> dict[str, dict[str, Any]]:
    """Kafka's own word that `directory` (and no other dir) went offline, the broker
    living on, registered and unfenced."""
    dirs = _wait(f"{directory} offline on {broker.spec.name}", OFFLINE_S, lambda: (
        d if (d := _log_dirs(cluster, broker))[directory]["error"] else None))
    assert dirs[directory]["error"].endswith(".KafkaStorageException"), dirs
    assert all(info["error"] is None for d, info in dirs.items() if d != directory), dirs
    log = broker.read_file(kraft.SERVER_LOG).decode(errors="replace")
    assert f"Stopped serving replicas in dir {directory}" in log
    broker_id = broker.spec.node_id
    assert _fenced(cluster, broker_id).get(broker_id) is False, "registered, not fenced"
    assert broker_id in cluster.unfenced_brokers()
    return dirs


def _heal(cluster: Cluster, injector: FaultInjector, broker: Node, directory: str,
          in_dir: list[int], pid: int | None) -> tuple[dict[str, Any], float]:
    """End the fault; the broker restarted, both dirs online with their partitions, the
    broker back in every ISR, no fault left in the layer. What the end recorded, and
    the seconds to a full ISR."""
    healed_at = time.monotonic()
    ended = disk_fault.end(injector, broker.spec.name)
    assert ended["stopped_pid"] == pid and ended["pid"] not in (None, pid)
    assert not injector.kept("disk-fault", dict)
    state = json.loads(broker.read_file(f"{PageCacheConfig().control_dir}/fault-state.json"))
    assert state["fault"] is None, "no fault mode remains in the layer"
    cluster.wait_ready(RECOVERED_S)

    def online() -> dict[str, dict[str, Any]] | None:
        dirs = _log_dirs(cluster, broker)
        return dirs if all(info["error"] is None for info in dirs.values()) else None

    dirs = _wait(f"both dirs of {broker.spec.name} online", RECOVERED_S, online)
    assert sorted(dirs[directory]["partitions"]) == sorted(in_dir), dirs
    broker_id = broker.spec.node_id
    _wait(f"broker {broker_id} back in every ISR", RECOVERED_S, lambda: (
        len(s := _states(cluster)) == TOPIC.partitions
        and all(broker_id in p.isr for p in s.values())))
    return ended, time.monotonic() - healed_at


def test_a_failed_log_dir_goes_offline_alone_and_comes_back_after_the_heal(rig):
    cluster, injector, history, recorder, producer = rig
    # acks=all writes flowing to every partition (so every replica holds data in its dir)
    _wait("acks=all writes acknowledged", 60, lambda: producer.outcomes["ok"] >= 100)
    broker, directory, before = _target(cluster)
    broker_id, name = broker.spec.node_id, broker.spec.name
    other = next(d for d in before if d != directory)
    in_dir = before[directory]["partitions"]
    led = [p for p, s in _states(cluster).items() if p in in_dir and s.leader == broker_id]
    assert set(before) == set(kraft.broker_log_dirs(cluster.config)), before
    assert all(info["error"] is None for info in before.values()), before
    pid = broker.kafka_pid()
    written = producer.outcomes["ok"]
    assert written > 0, "acks=all writes flow before the fault"
    seen = len(_fault_lines(history, recorder))

    started = time.monotonic()
    disk_fault.fail(injector, name, directory, "EIO", ("fsync", "write"), drop=True)
    _wait_offline(cluster, broker, directory)
    offline_s = time.monotonic() - started
    assert broker.kafka_pid() == pid, "the broker lives on"

    # the controller moved that dir's partitions away; the other dir's stay
    def moved() -> dict[int, PartitionState] | None:
        states = _states(cluster)
        if len(states) != TOPIC.partitions:
            return None
        gone = all(states[p].leader not in (broker_id, -1) and broker_id not in states[p].isr
                   for p in in_dir)
        return states if gone else None

    states = _wait(f"{directory}'s partitions moved off broker {broker_id}", MOVED_S, moved)
    moved_s = time.monotonic() - started
    assert all(broker_id in states[p].isr for p in before[other]["partitions"]), states
    assert led and all(states[p].leader != broker_id for p in led)
    (fault,) = [x for x in _fault_lines(history, recorder)[seen:] if x["type"] == "ok"]
    assert (fault["fault"], fault["nodes"]) == ("disk-fault", [name])
    assert fault["detail"] == {"dir": directory, "errno": "EIO",
                               "operations": ["fsync", "write"], "dropped": True}

    ended, recovered_s = _heal(cluster, injector, broker, directory, in_dir, pid)
    assert ended["failed"]["write"] > 0, ended
    assert producer.outcomes["ok"] > written, "acks=all writes went on"
    assert [(x["fault"], x["type"], x["nodes"]) for x in _fault_lines(history, recorder)[seen:]
            ] == [("disk-fault", "invoke", [name]), ("disk-fault", "ok", [name]),
                  ("start", "invoke", [name]), ("start", "ok", [name])]
    print(f"\n[disk-fault EIO fsync+write] {name} {directory}: offline after "
          f"{offline_s:.1f} s, partitions {in_dir} moved after {moved_s:.1f} s (led {led}); "
          f"heal to full ISR {recovered_s:.1f} s; layer failed {ended['failed']}, dropped "
          f"{ended['total_bytes_dropped']} bytes; acks=all {producer.outcomes}")


def test_a_failed_fsync_alone_takes_the_dir_offline_and_drops_what_it_did_not_sync(rig):
    """ENOSPC on fsync only: writes go on, so Kafka meets the error at its next fsync
    there (the high-watermark checkpoint, every 5 s), whose unsynced bytes the layer
    then throws away, as Linux does."""
    cluster, injector, history, recorder, _ = rig
    broker = cluster.brokers[-1]
    before = _log_dirs(cluster, broker)
    directory = max(before, key=lambda d: len(before[d]["partitions"]))
    in_dir = before[directory]["partitions"]
    assert in_dir and all(info["error"] is None for info in before.values()), before
    pid = broker.kafka_pid()
    started = time.monotonic()
    disk_fault.fail(injector, broker.spec.name, directory, "ENOSPC", ("fsync",), drop=True)
    _wait_offline(cluster, broker, directory)
    offline_s = time.monotonic() - started
    assert broker.kafka_pid() == pid, "the broker lives on"
    ended, recovered_s = _heal(cluster, injector, broker, directory, in_dir, pid)
    assert ended["failed"]["fsync"] > 0 and ended["failed"]["write"] == 0, ended
    assert ended["total_bytes_dropped"] > 0, ended
    assert ended["total_bytes_dropped"] == sum(ended["bytes_dropped"].values())
    prefix = directory.removeprefix(cluster.config.log_dir).strip("/") + "/"
    assert all(path.startswith(prefix) for path in ended["bytes_dropped"]), ended
    print(f"\n[disk-fault ENOSPC fsync] {broker.spec.name} {directory}: offline after "
          f"{offline_s:.1f} s; heal to full ISR {recovered_s:.1f} s; layer failed "
          f"{ended['failed']}, dropped {ended['bytes_dropped']}")
