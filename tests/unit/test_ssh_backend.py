"""The SSH backend's pieces that need no host: command lines (run here in a real
shell), the tagged firewall rules (on real iptables, in a network namespace of
their own), the distribution's digest and stream, and the cleanup's guard.
The backend against real sshd hosts: tests/integration/test_ssh.py."""

from __future__ import annotations

import io
import subprocess
import tarfile

import pytest
import yaml

from elr_harness.cluster.firewall import drop_peers_command, remove_tagged_command
from elr_harness.cluster.nodes_file import read_nodes_file
from elr_harness.cluster.ssh_backend import KEPT, SshProvider, _tar, distribution_digest
from elr_harness.core.config import ClusterConfig


@pytest.fixture
def provider(tmp_path) -> SshProvider:
    key = tmp_path / "key"
    key.write_text("x")
    path = tmp_path / "hosts.yaml"
    path.write_text(yaml.safe_dump({"defaults": {"key_file": str(key)}, "nodes": [
        {"name": "c1", "role": "controller", "address": "10.0.0.11"},
        {"name": "b1", "role": "broker", "address": "10.0.0.21", "user": "kafka"}]}))
    return SshProvider(ClusterConfig(nodes_file=path), read_nodes_file(path))


def _sh(line: str) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", "-c", line], capture_output=True, text=True, timeout=30)


def test_a_command_line_is_bounded_and_keeps_exit_code_and_words(provider):
    root = provider.nodes["c1"]
    line = root._line(["printf", "%s|", "two words", "it's"], 5)
    assert line.startswith("timeout -s KILL 5 sh -c ")
    assert _sh(line).stdout == "two words|it's|"
    assert _sh(root._line("echo out; exit 3", 5)).returncode == 3
    killed = _sh(root._line("sleep 30", 1))
    assert killed.returncode == 137, "the bound kills the command"


def test_a_user_other_than_root_goes_through_sudo(provider):
    assert provider.nodes["b1"]._line("iptables -S", 5).startswith(
        "sudo -n timeout -s KILL 5 sh -c ")
    assert not provider.nodes["c1"]._line("iptables -S", 5).startswith("sudo")


def test_healing_removes_the_harness_rules_and_only_them(tmp_path):
    script = " && ".join([
        "iptables -A INPUT -s 10.9.9.8 -j DROP",  # the host's own
        drop_peers_command(["10.9.9.1", "10.9.9.2"]),
        "iptables -S > before",
        remove_tagged_command(),
        "iptables -S"])
    proc = subprocess.run(["unshare", "--net", "sh", "-c", script], capture_output=True,
                          text=True, timeout=30, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rules = [line for line in proc.stdout.splitlines() if line.startswith("-A")]
    assert rules == ["-A INPUT -s 10.9.9.8/32 -j DROP"]
    before = (tmp_path / "before").read_text()
    assert before.count("--comment elr-harness") == 4
    assert "-A OUTPUT -d 10.9.9.2/32 -m comment --comment elr-harness -j DROP" in before
    again = subprocess.run(["unshare", "--net", "sh", "-c", remove_tagged_command()],
                           capture_output=True, text=True, timeout=30)
    assert again.returncode == 0, "nothing to remove is no error"


def test_the_digest_follows_contents_not_the_folder(tmp_path):
    for name in ("a", "b", "c"):
        (tmp_path / name / "libs").mkdir(parents=True)
        (tmp_path / name / "libs" / "kafka.jar").write_bytes(b"jar bytes")
    (tmp_path / "c" / "libs" / "kafka.jar").write_bytes(b"other bytes")
    digests = [distribution_digest(tmp_path / name) for name in ("a", "b", "c")]
    assert digests[0] == digests[1] != digests[2]


def test_the_distribution_streams_as_a_tar_of_its_files(tmp_path):
    home = tmp_path / "dist"
    (home / "libs").mkdir(parents=True)
    (home / "libs" / "kafka.jar").write_bytes(b"x" * 100_000)
    (home / ".complete").write_text("")
    sent = io.BytesIO()
    _tar(home, sent.write)
    with tarfile.open(fileobj=io.BytesIO(sent.getvalue())) as tar:
        assert sorted(tar.getnames()) == ["libs", "libs/kafka.jar"]
        member = tar.extractfile("libs/kafka.jar")
        assert member is not None and member.read() == b"x" * 100_000


def test_cleanup_may_remove_only_what_the_harness_makes(provider):
    removable = provider._removable()
    assert {"/opt/kafka", "/opt/harness", "/var/log/kafka", "/data", "/data/kafka",
            "/data/metadata", "/opt/elr-harness/pagecache"} <= removable
    assert not removable & (KEPT | {"/", "/opt/elr-harness/dist"})
