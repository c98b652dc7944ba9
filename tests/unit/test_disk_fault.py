"""The disk-fault kind around its FUSE layer: the seeded draws of its package, what
the injector records and does at its end, and the brokers' two log dirs it asks
for. The layer itself failing one directory is test_pagecache_faults.py's job,
Kafka taking that directory offline tests/integration/test_fault_disk.py's."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

import pytest
from list_recorder import ListRecorder

from elr_harness.cluster import kraft
from elr_harness.cluster.node import ExecResult, NodeSpec, Role
from elr_harness.cluster.observe import PartitionState
from elr_harness.core.config import ClusterConfig, DiskFaultConfig
from elr_harness.core.errors import BadInput, HarnessError
from elr_harness.core.history import ENDED_BY, Fault
from elr_harness.nemesis.faults import PACKAGES
from elr_harness.nemesis.injector import FaultInjector
from elr_harness.nemesis.mix import RandomMix
from elr_harness.nemesis.pagecache_faults import DiskFault
from elr_harness.nemesis.targets import Topology

TOPOLOGY = Topology(brokers={"broker-1": 1, "broker-2": 2, "broker-3": 3},
                    controllers={"controller-1": 101})
DIRS = ["/data/kafka/dir-0", "/data/kafka/dir-1"]
QUICK = DiskFaultConfig(min_hold_s=0.01, max_hold_s=0.02)


def state(partition: int, leader: int, isr: tuple[int, ...]) -> PartitionState:
    return PartitionState("t", partition, leader, 5, isr, (), (), None, (1, 2, 3))


FULL = [state(0, 1, (1, 2, 3)), state(1, 2, (2, 3, 1))]
SHRUNK = [state(0, 1, (1, 2)), state(1, 2, (2, 3, 1))]


class Observer:
    def __init__(self, states: list[PartitionState]) -> None:
        self.states = states

    def latest(self) -> list[PartitionState]:
        return self.states

    def wait_for(self, predicate, timeout_s: float):  # noqa: ANN001 - the Observer protocol
        return self.states


class DiskInjector:
    """Writes down the disk-fault calls a mix makes; acts on nothing."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def log_dirs(self) -> list[str]:
        return DIRS

    def disk_fault(self, name, directory, errno_name, operations, drop, step=None,  # noqa: ANN001
                   detail=None):
        self.calls.append(("disk-fault", name, directory, errno_name, operations, drop,
                           detail))

    def end_disk_fault(self, name, step=None, detail=None):  # noqa: ANN001
        self.calls.append(("end", name, detail))


def _mix(states: list[PartitionState], seed: int, config: DiskFaultConfig = QUICK,
         stop: threading.Event | None = None) -> tuple[RandomMix, DiskInjector]:
    injector = DiskInjector()
    mix = RandomMix(injector, Observer(states), ["disk-fault"], seed, interval_s=0.0,
                    replication_factor=3, stop=stop, log=lambda _m: None, topology=TOPOLOGY,
                    active_controller=lambda: 101, disk_fault=config)
    return mix, injector


def _draw(seed: int, states: list[PartitionState] = FULL,
          config: DiskFaultConfig = QUICK) -> tuple[Any, ...] | None:
    mix, injector = _mix(states, seed, config)
    undo = mix.inject("disk-fault")
    if undo is None:
        assert injector.calls == []
        return None
    undo()
    (_, name, directory, errno_name, operations, drop, detail), end = injector.calls
    assert end == ("end", name, {"mix": "disk-fault", "role": detail["role"]})
    return name, directory, errno_name, operations, drop, detail["role"], detail["hold_s"]


def test_the_same_seed_draws_the_same_disk_fault_and_seeds_cover_every_choice() -> None:
    draws = [_draw(seed) for seed in range(60)]
    assert draws == [_draw(seed) for seed in range(60)]
    assert len(set(draws)) > 20
    assert {d[0] for d in draws} == {"broker-1", "broker-2", "broker-3"}
    assert {d[1] for d in draws} == set(DIRS)
    assert {d[2] for d in draws} == {"EIO", "ENOSPC"}
    assert {d[3] for d in draws} == {("fsync",), ("write",), ("fsync", "write")}
    assert {d[5] for d in draws} == {"leader", "isr"}
    assert all(0.01 <= d[6] <= 0.02 for d in draws)
    # a failed fsync drops unsynced data (the default), a failed write alone does not
    assert all(d[4] == ("fsync" in d[3]) for d in draws)


