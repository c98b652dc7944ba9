"""The observer with transactions (contract v4): each data partition's LSO and open
transactions, asked of its leader with the high watermark in one round trip; the
internal topics watched once they exist; and a run without transactions observed
exactly as before (no new request, no new field)."""

from __future__ import annotations

import pytest

from elr_harness.cluster import observe
from elr_harness.cluster.kafka_wire import DescribedPartition, DescribedTopic, WireError
from elr_harness.cluster.kafka_wire_config import Features, TopicConfigs
from elr_harness.cluster.kafka_wire_txn import LeaderView, ProducerState
from elr_harness.cluster.observe import PartitionObserver, PartitionState

Key = tuple[str, int]
CO, TS = "__consumer_offsets", "__transaction_state"
FENCED_LEADER_EPOCH, OFFSET_NOT_AVAILABLE = 74, 78


def _producer(start: int) -> ProducerState:
    return ProducerState(7, 0, 3, 1000, 1, start)


class Cluster:
    """What every fake broker agrees on: partitions (key -> leader, epoch), each
    leader's offsets, and the producer state every replica holds."""

    def __init__(self) -> None:
        self.partitions: dict[Key, tuple[int, int]] = {
            ("t", 0): (1, 3), ("t", 1): (2, 5), (CO, 0): (2, 1)}
        self.hwm: dict[Key, int] = {("t", 0): 50, ("t", 1): 9, (CO, 0): 4}
        self.lso: dict[Key, int] = {("t", 0): 41, ("t", 1): 9}
        #: partitions whose leader's high watermark lags its epoch's start
        self.lagging: set[Key] = set()
        self.producers: dict[Key, tuple[ProducerState, ...]] = {
            ("t", 0): (_producer(41), _producer(-1)), ("t", 1): ()}


class Broker:
    def __init__(self, cluster: Cluster, broker_id: int, address: str) -> None:
        self.cluster, self.broker_id = cluster, broker_id
        self.host, port = address.split(":")
        self.port = int(port)
        self.described: list[list[str]] = []
        self.configs_asked: list[list[str]] = []
        self.views: list[tuple[dict, dict]] = []
        self.hwm_asked: list[dict] = []
        self.broken = False
        #: what this broker's own producer state says (a follower's may differ)
        self.producers: dict[Key, tuple[ProducerState, ...]] | None = None

    def describe_topic_partitions(self, topics):
        self.described.append(list(topics))
        names = list(topics) or sorted({t for t, _ in self.cluster.partitions})
        found = []
        for name in names:
            parts = tuple(DescribedPartition(name, p, 0, leader, epoch, (1, 2, 3), (1, 2, 3),
                                             (), (), ())
                          for (t, p), (leader, epoch) in sorted(self.cluster.partitions.items())
                          if t == name)
            found.append(DescribedTopic(name, 0 if parts else 3, parts))
        return found

    def brokers_fenced(self):
        return {1: False, 2: False, 3: False}

    def topic_configs(self, topics, keys):
        self.configs_asked.append(list(topics))
        known = {t for t, _ in self.cluster.partitions}
        return {t: TopicConfigs(0, {"min.insync.replicas": "2"}) if t in known
                else TopicConfigs(3, {}) for t in topics}

    def features(self):
        return Features({"eligible.leader.replicas.version": (0, 1)}, 5,
                        {"eligible.leader.replicas.version": 1})

    def _leads(self, key: Key, epoch: int) -> bool:
        return self.cluster.partitions.get(key) == (self.broker_id, epoch)

    def _offset(self, key: Key, epoch: int, offsets: dict[Key, int]) -> tuple[int, int]:
        if not self._leads(key, epoch):
            return FENCED_LEADER_EPOCH, -1
        if key in self.cluster.lagging:
            return OFFSET_NOT_AVAILABLE, -1
        return 0, offsets[key]

    def latest_offsets(self, epochs):
        self.hwm_asked.append(dict(epochs))
        return {key: self._offset(key, epoch, self.cluster.hwm) for key, epoch in epochs.items()}

    def leader_view(self, epochs, data) -> LeaderView:
        self.views.append((dict(epochs), dict(data)))
        if self.broken:
            raise WireError("connection reset")
        producers = self.producers if self.producers is not None else self.cluster.producers
        return LeaderView(
            {key: self._offset(key, epoch, self.cluster.hwm) for key, epoch in epochs.items()},
            {key: self._offset(key, epoch, self.cluster.lso) for key, epoch in data.items()}
            if data else None,
            # any replica answers DescribeProducers, from its own producer state
            {key: (0, producers.get(key, ())) for key in data} if data else None)

    def close(self) -> None:
        pass


