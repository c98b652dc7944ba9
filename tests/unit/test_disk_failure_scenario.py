"""disk-failure's settings: two log dirs per broker and the page-cache layer
unless the user says otherwise, and one log dir refused before anything starts
(Kafka would stop the broker, not take one dir offline); the step that fails
L's dir finds the one dir holding the partition."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from fakes import FakeObserver, cluster_of, injector_rig, specs
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


def _scenario(fail: str | None) -> DiskFailure:
    """broker-1's `test -d` of a log dir fails when it names `fail` (that dir does
    not hold the partition); the fake cluster's two log dirs, as Kafka names them."""
    injector, _ = injector_rig(cluster_of(specs(controllers=1, brokers=1),
                                          broker_1={"fail": fail}))
    return DiskFailure(injector, observer=FakeObserver([]), topic="t")


TESTS = ["test -d /data/kafka/dir-0/t-0", "test -d /data/kafka/dir-1/t-0"]


def test_the_failed_dir_is_the_one_holding_the_partition():
    scenario = _scenario(fail="/data/kafka/dir-0/t-0")
    assert scenario._dir_of("broker-1") == "/data/kafka/dir-1"
    assert scenario.injector.cluster.nodes["broker-1"].commands == TESTS


@pytest.mark.parametrize("fail", ["/t-0", None], ids=["no dir", "two dirs"])
def test_no_dir_or_two_dirs_holding_it_is_an_error_not_a_guess(fail):
    scenario = _scenario(fail)
    with pytest.raises(RuntimeError, match="log dirs"):
        scenario._dir_of("broker-1")
    assert scenario.injector.cluster.nodes["broker-1"].commands == TESTS


def _watched(*states):
    from elr_harness.cluster.observe import PartitionState
    from elr_harness.core.config import ScenarioTimings
    from elr_harness.nemesis.scenarios.unclean_last_replica import Roles

    observed = [PartitionState("t", 0, leader, 5, isr, elr, (), None, (1, 2, 3))
                for leader, isr, elr in states]

    def in_turn() -> list:
        """The states in turn, then the last one for ever."""
        return [observed.pop(0) if len(observed) > 1 else observed[0]]

    scenario = DiskFailure(SimpleNamespace(), observer=FakeObserver(in_turn), topic="t",
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
