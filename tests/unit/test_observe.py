"""The observer's guards against stale views: leader epochs never go down, only
the described leader's high watermark counts, and a broker is reported fenced
only if it was fenced both before and after the partitions were described."""

from __future__ import annotations

import pytest

from cluster.kafka_wire import DescribedPartition, DescribedTopic, WireError
from cluster.observe import ObservationError, PartitionObserver


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
    ({1: True, 2: True}, {1: False, 2: True}, [2]),  # 1 unfenced meanwhile: not named
    ({1: False, 2: False}, {1: True, 2: False}, []),  # 1 fenced meanwhile: not named
    (None, {1: True, 2: False}, None),  # no answer: the line says nothing
    ({1: True, 2: False}, None, None),
])
def test_fenced_is_what_held_before_and_after_the_description(before, after, fenced):
    broker = FakeBroker("a:1", leader=1, epoch=3, hwm=40)
    broker.fenced_answers = [before, after]
    state, = _observer([broker]).describe(["t"])
    assert state.fenced == (None if fenced is None else tuple(fenced))
    line = state.as_observation()
    assert ("fenced" in line) == (fenced is not None)
    if fenced is not None:
        assert line["fenced"] == fenced
