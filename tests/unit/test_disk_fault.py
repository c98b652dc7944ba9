"""The disk-fault kind around its FUSE layer: the seeded draws of its package, what
it records through the injector and does at its end, and the brokers' two log dirs it asks
for. The layer itself failing one directory is test_pagecache_faults.py's job,
Kafka taking that directory offline tests/integration/test_fault_disk.py's."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

import pytest
from fakes import (
    FakeAdmin,
    FakeObserver,
    FakePageCache,
    ListRecorder,
    cluster_of,
    specs,
    topology_of,
)

from elr_harness.cluster import kraft
from elr_harness.cluster.node import NodeSpec, Role
from elr_harness.cluster.observe import PartitionState
from elr_harness.core.config import ClusterConfig, RunConfig
from elr_harness.core.errors import BadInput, HarnessError
from elr_harness.core.fault_meanings import ENDED_BY
from elr_harness.core.history import ELR_FEATURE, Fault
from elr_harness.nemesis.faults import PACKAGES, disk_fault, feature_change
from elr_harness.nemesis.faults.disk_fault import DiskFaultSettings
from elr_harness.nemesis.injector import FaultInjector, FaultRefused
from elr_harness.nemesis.mix import RandomMix
from elr_harness.nemesis.pagecache.pagecache_faults import DiskFault

DIRS = ["/data/kafka/dir-0", "/data/kafka/dir-1"]
QUICK = DiskFaultSettings(min_hold_s=0.01, max_hold_s=0.02)


def state(partition: int, leader: int, isr: tuple[int, ...]) -> PartitionState:
    return PartitionState("t", partition, leader, 5, isr, (), (), None, (1, 2, 3))


FULL = [state(0, 1, (1, 2, 3)), state(1, 2, (2, 3, 1))]
SHRUNK = [state(0, 1, (1, 2)), state(1, 2, (2, 3, 1))]


def Layer() -> FakePageCache:  # noqa: N802 - the page-cache layer this file's faults meet
    """The page-cache layer as a disk fault uses it: each fault set (None: cleared) is
    kept, and clearing one says what it did."""
    return FakePageCache(cleared={"fault": None, "failed": {"fsync": 3, "write": 0},
                                  "bytes_dropped": {"dir-1/t-0/0.log": 77},
                                  "total_bytes_dropped": 77})



def rig(controllers: int = 1, brokers: int = 3
        ) -> tuple[FaultInjector, ListRecorder, FakePageCache]:
    """A real injector over fake nodes (two log dirs under /data/kafka), a
    page-cache layer that writes down each fault, ELR on."""
    layer, recorder = Layer(), ListRecorder()
    cluster = cluster_of(specs(controllers=controllers, brokers=brokers))
    injector = FaultInjector(cluster, recorder, layer, FakeAdmin())  # type: ignore[arg-type]
    return injector, recorder, layer


#: controller-1 and broker-1..3, as the mix's targets are chosen among them
TOPOLOGY = topology_of(cluster_of(specs(controllers=1)))


def _mix(states: list[PartitionState], seed: int, settings: DiskFaultSettings = QUICK,
         stop: threading.Event | None = None) -> tuple[RandomMix, ListRecorder]:
    injector, recorder, _ = rig()
    mix = RandomMix(injector, FakeObserver(states), ["disk-fault"], seed, interval_s=0.0,
                    replication_factor=3, stop=stop, log=lambda _m: None, topology=TOPOLOGY,
                    active_controller=lambda: 1001, faults={"disk-fault": settings})
    return mix, recorder


def _draw(seed: int, states: list[PartitionState] = FULL,
          settings: DiskFaultSettings = QUICK) -> tuple[Any, ...] | None:
    """(broker, dir, errno, operations, dropped, role, hold_s) of the fault the mix
    drew; None when it skipped it."""
    mix, recorder = _mix(states, seed, settings)
    undo = mix.inject("disk-fault")
    if undo is None:
        assert recorder.lines == []
        return None
    undo()
    begin, done, end, ended = recorder.lines
    assert (begin["fault"], done["type"], end["fault"], ended["type"]) == (
        Fault.DISK_FAULT, "ok", Fault.START, "ok")
    detail, (name,) = begin["detail"], begin["nodes"]
    assert end["nodes"] == [name]
    assert end["detail"] == {"mix": "disk-fault", "role": detail["role"]}
    return (name, detail["dir"], detail["errno"], tuple(detail["operations"]),
            detail["dropped"], detail["role"], detail["hold_s"])


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


def test_the_settings_narrow_the_draws() -> None:
    narrow = replace(QUICK, errnos=("ENOSPC",), operations=("write",))
    assert {(d[2], d[3]) for d in (_draw(s, settings=narrow) for s in range(10))} == {
        ("ENOSPC", ("write",))}


def test_the_fault_lasts_its_drawn_hold_unless_the_run_stops() -> None:
    held = replace(QUICK, min_hold_s=0.3, max_hold_s=0.3)
    mix, recorder = _mix(FULL, 1, held)
    started = time.monotonic()
    mix.inject("disk-fault")()
    assert time.monotonic() - started >= 0.3
    assert recorder.lines[0]["detail"]["hold_s"] == 0.3
    stop = threading.Event()
    mix, recorder = _mix(FULL, 1, replace(QUICK, min_hold_s=60.0, max_hold_s=60.0), stop)
    undo = mix.inject("disk-fault")
    stop.set()
    started = time.monotonic()
    undo()
    assert time.monotonic() - started < 5 and recorder.lines[-1]["fault"] == Fault.START


def test_the_package_needs_the_layer_and_two_log_dirs_and_is_ended_by_start() -> None:
    package = PACKAGES["disk-fault"]
    assert package.recorded is Fault.DISK_FAULT and package.in_all
    assert Fault.DISK_FAULT in ENDED_BY[Fault.START]
    assert [str(layer) for layer in package.layers] == ["page-cache"]
    assert package.settings is DiskFaultSettings
    (setting,) = package.cluster_settings
    assert setting.path == "cluster.log_dirs"
    assert setting.value(RunConfig()) == 2
    three = RunConfig(faults={"disk-fault": DiskFaultSettings(log_dirs=3)})
    assert setting.value(three) == 3


# -- the kind's start and end, through the injector ---------------------------------


def broker_rig() -> tuple[FaultInjector, ListRecorder, FakePageCache]:
    """broker-1 alone (pid 101; started again as 201), two log dirs."""
    return rig(controllers=0, brokers=1)


def failing(injector: FaultInjector) -> dict[str, str]:
    """The kind's own record: broker -> its failing log dir."""
    return injector.kept("disk-fault", dict)


