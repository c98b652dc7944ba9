"""slow-network (#33, KAFKA-19996): the exact commands its inject and its end
issue on each node, what the history records, the mix's seeded draws and the
target roles.

The nodes here are fakes that record commands and answer route look-ups; that
those commands shape and drop real traffic, and that ending one removes exactly
its own marks, is tests/unit/test_shaping_netns.py's job (real tc and iptables
in network namespaces), and against Kafka tests/integration/test_fault_slow_network.py's.
"""

from __future__ import annotations

import random
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import pytest
from list_recorder import ListRecorder

from elr_harness.cluster.node import ExecResult, NodeSpec, Role
from elr_harness.cluster.observe import PartitionState
from elr_harness.core.config import NodeTimeouts, SlowNetworkConfig
from elr_harness.core.errors import HarnessError
from elr_harness.core.history import ENDED_BY, Fault
from elr_harness.nemesis.faults import PACKAGES, slow_network
from elr_harness.nemesis.injector import FaultInjector
from elr_harness.nemesis.mix import RandomMix
from elr_harness.nemesis.targets import Role as TargetRole
from elr_harness.nemesis.targets import Topology, choose_target

# -- a cluster of fakes that record every command --------------------------------


class FakeNode:
    def __init__(self, spec: NodeSpec, fail: str | None = None) -> None:
        self.spec = spec
        self.commands: list[str] = []
        #: a command containing this fails
        self.fail = fail

    def exec(self, cmd: str, timeout_s: float = 60.0) -> ExecResult:
        self.commands.append(cmd)
        if self.fail and self.fail in cmd:
            return ExecResult(2, "RTNETLINK answers: File exists")
        if "getent ahostsv4" in cmd:  # a route look-up: every address over eth0
            return ExecResult(0, "".join(f"{a} {a} eth0\n" for a in
                                         re.findall(r"getent ahostsv4 (\S+) ", cmd)))
        return ExecResult(0, "")

    def kafka_pid(self) -> int:
        return 1


@dataclass
class FakeConfig:
    dead_look_spacing_s: float = 0.0
    timeouts: NodeTimeouts = field(default_factory=NodeTimeouts)


@dataclass
class FakeCluster:
    nodes: dict[str, FakeNode]
    config: FakeConfig = field(default_factory=FakeConfig)


def rig(fail: dict[str, str] | None = None) -> tuple[FaultInjector, ListRecorder]:
    specs = [NodeSpec("controller-1", Role.CONTROLLER, 101, "10.0.0.1")]
    specs += [NodeSpec(f"broker-{i}", Role.BROKER, i, f"10.0.0.{10 + i}") for i in (1, 2, 3)]
    nodes = {s.name: FakeNode(s, (fail or {}).get(s.name)) for s in specs}
    recorder = ListRecorder()
    return FaultInjector(FakeCluster(nodes), recorder), recorder  # type: ignore[arg-type]


def commands(injector: FaultInjector) -> dict[str, list[str]]:
    return {name: list(node.commands) for name, node in injector.cluster.nodes.items()}


def routes(*addresses: str) -> str:
    return " && ".join(
        f"ip=$(getent ahostsv4 {a} | awk 'NR == 1 {{print $1}}') && [ -n \"$ip\" ] && "
        "dev=$(ip -o route get \"$ip\" | sed -n 's/.* dev \\([^ ]*\\).*/\\1/p') && "
        f"[ -n \"$dev\" ] && echo {a} \"$ip\" \"$dev\"" for a in addresses)


def shape(*ips: str, rate: int = 64) -> str:
    return " && ".join([
        "tc qdisc add dev eth0 root handle e1a: htb",
        f"tc class add dev eth0 parent e1a: classid e1a:1 htb rate {rate}kbit ceil {rate}kbit "
        "quantum 1514",
        *(f"tc filter add dev eth0 parent e1a: protocol ip prio 1 u32 match ip dst {ip}/32 "
          "flowid e1a:1" for ip in ips)])