def test_a_dropping_fault_waits_for_full_isrs_and_a_write_fault_does_not() -> None:
    shrunk = [_draw(seed, SHRUNK) for seed in range(40)]
    assert None in shrunk, "a fault that may drop data is skipped while an ISR is short"
    assert all(d is None or d[3] == ("write",) for d in shrunk)
    assert any(d is not None for d in shrunk)
    never_drop = replace(QUICK, drop_on_failed_fsync=False)
    kept = [_draw(seed, SHRUNK, never_drop) for seed in range(40)]
    assert None not in kept and not any(d[4] for d in kept)


def test_the_config_narrows_the_draws() -> None:
    narrow = replace(QUICK, errnos=("ENOSPC",), operations=("write",))
    assert {(d[2], d[3]) for d in (_draw(s, config=narrow) for s in range(10))} == {
        ("ENOSPC", ("write",))}


def test_the_fault_lasts_its_drawn_hold_unless_the_run_stops() -> None:
    held = replace(QUICK, min_hold_s=0.3, max_hold_s=0.3)
    mix, _ = _mix(FULL, 1, held)
    started = time.monotonic()
    mix.inject("disk-fault")()
    assert time.monotonic() - started >= 0.3
    stop = threading.Event()
    mix, injector = _mix(FULL, 1, replace(QUICK, min_hold_s=60.0, max_hold_s=60.0), stop)
    undo = mix.inject("disk-fault")
    stop.set()
    started = time.monotonic()
    undo()
    assert time.monotonic() - started < 5 and injector.calls[-1][0] == "end"


def test_the_package_needs_the_layer_and_two_log_dirs_and_is_ended_by_start() -> None:
    package = PACKAGES["disk-fault"]
    assert package.recorded is Fault.DISK_FAULT and package.in_all
    assert Fault.DISK_FAULT in ENDED_BY[Fault.START]
    assert [str(layer) for layer in package.layers] == ["page-cache"]
    (setting,) = package.cluster_settings
    assert setting.path == "cluster.log_dirs"
    from elr_harness.core.config import RunConfig
    assert setting.value(RunConfig()) == 2


# -- the injector ------------------------------------------------------------------


class Node:
    def __init__(self, name: str) -> None:
        self.spec = NodeSpec(name, Role.BROKER, int(name[-1]), "10.0.0.1")
        self.pid: int | None = 100
        self.signals: list[str] = []

    def exec(self, cmd: Any, timeout_s: float = 60.0) -> ExecResult:
        return ExecResult(0, "")  # the final heal's iptables clean-up

    def kafka_pid(self) -> int | None:
        return self.pid

    def signal_kafka(self, signal_name: str) -> bool:
        self.signals.append(signal_name)
        self.pid = None
        return True

    def wait_kafka_gone(self, timeout_s: float) -> bool:
        return self.pid is None


class Cluster:
    def __init__(self) -> None:
        self.config = replace(ClusterConfig(), log_dirs=2)
        self.nodes = {"broker-1": Node("broker-1")}
        self.restarted: list[str] = []

    def restart_kafka(self, node: Node) -> None:
        self.restarted.append(node.spec.name)
        node.pid = 200


class Layer:
    def __init__(self) -> None:
        self.faults: list[DiskFault | None] = []

    def relative(self, path: str) -> str:
        return path.removeprefix("/data/kafka/")

    def disk_fault(self, node: Node, fault: DiskFault | None) -> dict[str, Any]:
        self.faults.append(fault)
        return {"fault": None, "failed": {"fsync": 3, "write": 0},
                "bytes_dropped": {"dir-1/t-0/0.log": 77}, "total_bytes_dropped": 77}


