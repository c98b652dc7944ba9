"""A resumed soak removes only a cluster it created (#52), on real containers.

soak.json names the cluster its runs use; a copied or stale one names `elr`,
every `harness run`'s default, or any other. The soak stamps each container and
network of its runs with its own token (elr-harness.soak, soak.json's
cluster_token), and removes a cluster of that name only when it carries it:

- another suite's running cluster (real Kafka, started here by `harness cluster
  up`) named by a soak.json is left up through the resume's teardown of the run
  it abandons, and through the run it then starts, which refuses to sweep it;
- a cluster that carries the soak's token is removed, as before.

Both clusters are small (a controller and a broker) on this test's own subnet.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import docker
import pytest

from elr_harness.core.config import SOAK_LABEL, SOAK_TOKEN_ENV, SoakConfig

pytestmark = pytest.mark.integration

SUBNET = "10.213.120.0/24"
SMALL = ["--controllers", "1", "--brokers", "1"]
#: A run the resumed soak may start: small, fault-free, short.
PLAN = [{"name": "small", "args": ["--nemesis", "none", "--time-limit", "5", *SMALL,
                                   "--partitions", "1", "--replication-factor", "1",
                                   "--min-insync-replicas", "1"]}]


def _harness(*args: str, env: dict | None = None, cwd: Path | None = None,
             timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "elr_harness.cli", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd,
                          env={**os.environ, **(env or {})})


def _cluster(name: str) -> tuple[list, list]:
    """The containers and networks labelled as the cluster `name`."""
    client = docker.from_env()
    try:
        ours = {"label": [f"elr-harness.cluster={name}"]}
        return client.containers.list(all=True, filters=ours), client.networks.list(filters=ours)
    finally:
        client.close()


@pytest.fixture
def cluster_up():
    """`harness cluster up` of a small cluster (with extra environment), taken down
    by the test's end whatever happened."""
    started = []

    def up(name: str, env: dict | None = None) -> None:
        started.append(name)
        done = _harness("cluster", "up", "--name", name, "--subnet", SUBNET, *SMALL, env=env)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]

    yield up
    for name in started:
        _harness("cluster", "down", "--name", name)


def _stale_soak_json(store: Path, name: str, token: str, room_for_a_run: bool) -> Path:
    """store/soak/<time>/soak.json as a soak that died mid-run wrote it: its run in
    flight (a process that has ended), its cluster `name` on SUBNET, its token;
    with room for one more run, or its duration used up."""
    soak_dir = store / "soak" / "20261125T100000"
    (soak_dir / "runs").mkdir(parents=True)
    gone = subprocess.Popen(["true"])
    gone.wait()
    config = {**SoakConfig().__dict__, "kafka_versions": ["latest"], "duration_s": 900.0,
              "max_errors_in_a_row": 1, "interrupt_grace_s": 1.0, "run_overhead_s": 60.0}
    state = {"soak_version": 1, "command": "harness soak", "store": str(store),
             "started_at": "2026-11-25T10:00:00+00:00", "cluster_name": name,
             "subnet": SUBNET, "config": config, "nodes_file": None, "plan": PLAN,
             "used_s": 0.0 if room_for_a_run else 900.0, "runs": [], "abandoned": [],
             "unchecked": None, "cluster_token": token,
             "current": {"index": 0, "pid": gone.pid, "start_time": 1,
                         "token": secrets.token_hex(16),
                         "marker": str(soak_dir / "runs" / "0000.run-dir"),
                         "started_at": "2026-11-25T10:00:00+00:00"}}
    (soak_dir / "soak.json").write_text(json.dumps(state))
    return soak_dir


def test_a_resumed_soak_leaves_another_suites_cluster_up(tmp_path, cluster_up):
    name = "elr-52-other"
    cluster_up(name)
    containers, networks = _cluster(name)
    assert len(containers) == 2 and len(networks) == 1
    before = sorted((c.id, c.status) for c in containers)
    soak_dir = _stale_soak_json(tmp_path / "store", name, secrets.token_hex(16),
                                room_for_a_run=True)

    resumed = _harness("soak", "--resume", str(soak_dir), cwd=tmp_path)

    said = resumed.stdout + resumed.stderr
    assert "Traceback" not in said
    assert resumed.returncode == 2, said[-3000:]  # its one run: a harness error
    assert f"cluster '{name}' is up and is not this soak's" in said, said[-3000:]
    containers, networks = _cluster(name)
    assert sorted((c.id, c.status) for c in containers) == before, "left up, untouched"
    assert [c.status for c in containers] == ["running", "running"]
    assert len(networks) == 1
    status = _harness("cluster", "status", "--name", name)
    assert status.returncode == 0 and "broker-1" in status.stdout, status.stderr
    soak = json.loads((soak_dir / "soak.json").read_text())
    [abandoned] = soak["abandoned"]
    assert abandoned["index"] == 0
    [run] = soak["runs"]
    assert run["status"] == "error" and soak["stopped_because"] == "1 harness errors in a row"
    log = Path(run["log"]).read_text()
    assert f"cluster '{name}' is up and is not this soak's" in log, log[-2000:]


def test_a_resumed_soak_removes_a_cluster_that_carries_its_token(tmp_path, cluster_up):
    name, token = "elr-52-own", secrets.token_hex(16)
    cluster_up(name, env={SOAK_TOKEN_ENV: token})  # as the soak's own run made it
    containers, networks = _cluster(name)
    assert {c.labels.get(SOAK_LABEL) for c in containers} == {token}
    assert len(containers) == 2 and len(networks) == 1
    soak_dir = _stale_soak_json(tmp_path / "store", name, token, room_for_a_run=False)

    resumed = _harness("soak", "--resume", str(soak_dir), cwd=tmp_path)

    said = resumed.stdout + resumed.stderr
    assert "Traceback" not in said and "not this soak's" not in said, said[-3000:]
    assert "duration used up" in said, said[-3000:]
    assert _cluster(name) == ([], []), "its own cluster is removed"
