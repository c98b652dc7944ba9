"""Integration tests run against real containers and real Kafka.

They need a Docker engine (scripts/setup.sh starts one) and fail, not skip,
when there is none: a green suite must mean the cluster really ran.
"""

from __future__ import annotations

import pytest

from elr_harness.cluster.docker_backend import connect


@pytest.fixture(scope="session")
def docker_client():
    return connect()