@pytest.fixture
def cluster(monkeypatch) -> Cluster:
    monkeypatch.setattr(observe, "leader_view",
                        lambda connection, epochs, data: connection.leader_view(epochs, data))
    return Cluster()


def _observer(cluster: Cluster, transactions: bool, addresses: bool = True
              ) -> tuple[PartitionObserver, list[Broker]]:
    brokers = [Broker(cluster, i, f"b{i}:9092") for i in (1, 2, 3)]
    observer = PartitionObserver([f"b{i}:9092" for i in (1, 2, 3)],
                                 addresses={i: f"b{i}:9092" for i in (1, 2, 3)}
                                 if addresses else None, transactions=transactions)
    observer._connections = list(brokers)
    return observer, brokers


def _by_key(states: list[PartitionState]) -> dict[Key, PartitionState]:
    return {(s.topic, s.partition): s for s in states}


def test_without_transactions_nothing_new_is_asked_or_recorded(cluster) -> None:
    observer, brokers = _observer(cluster, transactions=False)
    states = _by_key(observer.describe(["t"]))
    assert brokers[0].described == [["t"]], "no internal topic asked for"
    assert brokers[0].configs_asked == [["t"], ["t"]]
    assert all(b.views == [] for b in brokers), "no DescribeProducers, no LSO request"
    assert [b.hwm_asked for b in brokers] == [[{("t", 0): 3}], [{("t", 1): 5}], []]
    assert sorted(states) == [("t", 0), ("t", 1)]
    line = states[("t", 0)].as_observation()
    assert "last_stable_offset" not in line and "open_txn_offsets" not in line
    assert line["high_watermark"] == 50


def test_with_transactions_a_leader_gives_hwm_lso_and_open_transactions(cluster) -> None:
    observer, brokers = _observer(cluster, transactions=True)
    states = _by_key(observer.describe(["t"]))
    # one round trip per leader: broker 1 leads t-0; broker 2 leads t-1 and the
    # internal partition (its high watermark only: no LSO asked of internal topics)
    assert brokers[0].views == [({("t", 0): 3}, {("t", 0): 3})]
    assert brokers[1].views == [({("t", 1): 5, (CO, 0): 1}, {("t", 1): 5})]
    assert brokers[2].views == [] and all(b.hwm_asked == [] for b in brokers)
    first = states[("t", 0)].as_observation()
    assert (first["high_watermark"], first["last_stable_offset"],
            first["open_txn_offsets"]) == (50, 41, [41])
    second = states[("t", 1)].as_observation()
    assert (second["last_stable_offset"], second["open_txn_offsets"]) == (9, []), \
        "none open is an empty list, not an absent field"
    internal = states[(CO, 0)].as_observation()
    assert internal["high_watermark"] == 4 and internal["min_isr"] == 2
    assert "last_stable_offset" not in internal and "open_txn_offsets" not in internal


