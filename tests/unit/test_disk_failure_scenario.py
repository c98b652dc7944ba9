"""disk-failure's settings: two log dirs per broker and the page-cache layer
unless the user says otherwise, and one log dir refused before anything starts
(Kafka would stop the broker, not take one dir offline); the step that fails
L's dir finds the one dir holding the partition."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from run_flags import run_configs_of

from elr_harness.core.errors import HarnessError
from elr_harness.nemesis.needs import Layer
from elr_harness.nemesis.scenarios import SCENARIOS
from elr_harness.nemesis.scenarios.disk_failure import DiskFailure
from elr_harness.run.spec import RunSpec, validate


def _configs(tmp_path, *flags: str):
    return run_configs_of(tmp_path, "disk-failure", *flags)


def test_brokers_get_two_log_dirs_under_the_page_cache_layer(tmp_path):
    cluster, topic, workload, run, checker = _configs(tmp_path)
    assert cluster.log_dirs == 2
    assert SCENARIOS["disk-failure"].layers == frozenset({Layer.PAGE_CACHE})
    validate(RunSpec(cluster, [topic], workload, run, checker))


def test_one_log_dir_is_refused(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text("[cluster]\nlog_dirs = 1\n")
    cluster, topic, workload, run, checker = _configs(tmp_path, "--config", str(config))
    assert cluster.log_dirs == 1
    with pytest.raises(HarnessError, match="needs two log dirs per broker"):
        validate(RunSpec(cluster, [topic], workload, run, checker))


class _Node:
    def __init__(self, holds: set[str]) -> None:
        self.holds = holds

    def exec(self, cmd, **_):
        return SimpleNamespace(ok=cmd[:2] == ["test", "-d"] and cmd[2] in self.holds)


def _scenario(node: _Node) -> DiskFailure:
    injector = SimpleNamespace(cluster=SimpleNamespace(nodes={"broker-1": node}),
                               log_dirs=lambda: ["/data/d0", "/data/d1"])
    return DiskFailure(injector, observer=None, topic="t")


def test_the_failed_dir_is_the_one_holding_the_partition():
    assert _scenario(_Node({"/data/d1/t-0"}))._dir_of("broker-1") == "/data/d1"


@pytest.mark.parametrize("holds", [set(), {"/data/d0/t-0", "/data/d1/t-0"}])
def test_no_dir_or_two_dirs_holding_it_is_an_error_not_a_guess(holds):
    with pytest.raises(RuntimeError, match="log dirs"):
        _scenario(_Node(holds))._dir_of("broker-1")


class _Observer:
    """Hands out the states in turn, then the last one for ever."""

    def __init__(self, states: list) -> None:
        self.states = states

    def latest(self):
        return [self.states.pop(0) if len(self.states) > 1 else self.states[0]]


def _watched(*states):
    from elr_harness.cluster.observe import PartitionState
    from elr_harness.core.config import ScenarioTimings
    from elr_harness.nemesis.scenarios.unclean_last_replica import Roles

    observed = [PartitionState("t", 0, leader, 5, isr, elr, (), None, (1, 2, 3))
                for leader, isr, elr in states]
    scenario = DiskFailure(SimpleNamespace(), observer=_Observer(observed), topic="t",
                           timings=ScenarioTimings(disk_failure_hold_s=0.2, watch_poll_s=0.01),
                           log=lambda _: None)
    return scenario._watch_l(Roles(1, 2, 3, "broker-1", "broker-2", "broker-3"))


def test_the_hold_is_watched_for_l_in_the_elr_or_leading():
    clean = _watched((2, (2,), (3,)))
    assert clean.reached and clean.observed["l_named"] == []
    named = _watched((2, (2,), (3,)), (2, (2,), (1, 3)), (2, (2,), (3,)))
    assert not named.reached and named.observed["l_named"][0]["elr"] == [1, 3]
    led = _watched((1, (1,), ()))
    assert not led.reached and led.observed["l_named"][0]["leader"] == 1