def test_the_kind_records_the_fault_and_ends_it_with_a_restart_recorded_as_start() -> None:
    injector, recorder, layer = broker_rig()
    assert disk_fault.log_dirs(injector) == DIRS
    why = {"mix": "disk-fault", "role": "leader"}
    disk_fault.fail(injector, "broker-1", DIRS[1], "EIO", ("fsync", "write"), True, detail=why)
    assert layer.faults == [DiskFault("dir-1", "EIO", ("fsync", "write"), drop=True)]
    assert failing(injector) == {"broker-1": DIRS[1]}
    node = injector.cluster.nodes["broker-1"]
    assert node.signals == [] and node.pid == 101, "the broker runs on during the fault"
    injector.heal_all()
    assert layer.faults[-1] is None and failing(injector) == {}
    assert node.signals == ["TERM"] and injector.cluster.started == ["broker-1"]
    assert node.pid == 201
    faults = [(x["type"], x["fault"]) for x in recorder.lines if x["fault"] != Fault.HEAL]
    assert faults == [("invoke", "disk-fault"), ("ok", "disk-fault"),
                      ("invoke", "start"), ("ok", "start")]
    injected = recorder.lines[1]["detail"]
    assert injected == {"dir": DIRS[1], "errno": "EIO", "operations": ["fsync", "write"],
                        "dropped": True, **why}
    ended = recorder.lines[-1]["detail"]
    assert ended == {"step": "final-heal", "stopped_pid": 101, "pid": 201,
                     "failed": {"fsync": 3, "write": 0},
                     "bytes_dropped": {"dir-1/t-0/0.log": 77}, "total_bytes_dropped": 77}


