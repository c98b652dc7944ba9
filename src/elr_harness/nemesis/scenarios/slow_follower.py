"""A slow follower below min ISR (shared/SCENARIOS.md, "slow-follower";
KAFKA-19996, still open upstream: such a follower leaves the ISR and rejoins it
over and over).

Min ISR 2, replication factor 3; L leads, A and B follow:

    T0  throttle A's links to the other brokers (tc htb at
        slow_follower_rate_kbit, iptables random loss slow_follower_loss; its
        links to the controllers stay whole, so A stays registered)
                                            -> A falls behind: ISR = {L, B}
    T1  partition B away from every node    -> ISR = {L} < min ISR; ELR on: ELR = {B}
        hold slow_follower_hold_s           -> producers keep writing (acks=all
                                               refused while the ISR is short);
                                               A may rejoin and leave again
    T2  heal the partition, end the slow network
                                            -> the ISR is full again

Expected outcome, ELR on and off: valid, no acks=all `lost-write` (nothing
loses unflushed data: within the fault budget) and no `elr-invariant`, whatever
the ISR churn. The report's partition lanes show every ISR change.
"""

from __future__ import annotations

from elr_harness.nemesis import grudges
from elr_harness.nemesis.faults import partition, slow_network
from elr_harness.nemesis.scenarios.base import ScenarioPackage, ScriptedScenario, StepOutcome


class SlowFollower(ScriptedScenario):
    """T0..T2 on one partition; every other partition goes along."""

    name = "slow-follower"

    def run(self) -> list[StepOutcome]:
        roles = self._named_roles()
        nodes = sorted(self.injector.cluster.nodes)
        brokers = sorted(n.spec.name for n in self.injector.cluster.brokers)
        timings = self.timings
        return self._steps([
            ("T0", lambda: slow_network.throttle(
                self.injector, roles.a_name, [b for b in brokers if b != roles.a_name],
                timings.slow_follower_rate_kbit, timings.slow_follower_loss, step="T0")),
            ("T0-wait", lambda: self._wait(
                "T0", lambda s: sorted(s.isr) == sorted([roles.leader, roles.b]))),
            ("T1", lambda: partition.cut(
                self.injector, grudges.isolate(roles.b_name, nodes), step="T1")),
            ("T1-wait", lambda: self._wait(
                "T1", lambda s: roles.b not in s.isr)),
            ("T1-hold", lambda: self._sleep(timings.slow_follower_hold_s)),
            ("T2", lambda: self.injector.heal(step="T2")),
            ("T2-b", lambda: slow_network.unthrottle(self.injector, roles.a_name, step="T2")),
            ("T2-wait", lambda: self._wait("T2", lambda s: len(s.isr) == 3)),
        ])


PACKAGE = ScenarioPackage(
    SlowFollower.name, scenario=SlowFollower,
    help="KAFKA-19996: a throttled follower and a partitioned one hold the ISR below "
         "min ISR for a minute while producers write; durability must hold")
