"""Each fault against real containers: it is really in force, and it really ends."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from elr_harness.cluster.cluster import Cluster
from elr_harness.core.config import ClusterConfig, TopicConfig
from elr_harness.nemesis import grudges
from elr_harness.nemesis.faults import kill, one_way_partition, page_cache_loss, partition, pause
from elr_harness.nemesis.injector import FaultInjector
from elr_harness.nemesis.pagecache.control import PageCacheLayer
from elr_harness.workloads.recorder import HistoryRecorder

pytestmark = pytest.mark.integration

CONNECT = ("python3 -c \"import socket,sys; s=socket.socket(); s.settimeout(2); "
           "sys.exit(s.connect_ex(('{host}', 9092)))\"")


@pytest.fixture(scope="module")
def rig(docker_client, tmp_path_factory):
    layer = PageCacheLayer()
    cluster = Cluster(ClusterConfig(name="it-faults", controllers=1, brokers=2,
                                    subnet="10.213.80.0/24"),
                      client=docker_client, broker_storage=layer)
    history = tmp_path_factory.mktemp("faults") / "history.jsonl"
    recorder = HistoryRecorder(history)
    try:
        cluster.up()
        yield cluster, FaultInjector(cluster, recorder, layer), history, recorder
    finally:
        recorder.close()
        cluster.down()


def _can_connect(cluster: Cluster, source: str, target: str) -> bool:
    host = cluster.nodes[target].spec.address
    return cluster.nodes[source].exec(CONNECT.format(host=host), timeout_s=10).ok


def _history(path: Path, recorder: HistoryRecorder) -> list[dict]:
    recorder.flush()
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_partition_stops_traffic_and_heal_restores_it(rig):
    cluster, injector, history, recorder = rig
    assert _can_connect(cluster, "broker-1", "broker-2")
    partition.cut(injector, grudges.isolate("broker-2", sorted(cluster.nodes)))
    assert not _can_connect(cluster, "broker-1", "broker-2")
    assert not _can_connect(cluster, "broker-2", "broker-1"), "both directions are cut"
    injector.heal()
    assert _can_connect(cluster, "broker-1", "broker-2")
    lines = [e for e in _history(history, recorder) if e["f"] == "fault"]
    partition_ok = [e for e in lines if e["fault"] == "partition" and e["type"] == "ok"]
    assert partition_ok and partition_ok[-1]["detail"]["grudge"]["broker-2"] == [
        "broker-1", "controller-1"]
    assert [e["fault"] for e in lines[-2:]] == ["heal", "heal"]


#: Waits (3 s at most) for one UDP datagram on port 9999; exit 0 when one came.
LISTEN = ("python3 -c \"import socket,sys; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
          "s.bind(('0.0.0.0', 9999)); s.settimeout(3); "
          "sys.exit(0 if s.recvfrom(64) else 1)\"")
SEND = ("python3 -c \"import socket,time; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
        "[(s.sendto(b'x', ('{host}', 9999)), time.sleep(0.2)) for _ in range(10)]\"")


def _heard(cluster: Cluster, source: str, target: str) -> bool:
    """Whether a datagram `source` sends reaches `target` (UDP: no answer needed,
    so one direction is tested alone)."""
    import threading

    outcome: dict[str, bool] = {}
    listener = threading.Thread(target=lambda: outcome.__setitem__(
        "ok", cluster.nodes[target].exec(LISTEN, timeout_s=10).ok))
    listener.start()
    cluster.nodes[source].exec(SEND.format(host=cluster.nodes[target].spec.address),
                               timeout_s=10)
    listener.join()
    return outcome["ok"]


def test_a_one_way_partition_deafens_one_side_only(rig):
    """one-way-partition: broker-2 no longer hears broker-1 and the controller, which
    still hear it; the rules sit on broker-2's INPUT chain alone, and the heal of
    every cut removes them."""
    cluster, injector, history, recorder = rig
    assert _heard(cluster, "broker-1", "broker-2") and _heard(cluster, "broker-2", "broker-1")
    one_way_partition.deafen(injector, "broker-2", ["broker-1", "controller-1"])
    assert _heard(cluster, "broker-2", "broker-1"), "broker-1 still hears broker-2"
    assert not _heard(cluster, "broker-1", "broker-2"), "broker-2 no longer hears broker-1"
    rules = cluster.nodes["broker-2"].exec("iptables -S", timeout_s=10).output
    assert "-A INPUT -s" in rules and "-A OUTPUT -d" not in rules, rules
    assert "elr-harness" not in cluster.nodes["broker-1"].exec("iptables -S",
                                                              timeout_s=10).output
    injector.heal()
    assert _heard(cluster, "broker-1", "broker-2")
    lines = [e for e in _history(history, recorder) if e["f"] == "fault"]
    deaf = [e for e in lines if e["fault"] == "one-way-partition"]
    assert [e["type"] for e in deaf] == ["invoke", "ok"]
    assert all(e["nodes"] == ["broker-2"] and e["detail"]["from"] == ["broker-1", "controller-1"]
               for e in deaf)


def test_kill_kills_and_kafka_restarts_unclean(rig):
    cluster, injector, _, _ = rig
    # Kafka only says whether it recovers when it has logs to load.
    cluster.wait_ready(90)
    cluster.create_topic(TopicConfig(name="kill-test", partitions=1, replication_factor=2,
                                     min_insync_replicas=1))
    node = cluster.nodes["broker-1"]
    pid = node.kafka_pid()
    kill.kill(injector, "broker-1")
    assert node.kafka_pid() is None
    assert node.exec(f"test -d /proc/{pid}").exit_code != 0, "the JVM process is gone"
    injector.start("broker-1")
    assert node.kafka_pid() not in (None, pid)
    deadline = time.monotonic() + 60
    log = ""
    while time.monotonic() < deadline:
        log = node.read_file("/var/log/kafka/server.log").decode(errors="replace")
        if "since no clean shutdown file was found" in log:
            break
        time.sleep(1)
    assert "since no clean shutdown file was found" in log
    cluster.wait_ready(90)


def test_pause_freezes_and_resume_thaws(rig):
    cluster, injector, _, _ = rig
    node = cluster.nodes["broker-2"]
    pid = node.kafka_pid()
    pause.pause(injector, "broker-2")
    assert node.exec(f"cat /proc/{pid}/stat").output.split()[2] == "T"
    assert not _can_connect_in_time(cluster, "broker-2")
    injector.resume("broker-2")
    assert node.exec(f"cat /proc/{pid}/stat").output.split()[2] != "T"
    cluster.wait_ready(90)


def _can_connect_in_time(cluster: Cluster, target: str) -> bool:
    """A frozen broker accepts TCP (the kernel does) but never answers a request."""
    from elr_harness.cluster.kafka_wire import WireConnection, WireError

    conn = WireConnection(f"{cluster.nodes[target].spec.address}:9092", timeout_s=2)
    try:
        conn.describe_topic_partitions([])
        return True
    except WireError:
        return False
    finally:
        conn.close()


def test_page_cache_loss_drops_exactly_the_unsynced_bytes(rig):
    cluster, injector, history, recorder = rig
    node = cluster.nodes["broker-2"]
    write = ("python3 -c \"import os\n"
             "f=open('/data/kafka/synced.bin','wb'); f.write(b'S'*5000); f.flush(); "
             "os.fsync(f.fileno()); f.write(b'U'*123); f.close()\n"
             "g=open('/data/kafka/unsynced.bin','wb'); g.write(b'x'*777); g.close()\"")
    assert node.exec(write).ok
    detail = page_cache_loss.power_loss(injector, "broker-2")
    assert node.kafka_pid() is None, "power loss leaves Kafka down"
    assert detail["bytes_dropped"]["synced.bin"] == 123
    assert detail["bytes_dropped"]["unsynced.bin"] == 777
    assert node.exec("stat -c %s /data/kafka/synced.bin").output.strip() == "5000"
    assert node.exec("stat -c %s /data/kafka/unsynced.bin").output.strip() == "0"
    assert node.read_file("/data/kafka/synced.bin") == b"S" * 5000
    injector.start("broker-2")
    cluster.wait_ready(120)
    recorded = [e for e in _history(history, recorder)
                if e["f"] == "fault" and e["fault"] == "page-cache-loss" and e["type"] == "ok"]
    assert recorded[-1]["detail"]["bytes_dropped"]["unsynced.bin"] == 777
