"""The cluster with transactions: transaction.version finalized at format time, the
internal topics' settings (RF 3, min ISR 2) and how they are made and guarded at
start, the transaction timings on every broker, and `cluster status` showing the
internal topics of a cluster built for transactions."""

from __future__ import annotations

from dataclasses import replace

import pytest

from elr_harness.cluster import internal_topics, kraft
from elr_harness.cluster.cluster import Cluster
from elr_harness.cluster.kafka_wire import WireError
from elr_harness.cluster.kafka_wire_config import TopicConfigs
from elr_harness.cluster.node import NodeSpec, Role
from elr_harness.cluster.observe import PartitionState
from elr_harness.core.config import ClusterConfig
from elr_harness.core.errors import BadInput, ClusterStartError

BROKER = NodeSpec("broker-1", Role.BROKER, 1, "10.0.0.1")
CONTROLLER = NodeSpec("controller-1", Role.CONTROLLER, 1001, "10.0.0.2")


def _properties(config: ClusterConfig, spec: NodeSpec = BROKER, brokers: int = 3
                ) -> dict[str, str]:
    specs = [CONTROLLER, *(NodeSpec(f"broker-{i}", Role.BROKER, i, f"10.0.0.{10 + i}")
                           for i in range(1, brokers + 1))]
    text = kraft.server_properties(spec, specs, config)
    return dict(line.split("=", 1) for line in text.splitlines())


def _features(command: list[str]) -> list[str]:
    return [command[i + 1] for i, arg in enumerate(command) if arg == "--feature"]


@pytest.mark.parametrize(("config", "features"), [
    (ClusterConfig(), ["eligible.leader.replicas.version=1"]),  # the release's default TV
    (ClusterConfig(elr=False, transaction_version=2),
     ["eligible.leader.replicas.version=0", "transaction.version=2"]),
    (ClusterConfig(transaction_version=1),
     ["eligible.leader.replicas.version=1", "transaction.version=1"]),
    (ClusterConfig(transaction_version=0),
     ["eligible.leader.replicas.version=1", "transaction.version=0"]),
])
def test_transaction_version_is_finalized_at_format_time(config, features) -> None:
    command = kraft.format_command(config, "AAAAAAAAAAAAAAAAAAAAAA", "/x.properties")
    assert _features(command) == features, "one --feature NAME=LEVEL per feature"
    assert command[command.index("format") + 1:command.index("--feature")] == [
        "--config", "/x.properties", "--cluster-id", "AAAAAAAAAAAAAAAAAAAAAA",
        "--ignore-formatted"]


def test_a_plain_broker_keeps_its_internal_topic_settings() -> None:
    props = _properties(ClusterConfig(), brokers=2)
    assert (props["offsets.topic.replication.factor"],
            props["transaction.state.log.replication.factor"],
            props["transaction.state.log.min.isr"]) == ("2", "2", "1")
    assert "min.insync.replicas" not in props, "no broker-wide min ISR"


def test_with_transactions_the_internal_topics_get_rf_3_and_min_isr_2() -> None:
    props = _properties(ClusterConfig(guard_internal_topics=True))
    assert (props["offsets.topic.replication.factor"],
            props["transaction.state.log.replication.factor"],
            props["transaction.state.log.min.isr"]) == ("3", "3", "2")
    assert "min.insync.replicas" not in props, \
        "__consumer_offsets' min ISR is its own topic config, not every topic's default"


def test_the_transaction_timings_are_on_every_broker_and_no_controller() -> None:
    timings = replace(ClusterConfig().timings, transaction_abort_check_interval_ms=1500,
                      transaction_max_timeout_ms=30000)
    for guarded in (False, True):
        config = ClusterConfig(guard_internal_topics=guarded, timings=timings)
        props = _properties(config)
        assert props["transaction.abort.timed.out.transaction.cleanup.interval.ms"] == "1500"
        assert props["transaction.max.timeout.ms"] == "30000"
        controller = _properties(config, CONTROLLER)
        assert not any(key.startswith("transaction.") for key in controller)


@pytest.mark.parametrize(("config", "message"), [
    (ClusterConfig(guard_internal_topics=True, brokers=2), "at least 3 brokers"),
    (ClusterConfig(transaction_version=-1), "not a feature level"),
])
def test_impossible_transaction_settings_are_refused_before_anything_starts(config, message):
    with pytest.raises(BadInput, match=message):
        kraft.validate_topology(config)


# -- the internal topics made and guarded at start ------------------------------------

class _Connection:
    """A broker's answers to the guard's requests, recorded."""

    def __init__(self, min_isr: dict[str, str] | None, asked: list) -> None:
        self.min_isr, self.asked = min_isr, asked

    def topic_configs(self, topics, keys):
        self.asked.append(("configs", list(topics), list(keys)))
        if self.min_isr is None:
            raise WireError("refused")
        return {t: TopicConfigs(0, {"min.insync.replicas": self.min_isr[t]})
                if t in self.min_isr else TopicConfigs(3, {}) for t in topics}

    def close(self) -> None:
        self.asked.append(("close",))


def _brokers(monkeypatch, answers: dict[str, dict[str, str] | None]) -> list:
    asked: list = []
    monkeypatch.setattr(internal_topics, "WireConnection",
                        lambda address, timeout: _Connection(answers[address], asked))
    return asked


BOTH_2 = {kraft.CONSUMER_OFFSETS_TOPIC: "2", kraft.TRANSACTION_STATE_TOPIC: "2"}


