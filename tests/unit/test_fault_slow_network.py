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
import threading
import time
from typing import Any

import pytest
from fakes import FakeObserver, ListRecorder, cluster_of, commands, injector_rig, specs, topology_of

from elr_harness.cluster.node import ExecResult
from elr_harness.cluster.observe import PartitionState
from elr_harness.core.config import NodeTimeouts
from elr_harness.core.errors import HarnessError
from elr_harness.core.fault_meanings import ENDED_BY
from elr_harness.core.history import Fault
from elr_harness.nemesis.faults import PACKAGES, slow_network
from elr_harness.nemesis.faults.slow_network import SlowNetworkSettings, throttle, unthrottle
from elr_harness.nemesis.injector import FaultInjector
from elr_harness.nemesis.mix import RandomMix
from elr_harness.nemesis.targets import Role as TargetRole
from elr_harness.nemesis.targets import choose_target

# -- a cluster of fakes that record every command (tests/fakes.py) ------------------


def rig(fail: dict[str, str] | None = None) -> tuple[FaultInjector, ListRecorder]:
    """controller-1 (10.0.0.1) and broker-1..3 (10.0.0.11..13); fail[name]: a command
    of that node holding it fails."""
    cluster = cluster_of(specs(controllers=1), **{
        name.replace("-", "_"): {"fail": text} for name, text in (fail or {}).items()})
    return injector_rig(cluster)


def throttled(injector: FaultInjector) -> dict[str, list[str]]:
    """The kind's own record: the node whose links are slow -> its peers."""
    return injector.kept("slow-network", dict)


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
    done = throttle(injector, "broker-2", ["broker-3", "broker-1"], 64, 0.2, detail=why)
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
    assert throttled(injector) == {"broker-2": ["broker-1", "broker-3"]}


def test_no_loss_installs_no_iptables_rule() -> None:
    injector, _ = rig()
    throttle(injector, "broker-1", ["broker-2"], 1024, 0.0)
    assert commands(injector)["broker-1"] == [
        routes("10.0.0.12"), shape("10.0.0.12", rate=1024), "true"]


def test_the_end_removes_only_its_own_marks_on_every_node_and_pairs_with_it() -> None:
    injector, recorder = rig()
    throttle(injector, "broker-2", ["broker-1", "broker-3"], 64, 0.2)
    for node in injector.cluster.nodes.values():
        node.commands.clear()
    unthrottle(injector, "broker-2", detail={"mix": "slow-network"})
    assert commands(injector) == {name: [REMOVE] for name in injector.cluster.nodes}
    assert throttled(injector) == {}
    end = recorder.lines[-1]
    assert (end["type"], end["fault"], end["nodes"], end["detail"]) == (
        "ok", Fault.UNTHROTTLE, ["broker-2"], {"mix": "slow-network", "target": "broker-2"})
    assert ENDED_BY[Fault.UNTHROTTLE] == (Fault.SLOW_NETWORK,)
    assert all(Fault.SLOW_NETWORK not in ended
               for end_kind, ended in ENDED_BY.items() if end_kind != Fault.UNTHROTTLE)


def test_a_partitions_heal_leaves_a_slow_network_and_heal_all_ends_both() -> None:
    injector, recorder = rig()
    throttle(injector, "broker-3", ["broker-1", "broker-2"], 256, 0.05)
    injector.heal()
    assert throttled(injector), "heal is a partition's end, not a slow network's"
    assert not any("e1a" in c or "elr-harness-slow" in c
                   for node in injector.cluster.nodes.values() for c in node.commands[-1:])
    injector.heal_all()
    assert [x["fault"] for x in recorder.lines if x["type"] == "ok"] == [
        Fault.SLOW_NETWORK, Fault.HEAL, Fault.HEAL, Fault.UNTHROTTLE]
    assert throttled(injector) == {}
    before = len(recorder.lines)
    injector.heal_all()  # nothing slow in force: no unthrottle line
    assert [x["fault"] for x in recorder.lines[before:]] == [Fault.HEAL, Fault.HEAL]


def test_a_second_slow_network_is_refused_while_one_is_in_force() -> None:
    injector, recorder = rig()
    throttle(injector, "broker-1", ["broker-2", "broker-3"], 64, 0.2)
    with pytest.raises(HarnessError, match="in force on broker-1"):
        throttle(injector, "broker-2", ["broker-1", "broker-3"], 64, 0.2)
    assert len(recorder.lines) == 2