def drop(*ips: str, p: str = "0.2000") -> str:
    match = (f"-m statistic --mode random --probability {p} -m comment --comment "
             "elr-harness-slow -j DROP")
    return " && ".join(f"iptables -A INPUT -s {ip}/32 {match} && "
                       f"iptables -A OUTPUT -d {ip}/32 {match}" for ip in ips)


REMOVE = ("tc qdisc show | awk '$1 == \"qdisc\" && $3 == \"e1a:\" && $4 == \"dev\" && "
          "$6 == \"root\" {print $5}' | while read -r dev; do tc qdisc del dev \"$dev\" root "
          "|| exit 1; done && iptables -S | grep -E -- '--comment elr-harness-slow''( |$)' | "
          "sed 's/^-A /-D /' | while read -r rule; do iptables $rule || exit 1; done")


# -- the commands, node by node ------------------------------------------------------


def test_inject_shapes_both_ends_drops_on_the_target_and_records_it() -> None:
    injector, recorder = rig()
    why = {"mix": "slow-network", "role": "follower", "hold_s": 9.5}
    done = injector.slow_network("broker-2", ["broker-3", "broker-1"], 64, 0.2, detail=why)
    assert commands(injector) == {
        "broker-2": [routes("10.0.0.11", "10.0.0.13"), shape("10.0.0.11", "10.0.0.13"),
                     drop("10.0.0.11", "10.0.0.13")],
        "broker-1": [routes("10.0.0.12"), shape("10.0.0.12")],
        "broker-3": [routes("10.0.0.12"), shape("10.0.0.12")],
        "controller-1": []}  # a broker's link to its controller stays as it is
    expected = {**why, "target": "broker-2", "peers": ["broker-1", "broker-3"],
                "rate_kbit": 64, "loss": 0.2}
    assert [(x["type"], x["fault"], x["nodes"], x["detail"]) for x in recorder.lines] == [
        ("invoke", Fault.SLOW_NETWORK, ["broker-2"], expected),
        ("ok", Fault.SLOW_NETWORK, ["broker-2"], {
            **expected, "interface": "eth0",
            "interfaces": {"broker-2": "eth0", "broker-1": "eth0", "broker-3": "eth0"}})]
    assert done == recorder.lines[-1]["detail"]
    assert injector.throttled == {"broker-2": ["broker-1", "broker-3"]}


def test_no_loss_installs_no_iptables_rule() -> None:
    injector, _ = rig()
    injector.slow_network("broker-1", ["broker-2"], 1024, 0.0)
    assert commands(injector)["broker-1"] == [
        routes("10.0.0.12"), shape("10.0.0.12", rate=1024), "true"]


def test_the_end_removes_only_its_own_marks_on_every_node_and_pairs_with_it() -> None:
    injector, recorder = rig()
    injector.slow_network("broker-2", ["broker-1", "broker-3"], 64, 0.2)
    for node in injector.cluster.nodes.values():
        node.commands.clear()
    injector.unthrottle("broker-2", detail={"mix": "slow-network"})
    assert commands(injector) == {name: [REMOVE] for name in injector.cluster.nodes}
    assert injector.throttled == {}
    end = recorder.lines[-1]
    assert (end["type"], end["fault"], end["nodes"], end["detail"]) == (
        "ok", Fault.UNTHROTTLE, ["broker-2"], {"mix": "slow-network", "target": "broker-2"})
    assert ENDED_BY[Fault.UNTHROTTLE] == (Fault.SLOW_NETWORK,)
    assert all(Fault.SLOW_NETWORK not in ended
               for end_kind, ended in ENDED_BY.items() if end_kind != Fault.UNTHROTTLE)


