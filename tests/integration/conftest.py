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


#: Each file's seconds in a CI run (CI's --durations, summed per file; rounded).
#: scripts/test.sh runs the integration files in two workers, a file at a time, in
#: collection order (--no-loadscope-reorder): the longest first, so that no worker
#: is left alone with a long file at the end (a file not here counts as one of
#: FILE_SECONDS_UNKNOWN). Only the order depends on these figures.
FILE_SECONDS = {
    "test_run.py": 450, "test_scenario_alone.py": 280, "test_readme.py": 250,
    "test_ssh.py": 220, "test_known_bugs.py": 200, "test_soak_real.py": 180,
    "test_scenario_disk_failure.py": 170, "test_schedule_file.py": 160,
    "test_scenario_slow_follower.py": 150, "test_scenario_elr_downgrade.py": 130,
    "test_scenario_min_isr_drop.py": 115, "test_cluster.py": 75,
    "test_fault_min_isr_feature.py": 60, "test_txn_workload.py": 60,
    "test_fault_disk.py": 50, "test_fault_slow_network.py": 50,
    "test_workload_real.py": 45, "test_faults.py": 35, "test_soak_owns_its_cluster.py": 35,
    "test_fault_reassign.py": 20, "test_transactions.py": 15,
}
FILE_SECONDS_UNKNOWN = 100


def pytest_collection_modifyitems(items):
    """The integration tests longest file first (the order within a file kept)."""
    def seconds(item) -> int:
        return FILE_SECONDS.get(item.path.name, FILE_SECONDS_UNKNOWN) \
            if "integration" in item.path.parts else 0
    items.sort(key=lambda item: -seconds(item))