def test_a_write_only_fault_is_not_dropping_and_a_stopped_broker_is_only_started() -> None:
    injector, recorder, _ = broker_rig()
    disk_fault.fail(injector, "broker-1", DIRS[0], "ENOSPC", ("write",), True)
    assert recorder.lines[1]["detail"]["dropped"] is False
    node = injector.cluster.nodes["broker-1"]
    node.pid = None  # Kafka stopped itself (its only log dir failed)
    disk_fault.end(injector, "broker-1")
    assert node.signals == [] and node.pid == 201
    assert recorder.lines[-1]["detail"]["stopped_pid"] is None
    assert "broker-1" not in injector.down


def test_a_dropping_fault_counts_as_a_loss_and_is_refused_while_the_elr_feature_is_off(
) -> None:
    """A fault that drops unflushed data is a loss like a page-cache loss: the
    feature-change kind waits after it for full ISRs (injector.page_cache_losses),
    and with ELR off (no KIP-966 promise) only a write fault, which drops nothing,
    is made."""
    injector, recorder, layer = broker_rig()
    disk_fault.fail(injector, "broker-1", DIRS[0], "ENOSPC", ("write",), True)
    assert injector.page_cache_losses == 0, "a write fault drops nothing"
    disk_fault.end(injector, "broker-1")
    disk_fault.fail(injector, "broker-1", DIRS[0], "EIO", ("fsync",), True)
    assert injector.page_cache_losses == 1
    disk_fault.end(injector, "broker-1")
    feature_change.change(injector, ELR_FEATURE, 0, 1)
    assert injector.protection_off
    lines = len(recorder.lines)
    with pytest.raises(FaultRefused, match="ELR feature is off"):
        disk_fault.fail(injector, "broker-1", DIRS[0], "EIO", ("fsync",), True)
    assert injector.page_cache_losses == 1 and layer.faults[-1] is None
    assert [x["type"] for x in recorder.lines[lines:]] == [], "nothing recorded"
    assert failing(injector) == {}
    disk_fault.fail(injector, "broker-1", DIRS[0], "EIO", ("write",), True)
    assert layer.faults[-1] == DiskFault("dir-0", "EIO", ("write",), drop=True)


def test_without_the_layer_a_disk_fault_is_refused_before_anything_is_recorded() -> None:
    recorder = ListRecorder()
    injector = FaultInjector(cluster_of(specs(0, 1)), recorder)  # type: ignore[arg-type]
    with pytest.raises(HarnessError, match="page-cache layer"):
        disk_fault.fail(injector, "broker-1", DIRS[0], "EIO", ("write",), False)
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
                    config_text='[run.faults.disk-fault]\nlog_dirs = 3\n')[0].log_dirs == 3
    run = _configs(tmp_path, "--nemesis", "disk-fault",
                   config_text='[run.faults.disk-fault]\nerrnos = ["ENOSPC"]\n')[3]
    assert run.faults["disk-fault"] == replace(DiskFaultSettings(), errnos=("ENOSPC",))


@pytest.mark.parametrize(("text", "message"), [
    ('[run.faults.disk-fault]\nerrnos = ["EPERM"]\n',
     "[run.faults.disk-fault] errnos: 'EPERM' is not one"),
    ('[run.faults.disk-fault]\noperations = ["fsync+read"]\n',
     "[run.faults.disk-fault] operations:"),
    ('[run.faults.disk-fault]\noperations = ["write+write"]\n',
     "[run.faults.disk-fault] operations:"),
    ("[cluster]\nlog_dirs = 0\n", "[cluster] log_dirs:"),
])
def test_bad_disk_fault_settings_are_refused_naming_the_setting(tmp_path, text: str,
                                                                 message: str) -> None:
    with pytest.raises(BadInput) as refused:
        _configs(tmp_path, "--nemesis", "disk-fault", config_text=text)
    assert message in refused.value.message and "\n" not in refused.value.message
