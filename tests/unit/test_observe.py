"""The observer's guards against stale views: leader epochs never go down, only
the described leader's high watermark counts, and the fenced list, a topic's
min ISR and the ELR feature's level are recorded only when the answers before
and after the description agree."""

from __future__ import annotations

import pytest

from elr_harness.cluster import observe
from elr_harness.cluster.kafka_wire import DescribedPartition, DescribedTopic, WireError
from elr_harness.cluster.kafka_wire_config import Features, TopicConfigs
from elr_harness.cluster.observe import ObservationError, PartitionObserver


class FakeBroker:
    """Answers describe and ListOffsets as one broker would, from fixed views."""

    def __init__(self, address: str, leader: int, epoch: int, hwm: int) -> None:
        self.host, port = address.split(":")
        self.port = int(port)
        self.view = (leader, epoch)
        self.hwm = hwm
        self.asked: list[dict] = []
        #: what DescribeCluster answers, call after call (None: a wire error)
        self.fenced_answers: list[dict[int, bool] | None] = []
        #: what DescribeConfigs answers for min.insync.replicas, call after call:
        #: topic -> (error code, value); None: a wire error
        self.config_answers: list[dict[str, tuple[int, str | None]] | None] = []
        self.configs_asked: list[list[str]] = []
        #: the ELR feature's finalized level ApiVersions answers, call after call
        #: ("absent": supported but not finalized; "unknown": epoch -1; None: error)
        self.feature_answers: list[int | str | None] = []

    def describe_topic_partitions(self, topics):
        leader, epoch = self.view
        return [DescribedTopic("t", 0, (DescribedPartition(
            "t", 0, 0, leader, epoch, (1, 2), (1, 2), (), (), ()),))]

    def latest_offsets(self, epochs):
        self.asked.append(dict(epochs))
        return {key: (0 if epoch == self.view[1] else 75, self.hwm if epoch == self.view[1]
                      else -1) for key, epoch in epochs.items()}

    def brokers_fenced(self):
        answer = self.fenced_answers.pop(0) if self.fenced_answers else {1: False, 2: False}
        if answer is None:
            raise WireError("gone")
        return answer

    def topic_configs(self, topics, keys):
        self.configs_asked.append(list(topics))
        assert list(keys) == ["min.insync.replicas"]
        answer = self.config_answers.pop(0) if self.config_answers else {"t": (0, "2")}
        if answer is None:
            raise WireError("gone")
        return {topic: TopicConfigs(code, {"min.insync.replicas": value})
                for topic, (code, value) in answer.items()}

    def features(self):
        answer = self.feature_answers.pop(0) if self.feature_answers else 1
        if answer is None:
            raise WireError("gone")
        supported = {"eligible.leader.replicas.version": (0, 1), "metadata.version": (7, 27)}
        finalized = {"metadata.version": 27}
        if isinstance(answer, int):
            finalized["eligible.leader.replicas.version"] = answer
        return Features(supported, -1 if answer == "unknown" else 5, finalized)

    def close(self) -> None:
        pass


def _observer(brokers: list[FakeBroker]) -> PartitionObserver:
    observer = PartitionObserver([f"{b.host}:{b.port}" for b in brokers],
                                 addresses={1: "a:1", 2: "b:2"})
    observer._connections = list(brokers)
    return observer


def test_a_view_whose_leader_epoch_went_back_is_skipped() -> None:
    fresh = FakeBroker("a:1", leader=1, epoch=3, hwm=40)
    stale = FakeBroker("b:2", leader=2, epoch=0, hwm=35)
    observer = _observer([fresh, stale])
    state, = observer.describe(["t"])
    assert (state.leader, state.leader_epoch, state.high_watermark) == (1, 3, 40)
    assert stale.asked == [], "only the described leader is asked for its high watermark"
    observer._connections = [stale, fresh]
    state, = observer.describe(["t"])
    assert (state.leader, state.leader_epoch) == (1, 3), "the stale epoch-0 view is skipped"
    observer._connections = [stale]
    with pytest.raises(ObservationError, match="stale view"):
        observer.describe(["t"])


class EmptyBroker(FakeBroker):
    """A broker of a cluster with no topics yet."""

    def describe_topic_partitions(self, topics):
        return []


def test_a_cluster_with_no_topics_describes_as_empty() -> None:
    observer = _observer([EmptyBroker("a:1", leader=1, epoch=0, hwm=0)])
    assert observer.describe([]) == [], "asked for every topic, none is an answer"
    with pytest.raises(ObservationError, match="topic error"):
        observer.describe(["t"])


@pytest.mark.parametrize(("before", "after", "fenced"), [
    ({1: False, 2: True}, {1: False, 2: True}, [2]),
    ({1: False, 2: False}, {1: False, 2: False}, []),
    # a broker unfenced or fenced meanwhile: the list says nothing (unfenced when
    # described? fenced-leader must not guess; unfenced before? elr-member-unclean
    # must not guess)
    ({1: True, 2: True}, {1: False, 2: True}, None),
    ({1: False, 2: False}, {1: True, 2: False}, None),
    (None, {1: True, 2: False}, None),  # no answer: the line says nothing
    ({1: True, 2: False}, None, None),
])
def test_fenced_is_the_list_read_first_when_the_one_read_after_agrees(before, after, fenced):
    broker = FakeBroker("a:1", leader=1, epoch=3, hwm=40)
    broker.fenced_answers = [before, after]
    state, = _observer([broker]).describe(["t"])
    assert state.fenced == (None if fenced is None else tuple(fenced))
    line = state.as_observation()
    assert ("fenced" in line) == (fenced is not None)
    if fenced is not None:
        assert line["fenced"] == fenced


