"""The nodes file of the SSH backend: what it yields, and one line for each mistake."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from elr_harness.cluster.node import NodeSpec, Role
from elr_harness.cluster.nodes_file import read_nodes_file, with_nodes_file
from elr_harness.core.config import ClusterConfig
from elr_harness.core.errors import BadInput


def _write(tmp_path: Path, data) -> Path:
    path = tmp_path / "hosts.yaml"
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


@pytest.fixture
def key(tmp_path) -> Path:
    path = tmp_path / "id_test"
    path.write_text("not really a key; only its existence is checked here\n")
    return path


def _nodes(key: Path, **extra) -> dict:
    return {"defaults": {"key_file": str(key)}, "nodes": [
        {"name": "b1", "role": "broker", "address": "10.0.0.21"},
        {"name": "c1", "role": "controller", "address": "10.0.0.11"},
        {"name": "b2", "role": "broker", "address": "10.0.0.22", "user": "kafka",
         "port": 2222, "agent": True, "kafka_dir": "/srv/kafka-dists"}], **extra}


def test_a_file_yields_specs_numbered_like_the_docker_topology(tmp_path, key):
    nodes = read_nodes_file(_write(tmp_path, _nodes(key)))
    assert nodes.specs == [NodeSpec("c1", Role.CONTROLLER, 1001, "10.0.0.11"),
                           NodeSpec("b1", Role.BROKER, 1, "10.0.0.21"),
                           NodeSpec("b2", Role.BROKER, 2, "10.0.0.22")]
    b1, b2 = nodes.hosts[1], nodes.hosts[2]
    assert (b1.user, b1.port, b1.key_file, b1.agent, b1.needs_sudo) == ("root", 22, key,
                                                                        False, False)
    assert (b2.user, b2.port, b2.agent, b2.kafka_dir, b2.needs_sudo) == (
        "kafka", 2222, True, "/srv/kafka-dists", True)
    assert b1.kafka_dir == "/opt/elr-harness/dist"
    assert nodes.accept_new_host_keys is False
    assert nodes.known_hosts == Path("~/.ssh/known_hosts").expanduser()


def test_the_file_sets_the_topology_of_the_config(tmp_path, key):
    config = with_nodes_file(ClusterConfig(controllers=3, brokers=5),
                             _write(tmp_path, _nodes(key)))
    assert (config.controllers, config.brokers) == (1, 2)
    assert config.nodes_file == tmp_path / "hosts.yaml"


@pytest.mark.parametrize("data, message", [
    ("nodes: [a, b", "not YAML at line 1"),
    ("just words", "expected a mapping with a list of nodes under 'nodes:'"),
    ({"nodes": []}, "expected a mapping with a list of nodes"),
    ({"nodes": ["x"]}, "node 1 must be a mapping"),
    ({"nodes": [{"name": "c1", "role": "controller"}]}, "node 1 has no address"),
    ({"nodes": [{"name": "c1", "role": "leader", "address": "h", "agent": True}]},
     "node 'c1': role 'leader' is not controller or broker"),
    ({"nodes": [{"name": "c1", "role": "controller", "address": "h", "agent": True},
                {"name": "c1", "role": "broker", "address": "g", "agent": True}]},
     "name 'c1' appears twice"),
    ({"nodes": [{"name": "c1", "role": "controller", "address": "h", "agent": True},
                {"name": "b1", "role": "broker", "address": "h", "agent": True}]},
     "address 'h' appears twice"),
    ({"nodes": [{"name": "b1", "role": "broker", "address": "h", "agent": True}]},
     "no controller (a KRaft cluster needs at least one controller and one broker)"),
    ({"nodes": [{"name": "c1", "role": "controller", "address": "h", "agent": True}]},
     "no broker"),
    ({"nodes": [{"name": "c1", "role": "controller", "address": "h"}]},
     "node 'c1': give key_file or agent: true"),
    ({"nodes": [{"name": "c1", "role": "controller", "address": "h", "key_file": "/no/key"}]},
     "node 'c1': key_file /no/key does not exist"),
    ({"nodes": [{"name": "c1", "role": "controller", "address": "h", "agent": True,
                 "port": 70000}]}, "node 'c1': port 70000 is not between 1 and 65535"),
    ({"nodes": [{"name": "c 1", "role": "controller", "address": "h", "agent": True}]},
     "node 'c 1': a name is 1-63 of"),
    ({"nodes": [{"name": "c\nx", "role": "controller", "address": "h", "agent": True}]},
     "node 'c\\nx': a name is 1-63 of"),
    ({"nodes": [{"name": "c1", "role": "controller", "address": "h\nx", "agent": True}]},
     "node 'c1': 'h\\nx' is not a host name or address"),
    ({"nodes": [{"name": "c1", "role": "controller", "address": "h; rm", "agent": True}]},
     "'h; rm' is not a host name or address"),
    ({"nodes": [{"name": "c1", "role": "controller", "address": "h", "agent": "yes"}]},
     "agent must be true or false"),
    ({"nodes": [{"name": "c1", "role": "controller", "address": "h", "agent": True,
                 "kafka_dir": "relative"}]}, "kafka_dir: 'relative' is not an absolute path"),
    ({"nodes": [{"name": "c1", "role": "controller", "address": "h", "agent": True,
                 "kafka_dir": "/opt/x;rm -rf /"}]}, "kafka_dir: '/opt/x;rm -rf /' is not"),
    ({"nodes": [{"name": "c1", "role": "controller", "address": "h", "agent": True,
                 "kafka_dir": "/opt/../etc"}]}, "kafka_dir: '/opt/../etc' is not"),
    ({"nodes": [{"name": "c1", "role": "controller", "address": "h", "agent": True,
                 "user": "root\nx"}]}, "node 'c1': user 'root\\nx' is not a login name"),
    ({"nodes": [{"name": "c1", "role": "controller", "address": "h", "agent": True,
                 "user": "$(id)"}]}, "node 'c1': user '$(id)' is not a login name"),
    ("defaults: &d {agent: true}\nnodes: [{name: c1, role: controller, address: h, <<: *d}]\n",
     "not YAML at line 2 (aliases (*name) are not accepted in a nodes file)"),
    ({"nodes": [{"name": "c1", "role": "controller", "address": "h", "agent": True,
                 "pasword": "x"}]}, "node 'c1': unknown setting 'pasword'"),
    ({"hosts": []}, "expected a mapping with a list of nodes"),
    ({"nodes": [{"name": "c1", "role": "controller", "address": "h", "agent": True}],
      "accept_new_host_keys": "yes"}, "accept_new_host_keys must be true or false"),
])
def test_each_mistake_is_one_line_naming_the_file(tmp_path, data, message):
    path = _write(tmp_path, data)
    with pytest.raises(BadInput) as caught:
        read_nodes_file(path)
    assert caught.value.message.startswith(f"--nodes-file {path}: ")
    assert message in caught.value.message
    assert "\n" not in caught.value.message


def test_a_missing_file_is_one_line(tmp_path):
    with pytest.raises(BadInput, match=r"--nodes-file .*/nope.yaml: no such file$"):
        read_nodes_file(tmp_path / "nope.yaml")