def test_the_injector_records_the_fault_and_ends_it_with_a_restart_recorded_as_start() -> None:
    cluster, layer, recorder = Cluster(), Layer(), ListRecorder()
    injector = FaultInjector(cluster, recorder, layer)  # type: ignore[arg-type]
    assert injector.log_dirs() == DIRS
    why = {"mix": "disk-fault", "role": "leader"}
    injector.disk_fault("broker-1", DIRS[1], "EIO", ("fsync", "write"), True, detail=why)
    assert layer.faults == [DiskFault("dir-1", "EIO", ("fsync", "write"), drop=True)]
    assert injector.disk_faults == {"broker-1": DIRS[1]}
    node = cluster.nodes["broker-1"]
    assert node.signals == [] and node.pid == 100, "the broker runs on during the fault"
    injector.heal_all()
    assert layer.faults[-1] is None and injector.disk_faults == {}
    assert node.signals == ["TERM"] and cluster.restarted == ["broker-1"] and node.pid == 200
    faults = [(x["type"], x["fault"]) for x in recorder.lines if x["fault"] != Fault.HEAL]
    assert faults == [("invoke", "disk-fault"), ("ok", "disk-fault"),
                      ("invoke", "start"), ("ok", "start")]
    injected = recorder.lines[1]["detail"]
    assert injected == {"dir": DIRS[1], "errno": "EIO", "operations": ["fsync", "write"],
                        "dropped": True, **why}
    ended = recorder.lines[-1]["detail"]
    assert ended == {"step": "final-heal", "stopped_pid": 100, "pid": 200,
                     "failed": {"fsync": 3, "write": 0},
                     "bytes_dropped": {"dir-1/t-0/0.log": 77}, "total_bytes_dropped": 77}


def test_a_write_only_fault_is_not_dropping_and_a_stopped_broker_is_only_started() -> None:
    cluster, layer, recorder = Cluster(), Layer(), ListRecorder()
    injector = FaultInjector(cluster, recorder, layer)  # type: ignore[arg-type]
    injector.disk_fault("broker-1", DIRS[0], "ENOSPC", ("write",), True)
    assert recorder.lines[1]["detail"]["dropped"] is False
    node = cluster.nodes["broker-1"]
    node.pid = None  # Kafka stopped itself (its only log dir failed)
    injector.end_disk_fault("broker-1")
    assert node.signals == [] and node.pid == 200
    assert recorder.lines[-1]["detail"]["stopped_pid"] is None


def test_a_dropping_fault_counts_as_a_loss_and_is_refused_while_the_elr_feature_is_off(
) -> None:
    """A fault that drops unflushed data is a loss like a page-cache loss: the
    feature-change kind waits after it for full ISRs (injector.page_cache_losses),
    and with ELR off (no KIP-966 promise) only a write fault, which drops nothing,
    is made."""
    from elr_harness.nemesis.injector_parts import FaultRefused

    cluster, layer, recorder = Cluster(), Layer(), ListRecorder()
    injector = FaultInjector(cluster, recorder, layer)  # type: ignore[arg-type]
    injector.disk_fault("broker-1", DIRS[0], "ENOSPC", ("write",), True)
    assert injector.page_cache_losses == 0, "a write fault drops nothing"
    injector.end_disk_fault("broker-1")
    injector.disk_fault("broker-1", DIRS[0], "EIO", ("fsync",), True)
    assert injector.page_cache_losses == 1
    injector.end_disk_fault("broker-1")
    lines = len(recorder.lines)
    injector.feature_changes["eligible.leader.replicas.version"] = (1, 0)
    with pytest.raises(FaultRefused, match="ELR feature is off"):
        injector.disk_fault("broker-1", DIRS[0], "EIO", ("fsync",), True)
    assert injector.page_cache_losses == 1 and layer.faults[-1] is None
    assert [x["type"] for x in recorder.lines[lines:]] == [], "nothing recorded"
    injector.disk_fault("broker-1", DIRS[0], "EIO", ("write",), True)
    assert layer.faults[-1] == DiskFault("dir-0", "EIO", ("write",), drop=True)


def test_without_the_layer_a_disk_fault_is_refused_before_anything_is_recorded() -> None:
    recorder = ListRecorder()
    injector = FaultInjector(Cluster(), recorder)  # type: ignore[arg-type]
    with pytest.raises(HarnessError, match="page-cache layer"):
        injector.disk_fault("broker-1", DIRS[0], "EIO", ("write",), False)
    assert recorder.lines == []


