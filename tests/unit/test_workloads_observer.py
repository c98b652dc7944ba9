"""The observer loop: observe lines per partition, failures counted not fatal,
latest() and wait_for() for the nemesis."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from elr_harness.cluster.observe import PartitionState as State
from elr_harness.core.history import OBSERVE_FIELDS
from elr_harness.workloads.observer import ObserverLoop
from elr_harness.workloads.recorder import HistoryRecorder


class FlakySource:
    """Describes two partitions; every third call raises like an unreachable cluster."""

    def __init__(self) -> None:
        self.calls = 0
        self.lock = threading.Lock()

    def describe(self, topics: list[str]) -> list[State]:
        with self.lock:
            self.calls += 1
            call = self.calls
        if call % 3 == 0:
            raise ConnectionError("no broker answered")
        epoch = call
        return [State("t", 0, 1, epoch, (1, 2), (3,) if call > 4 else (), None, 10 * call),
                State("t", 1, -1, epoch, (), None, None, None)]


def test_observe_lines_follow_the_contract() -> None:
    fields = State("t", 2, 3, 7, (3, 1), (2,), (), 55).as_observation()
    assert fields == {"process": -2, "type": "ok", "f": "observe", "topic": "t",
                      "partition": 2, "leader": 3, "leader_epoch": 7, "isr": [3, 1],
                      "elr": [2], "last_known_elr": [], "high_watermark": 55}
    unknown = State("t", 0, -1, 0, (), None, None, None).as_observation()
    assert unknown["elr"] is None and unknown["last_known_elr"] is None
    assert "high_watermark" not in unknown  # optional in HISTORY.md
    sentinel = State("t", 0, 1, 0, (1,), (), (), -1001).as_observation()
    assert "high_watermark" not in sentinel  # librdkafka's "no offset" is not a watermark


def test_loop_records_samples_and_survives_failing_describes(tmp_path: Path) -> None:
    source = FlakySource()
    path = tmp_path / "history.jsonl"
    with HistoryRecorder(path) as recorder:
        loop = ObserverLoop(source, ["t"], recorder, interval_s=0.01)
        loop.start()
        sample = loop.wait_for(lambda states: states[0].elr == (3,), timeout_s=5)
        assert sample is not None and sample[0].elr == (3,)
        deadline = time.monotonic() + 5
        while loop.samples < 8 and time.monotonic() < deadline:
            time.sleep(0.01)
        loop.stop()
        assert not loop.running
        assert loop.failures >= 2 and "no broker answered" in loop.last_error
        assert loop.latest()[1].leader == -1
        samples, failures = loop.samples, loop.failures
    ops = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(ops) == 2 * samples  # failed ticks recorded nothing
    assert samples + failures == source.calls
    assert all(op["f"] == "observe" and op["process"] == -2 and op["type"] == "ok"
               for op in ops)
    hwms = [op["high_watermark"] for op in ops if op["partition"] == 0]
    assert hwms == sorted(hwms)


def test_wait_for_times_out_when_the_state_never_comes(tmp_path: Path) -> None:
    with HistoryRecorder(tmp_path / "history.jsonl") as recorder:
        loop = ObserverLoop(FlakySource(), ["t"], recorder, interval_s=0.01)
        loop.start()
        started = time.monotonic()
        assert loop.wait_for(lambda states: False, timeout_s=0.2) is None
        assert 0.2 <= time.monotonic() - started < 2
        loop.stop()


def test_an_observe_line_carries_fenced_only_when_the_cluster_said():
    said = State("t", 0, 3, 7, (), (), (3,), None, (1, 2, 3), fenced=(3,))
    assert said.as_observation()["fenced"] == [3]
    silent = State("t", 0, 3, 7, (), (), (3,), None, (1, 2, 3))
    assert "fenced" not in silent.as_observation()


def test_an_observe_line_carries_min_isr_replicas_and_elr_feature_only_when_known():
    said = State("t", 0, 3, 7, (3,), (1,), (), None, (1, 2, 3), min_isr=2, elr_feature=1)
    line = said.as_observation()
    assert (line["min_isr"], line["replicas"], line["elr_feature"]) == (2, [1, 2, 3], 1)
    assert State("t", 0, 3, 7, (3,), (), (), None, (), elr_feature=0).as_observation()[
        "elr_feature"] == 0, "level 0 is a value, not an absence"
    # a view without a description of the assignment (the controller's log) says nothing
    silent = State("t", 0, 3, 7, (3,), (1,), (), None).as_observation()
    assert not {"min_isr", "replicas", "elr_feature"} & set(silent)
    assert set(line) - {"process", "type", "f"} <= set(OBSERVE_FIELDS)
