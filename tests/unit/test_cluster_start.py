"""A node counts as dead while the cluster starts only when it looks dead every time."""

from __future__ import annotations

import json

import pytest

from elr_harness.cluster.cluster import Cluster, ClusterStartError
from elr_harness.cluster.node import Role


class _Node:
    def __init__(self, name: str, pids: list[int | None], node_id: int = 1,
                 role: Role = Role.BROKER) -> None:
        self.spec = type("Spec", (), {"name": name, "node_id": node_id, "role": role})()
        self.pids = pids
        self.looks = 0

    def kafka_pid(self) -> int | None:
        self.looks += 1
        return self.pids.pop(0) if self.pids else None

    def log_tail(self) -> str:
        return "last line of the server log"


def _cluster(*nodes: _Node) -> Cluster:
    cluster = Cluster.__new__(Cluster)  # no engine: only the nodes matter here
    cluster.nodes = {n.spec.name: n for n in nodes}
    return cluster


def test_one_empty_pgrep_is_not_a_dead_node() -> None:
    flaky = _Node("broker-2", [None, 4242])
    _cluster(_Node("broker-1", [7]), flaky)._fail_if_a_node_died(spacing_s=0)
    assert flaky.looks == 2


def test_a_node_that_looks_dead_every_time_fails_the_start_with_its_log() -> None:
    dead = _Node("broker-3", [None, None, None])
    with pytest.raises(ClusterStartError,
                       match="(?s)broker-3 stopped while starting.*last line of the server log"):
        _cluster(dead)._fail_if_a_node_died(spacing_s=0)
    assert dead.looks == 3


class _Starting(Cluster):
    """A cluster whose brokers register after `registered_after` polls (no engine)."""

    def __init__(self, nodes: list[_Node], registered_after: int, **config) -> None:
        from dataclasses import replace

        from elr_harness.core.config import ClusterConfig

        self.nodes = {n.spec.name: n for n in nodes}
        self.config = replace(ClusterConfig(), ready_poll_s=0, dead_look_spacing_s=0, **config)
        self.polls = 0
        self.registered_after = registered_after
        self.log = lambda message: None

    def unfenced_brokers(self, avoid=None, timeout_s=None) -> set[int]:
        self.polls += 1
        return ({n.spec.node_id for n in self.brokers} if self.polls > self.registered_after
                else set())

    def quorum_leader(self) -> int | None:
        return 1001


def test_ready_looks_for_dead_nodes_at_its_interval_and_at_the_end() -> None:
    """The look for a dead node is a command in every node: not at every poll, but
    at the first, then at dead_look_interval_s, and once more when all registered."""
    broker = _Node("broker-1", [7] * 10)
    cluster = _Starting([broker], registered_after=5, dead_look_interval_s=3600)
    cluster.wait_ready(60)
    assert cluster.polls == 6
    assert broker.looks == 2


def test_a_node_dead_by_the_time_every_broker_registered_is_never_ready() -> None:
    """The brokers answer, but a controller's Kafka is gone: the start fails."""
    controller = _Node("controller-1", [7, None, None, None], 1001, Role.CONTROLLER)
    cluster = _Starting([_Node("broker-1", [7] * 10), controller], registered_after=3,
                        dead_look_interval_s=3600)
    with pytest.raises(ClusterStartError, match="controller-1 stopped while starting"):
        cluster.wait_ready(60)


# -- what reaches a node's shell is quoted (#31) ------------------------------------