# -- the brokers' two log dirs --------------------------------------------------------


def _properties(config: ClusterConfig, role: Role = Role.BROKER) -> dict[str, str]:
    spec = NodeSpec("node-1", role, 1, "10.0.0.5")
    text = kraft.server_properties(spec, [spec], config)
    return dict(line.split("=", 1) for line in text.splitlines())


def test_two_log_dirs_are_subdirectories_of_the_log_dir_and_formatted_on_the_backing() -> None:
    two = replace(ClusterConfig(), log_dirs=2)
    assert kraft.broker_log_dirs(two) == DIRS
    assert _properties(two)["log.dirs"] == "/data/kafka/dir-0,/data/kafka/dir-1"
    assert _properties(ClusterConfig())["log.dirs"] == "/data/kafka"
    assert _properties(two, Role.CONTROLLER)["log.dirs"] == "/data/metadata"
    assert _properties(two)["metadata.log.dir"] == "/data/metadata", \
        "the metadata log is on neither (a failed one would stop the broker)"
    spec = NodeSpec("broker-1", Role.BROKER, 1, "10.0.0.5")
    formatted = kraft.format_properties(kraft.server_properties(spec, [spec], two), two,
                                        "/data/kafka.backing")
    assert "log.dirs=/data/kafka.backing/dir-0,/data/kafka.backing/dir-1\n" in formatted
    one = kraft.format_properties(kraft.server_properties(spec, [spec], ClusterConfig()),
                                  ClusterConfig(), "/data/kafka.backing")
    assert "log.dirs=/data/kafka.backing\n" in one


def _configs(tmp_path, *argv: str, config_text: str | None = None):  # noqa: ANN202
    from elr_harness.cli.main import build_parser
    from elr_harness.run.config import run_configs
    from elr_harness.run.flags import given_flags

    extra = []
    if config_text is not None:
        path = tmp_path / "c.toml"
        path.write_text(config_text)
        extra = ["--config", str(path)]
    args_list = ["run", *argv, "--store", str(tmp_path), *extra]
    parser = build_parser()
    args = parser.parse_args(args_list)
    args.given = given_flags(parser, args_list)
    return run_configs(args)


def test_the_run_gives_brokers_two_log_dirs_when_the_kind_is_in_the_mix(tmp_path) -> None:
    assert _configs(tmp_path, "--nemesis", "disk-fault,kill")[0].log_dirs == 2
    assert _configs(tmp_path, "--nemesis", "all")[0].log_dirs == 2
    assert _configs(tmp_path, "--nemesis", "kill,pause")[0].log_dirs == 1
    assert _configs(tmp_path, "--nemesis", "disk-fault",
                    config_text="[cluster]\nlog_dirs = 1\n")[0].log_dirs == 1
    assert _configs(tmp_path, "--nemesis", "disk-fault",
                    config_text="[run.disk_fault]\nlog_dirs = 3\n")[0].log_dirs == 3
    run = _configs(tmp_path, "--nemesis", "disk-fault",
                   config_text='[run.disk_fault]\nerrnos = ["ENOSPC"]\n')[3]
    assert run.disk_fault.errnos == ("ENOSPC",)


@pytest.mark.parametrize(("text", "message"), [
    ('[run.disk_fault]\nerrnos = ["EPERM"]\n', "[run.disk_fault] errnos: 'EPERM' is not one"),
    ('[run.disk_fault]\noperations = ["fsync+read"]\n', "[run.disk_fault] operations:"),
    ('[run.disk_fault]\noperations = ["write+write"]\n', "[run.disk_fault] operations:"),
    ("[cluster]\nlog_dirs = 0\n", "[cluster] log_dirs:"),
])
def test_bad_disk_fault_settings_are_refused_naming_the_setting(tmp_path, text: str,
                                                                 message: str) -> None:
    with pytest.raises(BadInput) as refused:
        _configs(tmp_path, "--nemesis", "disk-fault", config_text=text)
    assert message in refused.value.message and "\n" not in refused.value.message
