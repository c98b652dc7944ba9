"""How the report writes one op of an anomaly example."""

from __future__ import annotations

from elr_harness.report.checked_tables import Interest
from elr_harness.report.evidence import op_detail


def test_an_observe_shows_the_fenced_brokers_it_recorded():
    """fenced-leader's evidence is the leader and the fenced list of one line."""
    op = {"f": "observe", "topic": "t", "partition": 0, "leader": 1, "leader_epoch": 2,
          "isr": [1], "elr": [], "last_known_elr": [], "fenced": [1, 2, 3]}
    shown = str(op_detail(op, Interest(), 8))
    assert "leader=1" in shown and "fenced={1,2,3}" in shown.replace(" ", "")
    del op["fenced"]
    assert "fenced" not in str(op_detail(op, Interest(), 8))