def test_a_partitions_heal_leaves_a_slow_network_and_heal_all_ends_both() -> None:
    injector, recorder = rig()
    injector.slow_network("broker-3", ["broker-1", "broker-2"], 256, 0.05)
    injector.heal()
    assert injector.throttled, "heal is a partition's end, not a slow network's"
    assert not any("e1a" in c or "elr-harness-slow" in c
                   for node in injector.cluster.nodes.values() for c in node.commands[-1:])
    injector.heal_all()
    assert [x["fault"] for x in recorder.lines if x["type"] == "ok"] == [
        Fault.SLOW_NETWORK, Fault.HEAL, Fault.HEAL, Fault.UNTHROTTLE]
    assert injector.throttled == {}
    before = len(recorder.lines)
    injector.heal_all()  # nothing slow in force: no unthrottle line
    assert [x["fault"] for x in recorder.lines[before:]] == [Fault.HEAL, Fault.HEAL]


def test_a_second_slow_network_is_refused_while_one_is_in_force() -> None:
    injector, recorder = rig()
    injector.slow_network("broker-1", ["broker-2", "broker-3"], 64, 0.2)
    with pytest.raises(HarnessError, match="in force on broker-1"):
        injector.slow_network("broker-2", ["broker-1", "broker-3"], 64, 0.2)
    assert len(recorder.lines) == 2


def test_a_half_applied_one_is_recorded_info_and_still_ended_by_heal_all() -> None:
    injector, recorder = rig(fail={"broker-3": "tc qdisc add"})
    with pytest.raises(HarnessError, match="slow network on broker-3 failed: RTNETLINK"):
        injector.slow_network("broker-1", ["broker-2", "broker-3"], 64, 0.2)
    assert [(x["type"], x["fault"]) for x in recorder.lines] == [
        ("invoke", Fault.SLOW_NETWORK), ("info", Fault.SLOW_NETWORK)]
    assert injector.throttled == {"broker-1": ["broker-2", "broker-3"]}
    injector.heal_all()
    assert recorder.lines[-1]["fault"] == Fault.UNTHROTTLE
    assert all(node.commands[-1] == REMOVE for node in injector.cluster.nodes.values())


def test_a_route_look_up_that_came_back_short_is_asked_again_within_bounds() -> None:
    """The Docker engine was seen to lose a short command's first lines (exit 0)."""
    injector, _ = rig()
    injector.cluster.config.timeouts = NodeTimeouts(route_lookup_attempts=3,
                                                    route_lookup_retry_s=0.01)
    node = injector.cluster.nodes["broker-2"]
    answers = iter([ExecResult(0, "10.0.0.13 10.0.0.13 eth0\n"),
                    ExecResult(0, "10.0.0.11 10.0.0.11 eth0\n10.0.0.13 10.0.0.13 eth0\n")])
    real_exec = node.exec

    def lossy(cmd: str, timeout_s: float = 60.0) -> ExecResult:
        if "getent" in cmd and node.commands.count(cmd) < 2:
            node.commands.append(cmd)
            return next(answers)
        return real_exec(cmd, timeout_s)

    node.exec = lossy  # type: ignore[method-assign]
    done = injector.slow_network("broker-2", ["broker-1", "broker-3"], 64, 0.2)
    assert node.commands[:2] == [routes("10.0.0.11", "10.0.0.13")] * 2
    assert done["interface"] == "eth0"

    injector, recorder = rig()
    injector.cluster.config.timeouts = NodeTimeouts(route_lookup_attempts=3,
                                                    route_lookup_retry_s=0.01)
    node = injector.cluster.nodes["broker-1"]
    node.exec = lambda cmd, timeout_s=60.0: (  # type: ignore[method-assign]
        node.commands.append(cmd) or ExecResult(0, ""))
    with pytest.raises(HarnessError, match=r"broker-1 has no route .* \(exit 0\)"):
        injector.slow_network("broker-1", ["broker-2"], 64, 0.2)
    assert node.commands == [routes("10.0.0.12")] * 3
    assert recorder.lines[-1]["type"] == "info"


# -- the package: roles, peers, seeded draws -------------------------------------------

TOPOLOGY = Topology(brokers={"broker-1": 1, "broker-2": 2, "broker-3": 3},
                    controllers={"controller-1": 101, "controller-2": 102})


