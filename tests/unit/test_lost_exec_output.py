"""A command's output the Docker engine lost (moby/moby#27289: under load a short
exec now and then returns its exit code with nothing printed) is asked again,
never read as an answer: pgrep exiting 0 with no pid is not "Kafka is gone", an
empty read of the page-cache report is not a report.

Seen on a real run: a power loss failed on "the page-cache report ... is not
JSON" (an empty read), and the final heal restarted a broker whose Kafka was
running (an empty pgrep), leaving the power-lost one down.
"""

from __future__ import annotations

import pytest

from elr_harness.cluster.node import ExecResult
from elr_harness.cluster.node_commands import KafkaProcessCommands
from elr_harness.core.config import NodeTimeouts, PageCacheConfig
from elr_harness.core.errors import HarnessError
from elr_harness.nemesis.pagecache.control import _Control


class Scripted(KafkaProcessCommands):
    """A node whose commands answer from a script, in order."""

    def __init__(self, answers: list[ExecResult], retries: int = 3) -> None:
        self.spec = type("Spec", (), {"name": "broker-1"})()
        self.timeouts = NodeTimeouts(lost_output_retries=retries)
        self.answers = answers
        self.asked = 0

    def exec(self, cmd, *, timeout_s=None, detach=False) -> ExecResult:  # noqa: ANN001
        self.asked += 1
        return self.answers.pop(0)


LOST = ExecResult(0, "")


def test_pgrep_that_found_kafka_but_printed_nothing_is_asked_again() -> None:
    node = Scripted([LOST, LOST, ExecResult(0, "4242\n")])
    assert node.kafka_pid() == 4242 and node.asked == 3


def test_no_process_is_pgreps_exit_code_1() -> None:
    node = Scripted([ExecResult(1, "")])
    assert node.kafka_pid() is None and node.asked == 1


def test_an_answer_lost_every_time_is_an_error_not_a_dead_kafka() -> None:
    node = Scripted([LOST] * 3, retries=2)
    with pytest.raises(HarnessError, match="never printed its pid"):
        node.kafka_pid()
    assert node.asked == 3


def test_kafka_gone_needs_pgreps_no() -> None:
    node = Scripted([ExecResult(0, "7\n"), LOST, ExecResult(1, "")])
    assert node.wait_kafka_gone(timeout_s=5)
    assert node.asked == 3


def test_an_empty_read_of_the_page_cache_report_is_read_again() -> None:
    report = '{"bytes_dropped": {"t-0/0.log": 10}, "files": 1, "total_bytes": 10}'
    node = Scripted([LOST, LOST, ExecResult(0, report)])
    control = _Control(node, PageCacheConfig(poll_interval_s=0.0, report_timeout_s=5))
    assert control.wait_for_report("/data/pagecache/dropped.json", "/data/pagecache")[
        "total_bytes"] == 10
    assert node.asked == 3


def test_the_page_cache_daemons_pid_read_empty_is_read_again() -> None:
    """A lost pid read once made a remount say "mounted but wrote no pid"."""
    node = Scripted([LOST, ExecResult(0, "113\n")])
    assert _Control(node, PageCacheConfig()).daemon_pid("/data/pagecache") == 113


def test_a_missing_pid_file_is_no_daemon_at_once() -> None:
    node = Scripted([ExecResult(1, "cat: /data/pagecache/pid: No such file or directory")])
    assert _Control(node, PageCacheConfig()).daemon_pid("/data/pagecache") is None
    assert node.asked == 1


def test_a_read_lost_every_time_gives_up_after_its_retries() -> None:
    node = Scripted([LOST] * 3)
    assert _Control(node, PageCacheConfig(lost_output_retries=2)).daemon_pid("/x") is None
    assert node.asked == 3