def test_the_internal_topics_are_watched_once_they_exist(cluster) -> None:
    observer, brokers = _observer(cluster, transactions=True)
    assert (TS, 0) not in _by_key(observer.describe(["t"])), "not there yet: no line"
    assert brokers[0].described == [["t", CO, TS]]
    assert brokers[0].configs_asked[0] == ["t", CO, TS]
    cluster.partitions[(TS, 0)] = (3, 0)
    cluster.hwm[(TS, 0)] = 12
    state = _by_key(observer.describe(["t"]))[(TS, 0)]
    assert (state.leader, state.high_watermark, state.min_isr) == (3, 12, 2)
    assert state.as_observation()["replicas"] == [1, 2, 3]


def test_asked_for_every_topic_the_internal_ones_come_too(cluster) -> None:
    observer, brokers = _observer(cluster, transactions=True)
    assert sorted(_by_key(observer.describe([]))) == [(CO, 0), ("t", 0), ("t", 1)]
    assert brokers[0].described == [[]]


def test_a_lagging_leader_gives_no_lso_but_its_open_transactions(cluster) -> None:
    """OFFSET_NOT_AVAILABLE: the leader at that epoch whose high watermark has not
    reached its epoch's start. The LSO is left out (HISTORY.md); the open
    transactions still come from the leader."""
    cluster.lagging.add(("t", 0))
    observer, _ = _observer(cluster, transactions=True)
    state = _by_key(observer.describe(["t"]))[("t", 0)]
    assert state.high_watermark is None and state.last_stable_offset is None
    assert state.open_txn_offsets == (41,)
    line = state.as_observation()
    assert "last_stable_offset" not in line and line["open_txn_offsets"] == [41]


def test_only_the_leaders_producer_state_counts(cluster) -> None:
    """Without broker addresses every broker is asked; a follower answers
    DescribeProducers too, from its own state, but its ListOffsets at the described
    epoch says it does not lead: its answer is not recorded, whatever the order."""
    observer, brokers = _observer(cluster, transactions=True, addresses=False)
    brokers[2].producers = {("t", 0): (_producer(17),), ("t", 1): (_producer(3),)}
    observer._connections = [brokers[2], brokers[0], brokers[1]]
    states = _by_key(observer.describe(["t"]))
    assert len(brokers[2].views) == 1, "asked, as every broker is"
    assert states[("t", 0)].open_txn_offsets == (41,)
    assert states[("t", 1)].open_txn_offsets == ()
    assert states[("t", 0)].last_stable_offset == 41


def test_a_leader_that_does_not_answer_leaves_only_its_partitions_unknown(cluster) -> None:
    observer, brokers = _observer(cluster, transactions=True)
    brokers[1].broken = True
    states = _by_key(observer.describe(["t"]))
    assert states[("t", 0)].last_stable_offset == 41
    lost = states[("t", 1)].as_observation()
    assert not {"high_watermark", "last_stable_offset", "open_txn_offsets"} & set(lost)


def test_an_avoided_leader_is_not_asked(cluster) -> None:
    observer, brokers = _observer(cluster, transactions=True)
    observer._avoid = lambda: {"b2:9092"}
    states = _by_key(observer.describe(["t"]))
    assert brokers[1].views == []
    assert states[("t", 1)].last_stable_offset is None
    assert states[("t", 1)].open_txn_offsets is None


@pytest.mark.parametrize(("lso", "opened", "expected"), [
    (None, None, {}),
    (0, (), {"last_stable_offset": 0, "open_txn_offsets": []}),
    (-1, (5, 9), {"open_txn_offsets": [5, 9]}),  # a negative LSO is no LSO
])
def test_observe_line_fields(lso, opened, expected) -> None:
    line = PartitionState("t", 0, 1, 2, (1,), (), (), 10, last_stable_offset=lso,
                          open_txn_offsets=opened).as_observation()
    assert {k: line[k] for k in ("last_stable_offset", "open_txn_offsets") if k in line} \
        == expected
    if expected:  # the contract's order: after the v3 fields
        assert list(line)[-len(expected):] == list(expected)
