"""ELR_HARNESS_OWNER stamps what the harness creates, so that scripts/test.sh
removes its own clusters afterwards and never a user's (nothing but its own)."""

from __future__ import annotations

from elr_harness.cluster.docker_backend import labels
from elr_harness.core.config import OWNER_ENV, SOAK_TOKEN_ENV


def test_the_owner_label_is_on_a_cluster_only_when_an_owner_is_set(monkeypatch):
    monkeypatch.delenv(OWNER_ENV, raising=False)
    monkeypatch.delenv(SOAK_TOKEN_ENV, raising=False)
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


def test_a_soaks_runs_stamp_their_cluster_with_its_token(monkeypatch, tmp_path):
    """#52: what a soak's run creates carries elr-harness.soak=<the soak's token>, the
    token soak.json records; the soak hands it to every run it starts."""
    import json

    from elr_harness.core.config import SoakConfig
    from elr_harness.soak.plan import DEFAULT_PLAN
    from elr_harness.soak.runner import Soak

    monkeypatch.delenv(OWNER_ENV, raising=False)
    monkeypatch.setenv(SOAK_TOKEN_ENV, "ab" * 16)
    assert labels("elr") == {"elr-harness": "1", "elr-harness.cluster": "elr",
                             "elr-harness.soak": "ab" * 16}
    state = {"config": {**SoakConfig().__dict__, "kafka_versions": ["latest"]},
             "plan": [{"name": e.name, "args": list(e.args)} for e in DEFAULT_PLAN],
             "store": str(tmp_path), "cluster_name": "elr", "runs": [],
             "cluster_token": "cd" * 16}
    soak = Soak(tmp_path, json.loads(json.dumps(state)))
    assert soak._cluster_env() == {SOAK_TOKEN_ENV: "cd" * 16}
    del state["cluster_token"]  # a soak.json from before tokens: its runs carry none
    assert Soak(tmp_path, state)._cluster_env() == {}
