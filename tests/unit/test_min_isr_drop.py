"""min-isr-drop's settings: min ISR 3 on three replicas unless the user says
otherwise, and a topology its steps cannot use refused before anything starts."""

from __future__ import annotations

import pytest
from run_flags import run_configs_of


def _configs(tmp_path, *flags: str):
    return run_configs_of(tmp_path, "min-isr-drop", *flags)


def test_the_topic_starts_with_min_isr_three(tmp_path):
    _cluster, topic, *_ = _configs(tmp_path)
    assert (topic.min_insync_replicas, topic.replication_factor) == (3, 3)


@pytest.mark.parametrize("flags", [("--min-insync-replicas", "2"),
                                   ("--replication-factor", "4", "--brokers", "4")])
def test_a_topology_its_steps_cannot_use_is_refused(tmp_path, flags):
    from elr_harness.core.errors import HarnessError
    from elr_harness.run.spec import RunSpec, validate

    cluster, topic, workload, run, checker = _configs(tmp_path, *flags)
    with pytest.raises(HarnessError, match="needs replication factor 3 and "
                                           "--min-insync-replicas 3"):
        validate(RunSpec(cluster, [topic], workload, run, checker))