@pytest.mark.parametrize(("answers", "expected"), [
    ({"a": BOTH_2, "b": BOTH_2}, {kraft.CONSUMER_OFFSETS_TOPIC: 2,
                                  kraft.TRANSACTION_STATE_TOPIC: 2}),
    # one broker has not replayed the change yet: no agreement, no answer
    ({"a": BOTH_2, "b": {**BOTH_2, kraft.CONSUMER_OFFSETS_TOPIC: "1"}}, None),
    ({"a": BOTH_2, "b": None}, None),  # a broker that does not answer
    ({"a": {kraft.TRANSACTION_STATE_TOPIC: "2"}, "b": {kraft.TRANSACTION_STATE_TOPIC: "2"}},
     {kraft.TRANSACTION_STATE_TOPIC: 2}),  # __consumer_offsets not there yet
])
def test_internal_min_isr_is_what_every_broker_reads(monkeypatch, answers, expected) -> None:
    asked = _brokers(monkeypatch, answers)
    assert internal_topics.internal_min_isr(list(answers), 1.0) == expected
    assert ("configs", list(kraft.INTERNAL_TOPICS), ["min.insync.replicas"]) in asked
    assert asked.count(("close",)) == sum(1 for a in asked if a[0] == "configs")


def test_the_topics_are_made_by_asking_for_both_kinds_of_coordinator(monkeypatch) -> None:
    """A FindCoordinator of each key type (a broker creates a missing internal topic);
    then every broker must see both topics full. The first broker that takes the
    connection is asked; a broker that does not is skipped."""
    asked: list = []

    def find(connection, key, key_type):
        if connection == "a":
            raise WireError("refused")
        asked.append((connection, key, key_type))

    ready: list = []
    monkeypatch.setattr(internal_topics, "WireConnection", _Named)
    monkeypatch.setattr(internal_topics, "find_coordinator", find)
    monkeypatch.setattr(internal_topics, "topic_ready_everywhere",
                        lambda bootstrap, topic, partitions, rf, timeout:
                        ready.append((tuple(bootstrap), topic, partitions, rf)) or True)
    assert internal_topics._exist_full(["a", "b", "c"], 1.0)
    assert asked == [("b", internal_topics.PROBE_KEY, 0), ("b", internal_topics.PROBE_KEY, 1)]
    assert ready == [(("a", "b", "c"), topic, 3, 3) for topic in kraft.INTERNAL_TOPICS]


class _Named(str):
    """A connection that is its address (for _exist_full's test)."""

    def __new__(cls, address, timeout):
        return super().__new__(cls, address)

    def close(self) -> None:
        pass


class _Guarded(Cluster):
    def __init__(self) -> None:
        self.config = replace(ClusterConfig(guard_internal_topics=True),
                              partitions_poll_s=0.0)
        self.config = replace(self.config, timeouts=replace(self.config.timeouts,
                                                            topic_ready_s=0.05))
        self.logged: list[str] = []
        self.log = self.logged.append
        self.nodes = {}
        self.specs = []

    @property
    def bootstrap(self) -> list[str]:
        return ["a:9092", "b:9092", "c:9092"]


def test_guarding_sets_consumer_offsets_min_isr_then_waits_until_all_read_2(monkeypatch):
    steps: list = []
    reads = iter([None, {kraft.CONSUMER_OFFSETS_TOPIC: 2, kraft.TRANSACTION_STATE_TOPIC: 2}])
    monkeypatch.setattr(internal_topics, "_exist_full", lambda b, t: steps.append("exist")
                        or True)
    monkeypatch.setattr(internal_topics, "_set_min_isr",
                        lambda cluster, topic, value: steps.append((topic, value)))
    monkeypatch.setattr(internal_topics, "internal_min_isr",
                        lambda b, t: steps.append("read") or next(reads))
    cluster = _Guarded()
    internal_topics.guard_internal_topics(cluster)
    assert steps == ["exist", ("__consumer_offsets", 2), "read", "read"]
    assert cluster.logged == ["internal topics __consumer_offsets, __transaction_state: "
                              "RF 3, min ISR 2"]


def test_internal_topics_that_never_come_up_fail_the_start(monkeypatch) -> None:
    monkeypatch.setattr(internal_topics, "_exist_full", lambda b, t: False)
    with pytest.raises(ClusterStartError, match="did not come up"):
        internal_topics.guard_internal_topics(_Guarded())


# -- cluster status --------------------------------------------------------------------

class _Status(Cluster):
    """A cluster found running (no engine), whose observer describes fixed states."""

    def __init__(self, facts: dict[str, str]) -> None:
        self.config = ClusterConfig()
        self.facts = facts
        self.nodes = {}
        self.specs = []

    def observer(self, timeout_s=None, avoid=None):
        states = [PartitionState(t, 0, 1, 0, (1,), (), (), 0) for t in
                  ("__consumer_offsets", "__share_group_state", "__transaction_state", "t")]
        return type("Observer", (), {"describe": lambda self, topics: states,
                                     "close": lambda self: None})()


@pytest.mark.parametrize(("facts", "topics"), [
    ({"elr": "on"}, ["t"]),
    ({"elr": "on", "transactions": "on"}, ["__consumer_offsets", "__transaction_state", "t"]),
])
def test_status_shows_the_guarded_internal_topics_of_a_cluster_with_transactions(facts,
                                                                                  topics):
    cluster = _Status(facts)
    assert cluster.has_transactions() == ("transactions" in facts)
    assert [s.topic for s in cluster.describe_all()] == topics