def state(leader: int, isr: tuple[int, ...], partition: int = 0) -> PartitionState:
    return PartitionState("t", partition, leader, 3, isr, (), (), None, (1, 2, 3))


class Observer:
    def __init__(self, states: list[PartitionState]) -> None:
        self.states = states

    def latest(self) -> list[PartitionState]:
        return self.states


class Recording:
    """An injector that only writes down what the package asked of it."""

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.fail = fail

    def slow_network(self, name, peers, rate_kbit, loss, step=None, detail=None):  # noqa: ANN001
        self.calls.append(("slow", name, list(peers), rate_kbit, loss, detail))
        if self.fail:
            raise HarnessError("tc failed")

    def unthrottle(self, name, step=None, detail=None):  # noqa: ANN001
        self.calls.append(("end", name, detail, time.monotonic()))


def mix(injector: Recording, seed: int, states: list[PartitionState] | None = None,
        config: SlowNetworkConfig | None = None) -> RandomMix:
    return RandomMix(injector, Observer(states or [state(1, (1, 2, 3))]),  # type: ignore[arg-type]
                     ["slow-network"], seed, interval_s=0.0, replication_factor=3,
                     log=lambda _m: None, topology=TOPOLOGY, active_controller=lambda: 102,
                     slow_network=config or SlowNetworkConfig(min_hold_s=0.0, max_hold_s=0.0))


def draw(seed: int, **kwargs: Any) -> tuple[Any, ...]:
    injector = Recording()
    mix(injector, seed, **kwargs).inject("slow-network")
    return injector.calls[0]


def test_the_package_is_in_all_acts_on_the_network_and_is_ended_by_unthrottle() -> None:
    package = PACKAGES["slow-network"]
    assert package is slow_network.PACKAGE and package.in_all
    assert package.recorded is Fault.SLOW_NETWORK and package.resource == "network"
    assert package.roles == (TargetRole.FOLLOWER, TargetRole.LEADER,
                             TargetRole.ACTIVE_CONTROLLER)
    assert not package.counts_against_budget and not package.layers


def test_the_targets_role_and_its_peers() -> None:
    seen = {}
    for seed in range(60):
        _, target, peers, _, _, detail = draw(seed)
        seen.setdefault(detail["role"], set()).add((target, tuple(peers)))
    assert seen == {
        # followers of the one partition (leader 1), each throttled towards the
        # other brokers only
        "follower": {("broker-2", ("broker-1", "broker-3")),
                     ("broker-3", ("broker-1", "broker-2"))},
        "leader": {("broker-1", ("broker-2", "broker-3"))},
        # the quorum's leader, towards every other node
        "active-controller": {("controller-2", ("broker-1", "broker-2", "broker-3",
                                                "controller-1"))}}


def test_the_same_seed_draws_the_same_fault_and_the_draws_cover_the_config() -> None:
    config = SlowNetworkConfig(rates_kbit=(32, 512), loss_probabilities=(0.0, 0.3),
                               min_hold_s=0.0, max_hold_s=0.05)
    draws = [draw(seed, config=config) for seed in range(40)]
    assert draws[:10] == [draw(seed, config=config) for seed in range(10)]
    assert {d[3] for d in draws} == {32, 512} and {d[4] for d in draws} == {0.0, 0.3}
    holds = {d[5]["hold_s"] for d in draws}
    assert holds <= {0.0, 0.1} and all(d[5]["mix"] == "slow-network" for d in draws)
    assert draw(5) == draw(5) and len({(d[1], d[3], d[4]) for d in draws}) > 1
    # one seed, one sequence: role, target, rate, loss, hold
    rng = random.Random(7)
    role = rng.choice([TargetRole.FOLLOWER, TargetRole.LEADER, TargetRole.ACTIVE_CONTROLLER])
    target = choose_target(role, [state(1, (1, 2, 3))], TOPOLOGY, rng, 102)
    rate, loss = rng.choice(config.rates_kbit), rng.choice(config.loss_probabilities)
    hold = round(rng.uniform(0.0, 0.05), 1)
    assert draw(7, config=config)[1:5] == (target, slow_network.peers_of(target, TOPOLOGY),
                                           rate, loss)
    assert draw(7, config=config)[5]["hold_s"] == hold


