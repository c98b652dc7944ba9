"""ELR_HARNESS_OWNER stamps what the harness creates, so that scripts/test.sh
removes its own clusters afterwards and never a user's (nothing but its own)."""

from __future__ import annotations

from elr_harness.cluster.docker_backend import labels
from elr_harness.core.config import OWNER_ENV


def test_the_owner_label_is_on_a_cluster_only_when_an_owner_is_set(monkeypatch):
    monkeypatch.delenv(OWNER_ENV, raising=False)
    assert labels("elr") == {"elr-harness": "1", "elr-harness.cluster": "elr"}
    monkeypatch.setenv(OWNER_ENV, "test-suite-42")
    assert labels("elr", **{"elr-harness.node": "b1"}) == {
        "elr-harness": "1", "elr-harness.cluster": "elr",
        "elr-harness.owner": "test-suite-42", "elr-harness.node": "b1"}


def test_the_suite_removes_only_what_carries_its_owner_label():
    from pathlib import Path

    script = (Path(__file__).parents[2] / "scripts" / "test.sh").read_text()
    removals = [line for line in script.splitlines()
                if "docker rm" in line or "docker network rm" in line or "docker ps" in line
                or "docker network ls" in line]
    assert removals, "the suite cleans up after itself"
    for line in removals:
        assert "label=elr-harness.owner=$ELR_HARNESS_OWNER" in line or "xargs" in line, line
    assert 'export ELR_HARNESS_OWNER=' in script
