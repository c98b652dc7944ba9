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
    def __init__(self, failures: int) -> None:
        self.failures, self.calls = failures, 0

    def exec_run(self, argv, demux=False):
        assert argv[:2] == ["cat", "--"] and demux is True
        self.calls += 1
        if self.calls <= self.failures:
            raise ValueError("103 is not a valid stream")
        return SimpleNamespace(exit_code=0, output=(b"the log\n", None))


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