def test_a_half_applied_one_is_recorded_info_and_still_ended_by_heal_all() -> None:
    injector, recorder = rig(fail={"broker-3": "tc qdisc add"})
    with pytest.raises(HarnessError, match="slow network on broker-3 failed: RTNETLINK"):
        throttle(injector, "broker-1", ["broker-2", "broker-3"], 64, 0.2)
    assert [(x["type"], x["fault"]) for x in recorder.lines] == [
        ("invoke", Fault.SLOW_NETWORK), ("info", Fault.SLOW_NETWORK)]
    assert throttled(injector) == {"broker-1": ["broker-2", "broker-3"]}
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
    done = throttle(injector, "broker-2", ["broker-1", "broker-3"], 64, 0.2)
    assert node.commands[:2] == [routes("10.0.0.11", "10.0.0.13")] * 2
    assert done["interface"] == "eth0"

    injector, recorder = rig()
    injector.cluster.config.timeouts = NodeTimeouts(route_lookup_attempts=3,
                                                    route_lookup_retry_s=0.01)
    node = injector.cluster.nodes["broker-1"]
    node.exec = lambda cmd, timeout_s=60.0: (  # type: ignore[method-assign]
        node.commands.append(cmd) or ExecResult(0, ""))
    with pytest.raises(HarnessError, match=r"broker-1 has no route .* \(exit 0\)"):
        throttle(injector, "broker-1", ["broker-2"], 64, 0.2)
    assert node.commands == [routes("10.0.0.12")] * 3
    assert recorder.lines[-1]["type"] == "info"


# -- the package: roles, peers, seeded draws -------------------------------------------

#: controller-1..2 (ids 1001..1002) and broker-1..3 (ids 1..3)
TOPOLOGY = topology_of(cluster_of(specs(controllers=2)))
#: the quorum's leader: controller-2
ACTIVE = 1002
#: a slow network that ends as soon as it is asked to
NO_HOLD = SlowNetworkSettings(min_hold_s=0.0, max_hold_s=0.0)


def state(leader: int, isr: tuple[int, ...], partition: int = 0) -> PartitionState:
    return PartitionState("t", partition, leader, 3, isr, (), (), None, (1, 2, 3))


class Clocked(ListRecorder):
    """The injector's lines, each with the time it was recorded (`at`)."""

    def record(self, **fields: Any) -> dict[str, Any]:
        return super().record(**fields, at=time.monotonic())


def mix_rig(fail: str | None = None) -> tuple[FaultInjector, Clocked]:
    """An injector over TOPOLOGY's nodes; `fail`: every command holding it fails."""
    node_specs = specs(controllers=2)
    cluster = cluster_of(node_specs, **{s.name.replace("-", "_"): {"fail": fail}
                                        for s in node_specs})
    recorder = Clocked()
    return FaultInjector(cluster, recorder), recorder  # type: ignore[arg-type]


def mix(injector: FaultInjector, seed: int, states: list[PartitionState] | None = None,
        settings: SlowNetworkSettings | None = NO_HOLD,
        stop: threading.Event | None = None) -> RandomMix:
    """A mix of slow-network alone; `settings` None: the run sets none (its defaults)."""
    return RandomMix(injector, FakeObserver(states or [state(1, (1, 2, 3))]),
                     ["slow-network"], seed, interval_s=0.0, replication_factor=3, stop=stop,
                     log=lambda _m: None, topology=TOPOLOGY, active_controller=lambda: ACTIVE,
                     faults={} if settings is None else {"slow-network": settings})


def draw(seed: int, **kwargs: Any) -> dict[str, Any]:
    """The fault the mix drew, as its invoke records it: target, peers, rate_kbit,
    loss, and the mix's mix, role and hold_s."""
    injector, recorder = mix_rig()
    mix(injector, seed, **kwargs).inject("slow-network")
    invoke, ok = recorder.lines
    assert (invoke["type"], ok["type"], invoke["fault"]) == ("invoke", "ok", Fault.SLOW_NETWORK)
    assert invoke["nodes"] == [invoke["detail"]["target"]]
    assert throttled(injector) == {invoke["detail"]["target"]: invoke["detail"]["peers"]}
    return invoke["detail"]


def test_the_package_is_in_all_acts_on_the_network_and_is_ended_by_unthrottle() -> None:
    package = PACKAGES["slow-network"]
    assert package is slow_network.PACKAGE and package.in_all
    assert package.recorded is Fault.SLOW_NETWORK and package.resource == "network"
    assert package.roles == (TargetRole.FOLLOWER, TargetRole.LEADER,
                             TargetRole.ACTIVE_CONTROLLER)
    assert not package.counts_against_budget and not package.layers
    assert package.settings is SlowNetworkSettings
    assert package.default_settings() == SlowNetworkSettings()


def test_the_targets_role_and_its_peers() -> None:
    seen: dict[str, set[tuple[str, tuple[str, ...]]]] = {}
    for seed in range(60):
        drawn = draw(seed)
        seen.setdefault(drawn["role"], set()).add((drawn["target"], tuple(drawn["peers"])))
    assert seen == {
        # followers of the one partition (leader 1), each throttled towards the
        # other brokers only
        "follower": {("broker-2", ("broker-1", "broker-3")),
                     ("broker-3", ("broker-1", "broker-2"))},
        "leader": {("broker-1", ("broker-2", "broker-3"))},
        # the quorum's leader, towards every other node
        "active-controller": {("controller-2", ("broker-1", "broker-2", "broker-3",
                                                "controller-1"))}}


