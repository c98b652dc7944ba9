"""Bad workload input fails with one clear BadInput (exit 2) before anything starts."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from elr_harness.core.config import TopicConfig, WorkloadConfig
from elr_harness.core.errors import EXIT_UNKNOWN, BadInput
from elr_harness.workloads.recorder import HistoryRecorder
from elr_harness.workloads.validation import validate, validate_targets
from elr_harness.workloads.workload import Workload


def test_defaults_are_valid() -> None:
    """The defaults pass (validate returns None, raises nothing), and the check they
    pass is live: the same defaults with one producer too few are refused."""
    defaults = WorkloadConfig()
    assert (defaults.producers, defaults.acks) == (3, ("all", "1", "0"))
    assert validate(defaults) is None
    with pytest.raises(BadInput, match="acks 0 would have no producer"):
        validate(replace(defaults, producers=2))


@pytest.mark.parametrize("changes, message", [
    # each field by its own rule (core/validate.py's RULES), named by its flag
    ({"producers": 0}, "--producers: 0 is not between 1 and"),
    ({"acks": ("all", "2")}, "--acks: '2' is not one of all, 1, 0"),
    ({"acks": ()}, "--acks: needs at least 1 item"),
    ({"acks": ("1", "1")}, "--acks: acks levels repeat"),
    ({"rate": -5}, "--rate: -5 is not at least 0"),
    ({"consumers": -1}, "--consumers: -1 is not between 0 and"),
    ({"time_limit_s": 0}, "--time-limit: 0 is not above 0"),
    ({"partition_choice": "sticky"}, r"\[workload\] partition_choice: 'sticky' is not one of"),
    ({"consumer_start": "middle"}, r"\[workload\] consumer_start: 'middle' is not one of"),
    ({"recorder_flush_interval_s": 2.0},
     r"\[workload\] recorder_flush_interval_s: 2 is not above 0 and at most 1"),
    ({"processes_per_client": 0}, "--concurrency: 0 is not between 1"),
    ({"client_debug": "msg,nope"}, "--client-debug: 'nope' is no librdkafka debug context"),
    ({"message_timeout_ms": 0}, r"\[workload\] message_timeout_ms: 0 is not between 1"),
    # then the rules across fields
    ({"producers": 2}, "acks 0 would have no producer"),
    ({"idempotent": True}, "idempotent producers need acks 'all'"),
    ({"request_timeout_ms": 9000}, "must not exceed the message timeout"),
    ({"socket_timeout_ms": 500}, "socket timeout"),
])
def test_bad_settings_are_refused_with_a_clear_message(changes: dict, message: str) -> None:
    with pytest.raises(BadInput, match=message) as caught:
        validate(replace(WorkloadConfig(), **changes))
    assert caught.value.exit_code == EXIT_UNKNOWN


def test_bad_targets_are_refused() -> None:
    with pytest.raises(BadInput, match="bootstrap"):
        validate_targets([], [TopicConfig()])
    with pytest.raises(BadInput, match="bootstrap"):
        validate_targets("10.0.0.1:9092", [TopicConfig()])
    with pytest.raises(BadInput, match="at least one topic"):
        validate_targets(["h:1"], [])
    with pytest.raises(BadInput, match="partition"):
        validate_targets(["h:1"], [TopicConfig(partitions=0)])


def test_workload_refuses_bad_input_before_starting_anything(tmp_path: Path) -> None:
    with HistoryRecorder(tmp_path / "history.jsonl") as recorder:
        workload = Workload()
        with pytest.raises(BadInput):
            workload.start(["127.0.0.1:9"], [TopicConfig()], recorder,
                           WorkloadConfig(producers=0))
        assert recorder.lines_recorded == 0
        assert workload.stats().completions == {}
    assert (tmp_path / "history.jsonl").read_text() == ""