def _start_line_argv(config, tmp_path) -> list[str]:
    """The argv the start script hands to java, found by running the script's own
    shell words with printf in java's place (in tmp_path, where a smuggled
    command would leave its file)."""
    import re
    import subprocess

    from elr_harness.cluster import kraft
    from elr_harness.cluster.node import NodeSpec, Role

    script = kraft.start_script(NodeSpec("broker-1", Role.BROKER, 1, "10.0.0.1"), config)
    java = re.search(r"setsid nohup java (.*) >> \S+ 2>&1 < /dev/null &$", script, re.M)
    assert java, script
    out = subprocess.run(["sh", "-c", "printf '%s\\n' " + java[1]], cwd=tmp_path,
                         capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def test_the_start_script_quotes_each_jvm_option(tmp_path) -> None:
    """A jvm_opts or heap token holding shell syntax is one argument to java, never
    a command (a --config file or a replayed test.json may carry one)."""
    from dataclasses import replace

    from elr_harness.core.config import ClusterConfig

    hostile = replace(ClusterConfig(), jvm_opts="-Da=$(touch${IFS}pwned1);touch${IFS}pwned2 -Xss1m",
                      broker_heap="-Xmx1g`touch${IFS}pwned3`")
    argv = _start_line_argv(hostile, tmp_path)
    assert argv[:3] == ["-Xmx1g`touch${IFS}pwned3`", "-Da=$(touch${IFS}pwned1);touch${IFS}pwned2",
                        "-Xss1m"]
    assert argv[-3:] == ["/opt/kafka/libs/*", "kafka.Kafka", "/opt/harness/server.properties"]
    assert list(tmp_path.iterdir()) == [], "no command of the value ran"


def test_the_default_start_script_still_passes_the_same_options(tmp_path) -> None:
    from elr_harness.core.config import ClusterConfig

    config = ClusterConfig()
    assert _start_line_argv(config, tmp_path) == [
        *config.broker_heap.split(), *config.jvm_opts.split(),
        "-XX:SharedArchiveFile=/opt/harness/kafka-classes.jsa", "-Xlog:cds=off",
        "-Xlog:cds+dynamic=off", "-Djava.awt.headless=true",
        "-Dlog4j2.configurationFile=/opt/harness/log4j2.properties", "-cp",
        "/opt/kafka/libs/*", "kafka.Kafka", "/opt/harness/server.properties"]


def test_server_properties_refuse_a_value_with_a_newline() -> None:
    from dataclasses import replace

    from elr_harness.cluster import kraft
    from elr_harness.cluster.node import NodeSpec, Role
    from elr_harness.core.config import ClusterConfig
    from elr_harness.core.errors import BadInput

    spec = NodeSpec("broker-1", Role.BROKER, 1, "10.0.0.1")
    config = replace(ClusterConfig(), log_dir="/data/kafka\nprocess.roles=controller")
    with pytest.raises(BadInput, match="server.properties: log.dirs holds a newline"):
        kraft.server_properties(spec, [spec], config)


class _ShellNode:
    """A node whose string commands run in a local sh (in a folder), argv ones recorded."""

    def __init__(self, where) -> None:
        self.where = where
        self.spec = type("Spec", (), {"name": "controller-1"})()
        self.argv: list[list[str]] = []

    def exec(self, cmd, timeout_s=None):
        import subprocess

        from elr_harness.cluster.node import ExecResult

        if isinstance(cmd, str):
            proc = subprocess.run(["sh", "-c", cmd], cwd=self.where, capture_output=True,
                                  text=True)
            return ExecResult(proc.returncode, proc.stdout)
        self.argv.append(list(cmd))
        return ExecResult(0, "")


def test_the_metadata_log_listing_quotes_its_folder(tmp_path) -> None:
    """Only the *.log glob is the shell's: a folder with a space and `;` is one word."""
    from elr_harness.cluster.metadata_log import decode_metadata_log

    folder = "meta dir;touch pwned"
    segment = tmp_path / folder / "__cluster_metadata-0" / "00000000000000000000.log"
    segment.parent.mkdir(parents=True)
    segment.write_text("")
    node = _ShellNode(tmp_path)
    assert decode_metadata_log(node, folder, timeout_s=5) == []
    files = node.argv[0][node.argv[0].index("--files") + 1]
    assert files == f"{folder}/__cluster_metadata-0/00000000000000000000.log"
    assert not (tmp_path / "pwned").exists()


# -- every node's storage is formatted at once (#35) ---------------------------------

class _FormattingNode:
    """A format that waits for every node's format to have begun (a format one
    node at a time breaks the barrier after 2 s) and exits with exit_code."""

    def __init__(self, name: str, role, exit_code: int, began) -> None:
        from elr_harness.cluster.node import NodeSpec

        self.spec = NodeSpec(name, role, 1, "10.0.0.1")
        self.exit_code, self.began, self.started = exit_code, began, False

    def exec(self, cmd, *, timeout_s=None, detach=False):
        from elr_harness.cluster.node import ExecResult

        self.began.wait(timeout=2)
        return ExecResult(self.exit_code, f"{self.spec.name} said no")

    def start_kafka(self) -> None:
        self.started = True


def _formatting_cluster(*codes: int) -> tuple[Cluster, list[_FormattingNode]]:
    import threading

    from elr_harness.cluster.node import Role
    from elr_harness.core.config import ClusterConfig

    began = threading.Barrier(len(codes))
    nodes = [_FormattingNode(f"broker-{i}", Role.BROKER, code, began)
             for i, code in enumerate(codes, 1)]
    cluster = _cluster(*nodes)
    cluster.config, cluster.log, cluster.broker_storage = ClusterConfig(), lambda m: None, None
    return cluster, nodes


def test_the_nodes_are_formatted_at_once_then_started() -> None:
    cluster, nodes = _formatting_cluster(0, 0, 0)
    cluster._format_and_start()  # a format one at a time would break the barrier
    assert all(n.started for n in nodes)


def test_a_failed_format_is_the_first_in_the_nodes_order_and_starts_nothing() -> None:
    cluster, nodes = _formatting_cluster(0, 1, 1)
    with pytest.raises(ClusterStartError, match="broker-2: formatting storage failed"):
        cluster._format_and_start()
    assert not any(n.started for n in nodes)


class _ControllerNode:
    """A controller whose quorum-state file holds `state` (None: it cannot be read)."""

    def __init__(self, name: str, state: str | None) -> None:
        from elr_harness.cluster.node import NodeSpec, Role

        self.spec = NodeSpec(name, Role.CONTROLLER, 1000 + int(name[-1]), "10.0.0.1")
        self.state = state

    def read_file(self, path: str) -> bytes:
        assert path.endswith("/__cluster_metadata-0/quorum-state"), path
        if self.state is None:
            raise FileNotFoundError(path)
        return self.state.encode()


def _quorum_cluster(*states: str | None, tool_says: str | None = None) -> Cluster:
    from elr_harness.core.config import ClusterConfig

    cluster = _cluster(*(_ControllerNode(f"controller-{i}", s)
                         for i, s in enumerate(states, 1)))
    cluster.config = ClusterConfig()
    cluster.quorum_status = lambda: {} if tool_says is None else {"LeaderId": tool_says}
    return cluster


def _state(leader: int, epoch: int, version: int = 0) -> str:
    return json.dumps({"leaderId": leader, "leaderEpoch": epoch, "votedId": -1,
                       "data_version": version})


def test_the_active_controller_is_the_leader_of_the_newest_epoch_a_quorum_state_names():
    # controller-1 was killed as leader of epoch 4; the others elected 1003 in epoch 5
    cluster = _quorum_cluster(_state(1001, 4), _state(1003, 5, version=1), _state(1003, 5),
                              tool_says="1002")
    assert cluster.quorum_leader() == 1003


def test_without_a_readable_quorum_state_the_quorum_tool_answers():
    cluster = _quorum_cluster(None, "not json", _state(-1, 2), tool_says="1002")
    assert cluster.quorum_leader() == 1002
    assert _quorum_cluster(None, None, None).quorum_leader() is None


class _ForgetfulNode(_ShellNode):
    """A node whose engine loses the first `lost` outputs of a short command (exit 0,
    nothing printed), as Docker's does now and then under load."""

    def __init__(self, where, lost: int) -> None:
        super().__init__(where)
        self.lost, self.listings = lost, 0

    def exec(self, cmd, timeout_s=None):
        from elr_harness.cluster.node import ExecResult

        if isinstance(cmd, str) and cmd.startswith("ls "):
            self.listings += 1
            if self.listings <= self.lost:
                return ExecResult(0, "")
        return super().exec(cmd, timeout_s)


def test_a_metadata_log_listing_whose_output_was_lost_is_asked_again(tmp_path) -> None:
    """A controller always has a segment: an empty listing is the engine's loss, asked
    again lost_output_retries times; one that stays empty names how often and why."""
    from elr_harness.cluster.metadata_log import decode_metadata_log
    from elr_harness.core.errors import HarnessError

    segment = tmp_path / "meta" / "__cluster_metadata-0" / "00000000000000000000.log"
    segment.parent.mkdir(parents=True)
    segment.write_text("")
    node = _ForgetfulNode(tmp_path, lost=2)
    assert decode_metadata_log(node, "meta", timeout_s=5, lost_output_retries=3) == []
    assert node.listings == 3
    assert node.argv[0][node.argv[0].index("--files") + 1] == \
        "meta/__cluster_metadata-0/00000000000000000000.log"

    node = _ForgetfulNode(tmp_path, lost=5)
    with pytest.raises(HarnessError, match=r"no metadata log segments .*\(3 listings; "
                                           r"the last exited 0\)"):
        decode_metadata_log(node, "meta", timeout_s=5, lost_output_retries=2)
    assert node.listings == 3 and node.argv == []