def test_the_same_seed_draws_the_same_fault_and_the_draws_cover_the_settings() -> None:
    settings = SlowNetworkSettings(rates_kbit=(32, 512), loss_probabilities=(0.0, 0.3),
                                   min_hold_s=0.0, max_hold_s=0.05)
    draws = [draw(seed, settings=settings) for seed in range(40)]
    assert draws[:10] == [draw(seed, settings=settings) for seed in range(10)]
    assert {d["rate_kbit"] for d in draws} == {32, 512}
    assert {d["loss"] for d in draws} == {0.0, 0.3}
    holds = {d["hold_s"] for d in draws}
    assert holds <= {0.0, 0.1} and all(d["mix"] == "slow-network" for d in draws)
    assert draw(5) == draw(5) and len({(d["target"], d["rate_kbit"], d["loss"])
                                       for d in draws}) > 1
    # one seed, one sequence: role, target, rate, loss, hold
    rng = random.Random(7)
    role = rng.choice([TargetRole.FOLLOWER, TargetRole.LEADER, TargetRole.ACTIVE_CONTROLLER])
    target = choose_target(role, [state(1, (1, 2, 3))], TOPOLOGY, rng, ACTIVE)
    rate, loss = rng.choice(settings.rates_kbit), rng.choice(settings.loss_probabilities)
    hold = round(rng.uniform(0.0, 0.05), 1)
    seven = draw(7, settings=settings)
    assert (seven["role"], seven["target"], seven["peers"], seven["rate_kbit"],
            seven["loss"]) == (role, target, slow_network.peers_of(target, TOPOLOGY), rate,
                               loss)
    assert seven["hold_s"] == hold
    # a run that sets none draws from the kind's defaults
    defaults = SlowNetworkSettings()
    plain = [draw(seed, settings=None) for seed in range(40)]
    assert {d["rate_kbit"] for d in plain} == set(defaults.rates_kbit)
    assert {d["loss"] for d in plain} == set(defaults.loss_probabilities)
    assert all(defaults.min_hold_s <= d["hold_s"] <= defaults.max_hold_s for d in plain)


def test_the_end_waits_for_the_drawn_hold_then_unthrottles_the_target() -> None:
    injector, recorder = mix_rig()
    settings = SlowNetworkSettings(min_hold_s=0.4, max_hold_s=0.4)
    started = time.monotonic()
    undo = mix(injector, 1, settings=settings).inject("slow-network")
    undo()
    (_, begun, _, end) = recorder.lines
    assert end["fault"] == Fault.UNTHROTTLE and end["nodes"] == begun["nodes"]
    assert end["at"] - started >= 0.4
    assert "hold_s" not in end["detail"] and end["detail"]["mix"] == "slow-network"
    assert end["detail"]["target"] == begun["detail"]["target"]
    assert throttled(injector) == {}


def test_a_stop_ends_it_before_the_hold() -> None:
    injector, recorder = mix_rig()
    stop = threading.Event()
    settings = SlowNetworkSettings(min_hold_s=30.0, max_hold_s=30.0)
    undo = mix(injector, 1, settings=settings, stop=stop).inject("slow-network")
    stop.set()
    started = time.monotonic()
    undo()
    assert time.monotonic() - started < 5 and recorder.lines[-1]["fault"] == Fault.UNTHROTTLE


def test_a_failed_inject_is_ended_at_once_and_the_error_goes_on() -> None:
    injector, recorder = mix_rig(fail="tc qdisc add")
    with pytest.raises(HarnessError, match="slow network on .* failed: RTNETLINK"):
        mix(injector, 2).inject("slow-network")
    assert [(x["type"], x["fault"]) for x in recorder.lines] == [
        ("invoke", Fault.SLOW_NETWORK), ("info", Fault.SLOW_NETWORK),
        ("invoke", Fault.UNTHROTTLE), ("ok", Fault.UNTHROTTLE)]
    assert recorder.lines[-1]["nodes"] == recorder.lines[0]["nodes"]
    assert throttled(injector) == {}


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
    ({"away_rate_kbit": 0}, "away_rate_kbit: 0 is not between 1"),
    ({"away_loss": 1.5}, "away_loss: 1.5 is not at least 0 and at most 1"),
])
def test_a_bad_slow_network_setting_is_refused_naming_it(settings, reason) -> None:  # noqa: ANN001
    import dataclasses

    from elr_harness.core.config import RunConfig
    from elr_harness.core.errors import BadInput
    from elr_harness.core.validate import validate_config
    from elr_harness.run.config import FAULT_RULES

    run = RunConfig(faults={"slow-network": dataclasses.replace(SlowNetworkSettings(), **{
        k: tuple(v) if isinstance(v, list) else v for k, v in settings.items()})})
    with pytest.raises(BadInput, match=r"\[run\.faults\.slow-network\]") as refused:
        validate_config({"run": run}, rules=FAULT_RULES)
    assert reason in str(refused.value)
    validate_config({"run": RunConfig(faults={"slow-network": SlowNetworkSettings()})},
                    rules=FAULT_RULES)  # the defaults pass
