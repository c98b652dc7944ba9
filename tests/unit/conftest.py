"""Fixtures a unit test takes by name, found here by pytest: no test file imports them."""

from __future__ import annotations

import pytest
from checker_fixtures import TEST_CONFIG


@pytest.fixture(scope="session")
def spark():
    """The one SparkSession of the test session, on the tests' checker config; stopped
    at the end."""
    from elr_harness.checker.spark import get_spark

    session = get_spark(TEST_CONFIG, TEST_CONFIG.quick_jit_below_bytes)  # the full JIT
    yield session
    session.stop()
