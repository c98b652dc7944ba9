"""DockerNode.read_file reads again when docker-py lost its place in the engine's
output frames (a ValueError naming a stream id that is neither stdout nor
stderr, seen while a run collected a server.log under load), and gives up with
a HarnessError (which the collect phase notes) after read_file_attempts."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from elr_harness.cluster.docker_backend import DockerNode
from elr_harness.core.config import NodeTimeouts
from elr_harness.core.errors import HarnessError


class _Container:
    """An engine whose first `failures` reads lose a frame (a ValueError), and whose
    next `short` reads give fewer bytes than the file's size (an exit code 0 all
    the same)."""

    def __init__(self, failures: int, short: int = 0) -> None:
        self.failures, self.short, self.calls = failures, short, 0

    def exec_run(self, argv, demux=False):
        assert argv[:2] == ["sh", "-c"] and argv[-1].startswith("/") and demux is True
        self.calls += 1
        if self.calls <= self.failures:
            raise ValueError("103 is not a valid stream")
        if self.calls <= self.failures + self.short:
            return SimpleNamespace(exit_code=0, output=(b"8\n", None))
        return SimpleNamespace(exit_code=0, output=(b"8\nthe log\n", None))


def _node(container: _Container, attempts: int = 3) -> DockerNode:
    spec = SimpleNamespace(name="broker-1")
    return DockerNode(spec, container, NodeTimeouts(read_file_attempts=attempts))


def test_a_lost_frame_is_read_again():
    container = _Container(failures=2)
    assert _node(container).read_file("/opt/kafka/logs/server.log") == b"the log\n"
    assert container.calls == 3


def test_it_gives_up_after_its_attempts_with_a_harness_error():
    container = _Container(failures=5)
    with pytest.raises(HarnessError, match="reading /x failed 3 times: 103 is not a valid"):
        _node(container).read_file("/x")
    assert container.calls == 3


def test_a_read_that_gives_fewer_bytes_than_the_file_held_is_read_again():
    """Under load a read came back empty with exit code 0: a replica read as empty
    was judged diverged from the others (a false replica-divergence)."""
    container = _Container(failures=0, short=2)
    assert _node(container).read_file("/data/kafka/t-0/0.log") == b"the log\n"
    assert container.calls == 3


def test_a_read_short_every_time_is_a_harness_error_never_a_short_file():
    container = _Container(failures=0, short=5)
    with pytest.raises(HarnessError, match="reading /x failed 3 times: 0 bytes read of '8'"):
        _node(container).read_file("/x")
    assert container.calls == 3
