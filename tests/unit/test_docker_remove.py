"""A run's sweep of leftovers meets a container another process is removing (the
earlier run's own teardown): Docker answers 409 "removal ... already in progress".
Found by running `harness run` again while the last one tore down: a traceback, and
the run lost. The removal now waits (bounded) for it to be gone; any other refusal
is still raised."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import docker.errors
import pytest

from elr_harness.cluster.docker_backend import DockerProvider
from elr_harness.core.config import ClusterConfig, NodeTimeouts
from elr_harness.core.errors import HarnessError


class _Response:
    """What docker.errors.APIError reads of the engine's HTTP answer."""

    def __init__(self, status: int) -> None:
        self.status_code, self.reason, self.url = status, "Conflict", "http+docker://localhost"


def _api_error(status: int, message: str) -> docker.errors.APIError:
    return docker.errors.APIError(f"{status} Client Error", response=_Response(status),
                                  explanation=message)


class _Container:
    def __init__(self, name: str, refusal: docker.errors.APIError | None,
                 gone_after: int | None) -> None:
        self.name, self.labels = name, {}
        self._refusal, self._gone_after, self.reloads = refusal, gone_after, 0

    def remove(self, force: bool) -> None:
        assert force
        if self._refusal is not None:
            raise self._refusal

    def reload(self) -> None:
        self.reloads += 1
        if self._gone_after is not None and self.reloads >= self._gone_after:
            raise docker.errors.NotFound("gone")


def _provider(containers: list[_Container], gone_s: float = 5.0) -> DockerProvider:
    """A provider over an engine that lists these containers and no network."""
    client = SimpleNamespace(containers=SimpleNamespace(list=lambda **_: containers),
                             networks=SimpleNamespace(list=lambda **_: []))
    timeouts = replace(NodeTimeouts(), container_gone_s=gone_s, container_gone_poll_s=0.01)
    return DockerProvider(replace(ClusterConfig(), timeouts=timeouts),
                          client=client, token=None)  # type: ignore[arg-type]


def test_a_container_already_being_removed_is_waited_for_and_counted():
    busy = _Container("elr-broker-1", _api_error(
        409, 'removal of container abc is already in progress'), gone_after=3)
    plain = _Container("elr-broker-2", None, None)
    assert _provider([busy, plain]).remove() == 2
    assert busy.reloads == 3  # it waited until Docker said the container was gone


def test_a_removal_that_never_ends_is_one_line_naming_the_container():
    stuck = _Container("elr-broker-1", _api_error(
        409, 'removal of container abc is already in progress'), gone_after=None)
    with pytest.raises(HarnessError, match=r"^container elr-broker-1 was still being "
                                           r"removed by another process after 0\.05 s"):
        _provider([stuck], gone_s=0.05).remove()
    assert stuck.reloads >= 1


def test_any_other_refusal_is_raised_as_it_was():
    other = _Container("elr-broker-1", _api_error(409, "conflict: something else"),
                       gone_after=1)
    with pytest.raises(docker.errors.APIError):
        _provider([other]).remove()
    assert other.reloads == 0
