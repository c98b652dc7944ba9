"""The SSH backend (#11) end to end: six containers that run nothing but sshd
(tests/sshd_hosts.py), reached by the harness over SSH alone, running KIP-966's
scenario with ELR on and off. They live on their own network, "elrssh-hosts"
on 10.213.111.0/24, and are removed whatever happens."""

from __future__ import annotations

import ipaddress
import json
import subprocess
import sys
from pathlib import Path

import pytest
from sshd_hosts import NODES, Hosts, sshd_hosts

from elr_harness.core.config import LABEL

pytestmark = pytest.mark.integration

NAME = "elrssh-hosts"
SUBNET = "10.213.111.0/24"
#: An address on the hosts' network where no host is.
NOBODY = str(ipaddress.ip_network(SUBNET).network_address + 40)


@pytest.fixture(scope="module")
def hosts(docker_client, tmp_path_factory) -> Hosts:
    with sshd_hosts(docker_client, tmp_path_factory.mktemp("ssh"), NAME, SUBNET) as made:
        yield made


def _harness(*args: str, cwd: Path, timeout_s: float = 1200) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "elr_harness.cli", *args], capture_output=True,
                          text=True, timeout=timeout_s, cwd=cwd)


def test_a_host_key_never_seen_is_refused_by_default(hosts, tmp_path):
    nodes = hosts.nodes_file("strict.yaml", accept_new=False,
                             known_hosts=tmp_path / "empty_known_hosts")
    proc = _harness("cluster", "status", "--nodes-file", str(nodes), cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith("harness: host controller-1 (root@"), proc.stderr
    assert "its host key is not in" in proc.stderr and "accept_new_host_keys" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_an_unreachable_host_is_one_line_before_any_fault(hosts, tmp_path):
    nodes = hosts.nodes_file("one-gone.yaml", accept_new=True, replace={"broker-3": NOBODY})
    proc = _harness("run", "--nemesis", "unclean-last-replica", "--nodes-file", str(nodes),
                    "--store", str(tmp_path / "store"), cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"harness: host broker-3 (root@{NOBODY}:22) is unreachable" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert not (tmp_path / "store").exists(), "no run was started, so no fault was injected"
    for node in ("controller-1", "broker-1"):
        assert hosts.ssh(node, "test -e /opt/harness || test -e /opt/kafka")[0] == 1, \
            f"{node} was changed before every host answered"


def test_cluster_up_status_logs_down_leave_the_hosts_as_found(hosts, tmp_path):
    accepting = hosts.nodes_file("hosts.yaml", accept_new=True)
    # what a crashed run left (a tagged rule) and the host's own firewall (untagged)
    hosts.ssh("broker-1", "iptables -A INPUT -s 10.9.9.9 -m comment --comment "
                          f"{LABEL} -j DROP && iptables -A INPUT -s 10.9.9.8 -j DROP")
    try:
        up = _harness("cluster", "up", "--nodes-file", str(accepting), "--topic", "t",
                      "--partitions", "2", cwd=tmp_path)
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        rules = hosts.ssh("broker-1", "iptables -S INPUT")[1]
        assert "10.9.9.9" not in rules, "the crashed run's tagged rule is gone"
        assert "-A INPUT -s 10.9.9.8/32 -j DROP" in rules, "the host's own rule stays"
        # the keys accepted by `up` are now checked strictly
        strict = hosts.nodes_file("hosts-strict.yaml", accept_new=False)
        status = _harness("cluster", "status", "--nodes-file", str(strict), cwd=tmp_path)
        assert status.returncode == 0, status.stdout + status.stderr
        for node in NODES:
            assert node in status.stdout
        assert status.stdout.count("up (pid") == 6, status.stdout
        assert "ELR on" in status.stdout
        assert "┃ topic" in status.stdout and "│ t " in status.stdout, status.stdout
        logs = _harness("cluster", "logs", "--nodes-file", str(strict), "broker-2", "--lines",
                        "200", cwd=tmp_path)
        assert logs.returncode == 0 and "Kafka Server started" in logs.stdout, logs.stdout
    finally:
        down = _harness("cluster", "down", "--nodes-file", str(accepting), cwd=tmp_path)
    assert down.returncode == 0, down.stdout + down.stderr
    for node in NODES:
        code, left = hosts.ssh(node, "ls -d /opt/kafka /opt/harness /var/log/kafka /data "
                                     "/opt/elr-harness/pagecache 2>/dev/null; pgrep java; "
                                     "iptables -S | grep -c elr-harness")
        assert left.split() == ["0"], f"{node} keeps {left!r}"
        assert hosts.ssh(node, "ls /opt/elr-harness/dist")[1].strip(), \
            "the uploaded distribution is kept for the next run"
    assert "-A INPUT -s 10.9.9.8/32 -j DROP" in hosts.ssh("broker-1", "iptables -S INPUT")[1]
    hosts.ssh("broker-1", "iptables -D INPUT -s 10.9.9.8 -j DROP")


def _scenario(hosts: Hosts, tmp_path: Path, elr: str) -> tuple[int, dict, dict]:
    nodes = hosts.nodes_file("hosts.yaml", accept_new=True)
    proc = _harness("run", "--nemesis", "unclean-last-replica", "--elr", elr, "--nodes-file",
                    str(nodes), "--store", str(tmp_path / "store"), cwd=tmp_path)
    run_dir = (tmp_path / "store" / "latest").resolve()
    test = json.loads((run_dir / "test.json").read_text())
    assert (run_dir / "results.json").exists(), (
        f"no verdict; error: {test.get('error')}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    results = json.loads((run_dir / "results.json").read_text())
    lost = results["anomalies"].get("lost-write", {}).get("by_acks", {})
    print(f"\n[SSH, ELR {elr}] exit {proc.returncode}, valid={results['valid']}, "
          f"lost-write by acks: {lost}, checked: {results['checked']}")
    assert test["nodes"]["broker-1"] == {"role": "broker", "id": 1,
                                         "address": hosts.addresses["broker-1"]}
    assert test["config"]["cluster"]["nodes_file"] == str(nodes)
    assert (run_dir / "nodes" / "controller-1" / "metadata-log.json").stat().st_size > 100
    return proc.returncode, results, {"all": 0, **lost}


def test_unclean_last_replica_with_elr_on_over_ssh_is_valid(hosts, tmp_path):
    code, results, lost = _scenario(hosts, tmp_path, "on")
    assert code == 0, results["reason"]
    assert results["valid"] is True and lost["all"] == 0


def test_unclean_last_replica_with_elr_off_over_ssh_loses_acks_all_writes(hosts, tmp_path):
    code, results, lost = _scenario(hosts, tmp_path, "off")
    assert code == 1, results["reason"]
    assert results["valid"] is False and lost["all"] > 0
    assert "lost-write" in results["bad_anomaly_types"]