def test_the_end_waits_for_the_drawn_hold_then_unthrottles_the_target() -> None:
    injector = Recording()
    config = SlowNetworkConfig(min_hold_s=0.4, max_hold_s=0.4)
    started = time.monotonic()
    undo = mix(injector, 1, config=config).inject("slow-network")
    undo()
    (_, target, *_), (kind, ended, detail, at) = injector.calls
    assert kind == "end" and ended == target and at - started >= 0.4
    assert "hold_s" not in detail and detail["mix"] == "slow-network"


def test_a_stop_ends_it_before_the_hold() -> None:
    injector = Recording()
    stop = threading.Event()
    config = SlowNetworkConfig(min_hold_s=30.0, max_hold_s=30.0)
    m = mix(injector, 1, config=config)
    m.stop_event = stop
    undo = m.inject("slow-network")
    stop.set()
    started = time.monotonic()
    undo()
    assert time.monotonic() - started < 5 and injector.calls[-1][0] == "end"


def test_a_failed_inject_is_ended_at_once_and_the_error_goes_on() -> None:
    injector = Recording(fail=True)
    with pytest.raises(HarnessError, match="tc failed"):
        mix(injector, 2).inject("slow-network")
    assert [c[0] for c in injector.calls] == ["slow", "end"]
    assert injector.calls[1][1] == injector.calls[0][1]


# -- the follower role -----------------------------------------------------------------


def followers(states: list[PartitionState]) -> set[str]:
    return {choose_target(TargetRole.FOLLOWER, states, TOPOLOGY, random.Random(s))
            for s in range(60)}


def test_a_follower_is_an_isr_member_that_is_not_the_leader() -> None:
    assert followers([state(2, (1, 2, 3))]) == {"broker-1", "broker-3"}
    # a partition without a follower (or a leader) is not drawn from
    assert followers([state(1, (1,)), state(-1, (), 1), state(3, (3, 2), 2)]) == {"broker-2"}


def test_no_follower_anywhere_is_any_broker() -> None:
    assert followers([state(1, (1,))]) == followers([]) == set(TOPOLOGY.brokers)


# -- the plan and the config ---------------------------------------------------------


def test_a_partition_mix_may_not_overlap_it_but_a_process_mix_may() -> None:
    from elr_harness.core.errors import BadInput
    from elr_harness.nemesis.registry import parse_nemesis

    with pytest.raises(BadInput, match="both act on the network"):
        parse_nemesis("partition+slow-network")
    assert parse_nemesis("slow-network+kill,pause").groups == (("slow-network",),
                                                               ("kill", "pause"))
    assert "slow-network" in parse_nemesis("all").faults


@pytest.mark.parametrize(("settings", "reason"), [
    ({"rates_kbit": [0]}, "0 is not between 1"),
    ({"rates_kbit": []}, "needs at least 1"),
    ({"loss_probabilities": [1.5]}, "1.5 is not at least 0 and at most 1"),
    ({"min_hold_s": -1.0}, "min_hold_s"),
])
def test_a_bad_slow_network_setting_is_refused_naming_it(settings, reason) -> None:  # noqa: ANN001
    import dataclasses

    from elr_harness.core.config import RunConfig
    from elr_harness.core.errors import BadInput
    from elr_harness.core.validate import validate_config

    run = RunConfig(slow_network=dataclasses.replace(SlowNetworkConfig(), **{
        k: tuple(v) if isinstance(v, list) else v for k, v in settings.items()}))
    with pytest.raises(BadInput, match=r"\[run\.slow_network\]") as refused:
        validate_config({"run": run})
    assert reason in str(refused.value)