def test_replicas_min_isr_and_elr_feature_are_recorded_with_the_partition():
    broker = FakeBroker("a:1", leader=1, epoch=3, hwm=40)
    state, = _observer([broker]).describe(["t"])
    assert (state.replicas, state.min_isr, state.elr_feature) == ((1, 2), 2, 1)
    line = state.as_observation()
    assert (line["replicas"], line["min_isr"], line["elr_feature"]) == ([1, 2], 2, 1)
    assert broker.configs_asked == [["t"], ["t"]], "one request before and one after"


@pytest.mark.parametrize(("before", "after", "min_isr"), [
    ({"t": (0, "3")}, {"t": (0, "3")}, 3),
    ({"t": (0, "3")}, {"t": (0, "2")}, None),  # changed meanwhile: neither value
    (None, {"t": (0, "2")}, None),  # no answer before
    ({"t": (0, "2")}, None, None),
    ({"t": (3, None)}, {"t": (3, None)}, None),  # UNKNOWN_TOPIC_OR_PARTITION
    ({"t": (0, "two")}, {"t": (0, "two")}, None),  # not an int
    ({"u": (0, "2")}, {"u": (0, "2")}, None),  # another topic's answer
])
def test_min_isr_is_what_held_before_and_after_the_description(before, after, min_isr):
    broker = FakeBroker("a:1", leader=1, epoch=3, hwm=40)
    broker.config_answers = [before, after]
    state, = _observer([broker]).describe(["t"])
    assert state.min_isr == min_isr
    assert ("min_isr" in state.as_observation()) == (min_isr is not None)


@pytest.mark.parametrize(("before", "after", "level"), [
    (1, 1, 1),
    ("absent", "absent", 0),  # supported, finalized at 0: left out of the finalized set
    (1, "absent", None),  # switched off meanwhile
    ("unknown", "unknown", None),  # finalized features epoch -1: no view
    (None, 1, None),
])
def test_elr_feature_is_what_held_before_and_after_the_description(before, after, level):
    broker = FakeBroker("a:1", leader=1, epoch=3, hwm=40)
    broker.feature_answers = [before, after]
    state, = _observer([broker]).describe(["t"])
    assert state.elr_feature == level
    assert ("elr_feature" in state.as_observation()) == (level is not None)


def test_asked_for_every_topic_the_settings_are_read_for_the_topics_found_before():
    broker = FakeBroker("a:1", leader=1, epoch=3, hwm=40)
    observer = _observer([broker])
    state, = observer.describe([])
    assert state.min_isr is None, "nothing known before the first description"
    assert broker.configs_asked == [["t"]], "no request for no topic, then the ones found"
    state, = observer.describe([])
    assert state.min_isr == 2 and broker.configs_asked[1:] == [["t"], ["t"]]


class ReadyView:
    """One broker for topic_ready_everywhere: its view of topic "t" (partition ->
    leader, epoch, ISR; None: the topic is unknown to it) and the partitions it
    leads at which epoch."""

    def __init__(self, view: dict[int, tuple[int, int, tuple[int, ...]]] | None,
                 leads: dict[int, int], gone: bool = False) -> None:
        self.view, self.leads, self.gone = view, leads, gone
        self.closed = False

    def describe_topic_partitions(self, topics):
        if self.gone:
            raise WireError("refused")
        if self.view is None:
            return [DescribedTopic("t", 3, ())]  # UNKNOWN_TOPIC_OR_PARTITION
        return [DescribedTopic("t", 0, tuple(
            DescribedPartition("t", p, 0, leader, epoch, (1, 2, 3), isr, (), (), ())
            for p, (leader, epoch, isr) in self.view.items()))]

    def latest_offsets(self, epochs):
        return {key: (0, 0) if self.leads.get(key[1]) == epoch else (6, -1)
                for key, epoch in epochs.items()}

    def close(self):
        self.closed = True


FULL = {0: (1, 0, (1, 2, 3)), 1: (2, 0, (2, 3, 1))}


@pytest.mark.parametrize(("brokers", "ready"), [
    # every broker describes both partitions fully, and each leader serves its own
    ([ReadyView(FULL, {0: 0}), ReadyView(FULL, {1: 0}), ReadyView(FULL, {})], True),
    # one broker has not replayed the topic yet: its Metadata may still lack a broker
    ([ReadyView(FULL, {0: 0}), ReadyView(FULL, {1: 0}), ReadyView(None, {})], False),
    # one broker's view has an ISR short of the replication factor
    ([ReadyView(FULL, {0: 0}), ReadyView(FULL, {1: 0}),
      ReadyView({**FULL, 1: (2, 0, (2, 3))}, {})], False),
    # partition 1's leader does not host it yet (NOT_LEADER_OR_FOLLOWER from all)
    ([ReadyView(FULL, {0: 0}), ReadyView(FULL, {}), ReadyView(FULL, {})], False),
    # a leader at an older epoch than a broker describes does not count
    ([ReadyView(FULL, {0: 0}), ReadyView(FULL, {1: 0}),
      ReadyView({**FULL, 1: (2, 1, (2, 3, 1))}, {})], False),
    # a broker that does not answer is no broker that agrees
    ([ReadyView(FULL, {0: 0}), ReadyView(FULL, {1: 0}), ReadyView(FULL, {}, gone=True)],
     False),
])
def test_a_topic_is_ready_when_every_broker_describes_it_full_and_each_leader_serves_it(
        monkeypatch, brokers, ready):
    by_address = {f"b{i}:9092": broker for i, broker in enumerate(brokers)}
    monkeypatch.setattr(observe, "WireConnection", lambda address, timeout: by_address[address])
    assert observe.topic_ready_everywhere(list(by_address), "t", 2, 3, 1.0) is ready
    assert all(broker.closed for broker in brokers)
