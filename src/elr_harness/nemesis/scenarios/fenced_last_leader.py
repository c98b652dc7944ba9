"""KAFKA-19522's recipe: is a fenced last known leader elected?

In Kafka 4.0.x the controller's `canElectLastKnownLeader` lacks a negation:
with ISR and ELR both empty it elects the partition's last known leader even
while that broker is fenced (fixed in 4.1.0). L is the leader, A and B its
followers; a fourth broker, no replica of the partition, answers the observer
throughout (every observe line carries the `fenced` brokers):

    F0  kill -9 A, wait until it is fenced and out of the ISR
    F1  kill -9 B, wait likewise                          -> ISR = {L}
    F2  kill -9 L, wait until it is fenced                -> no leader
    F3  restart L and, the moment it registers, SIGSTOP it (it stays fenced)
    F4  watch for hold_fenced_s: 4.0.x elects L while fenced (fenced-leader);
        4.1+ leaves the partition without a leader until L is unfenced. The wait
        asks what the checker's fenced-leader asks, one observation naming L
        leader and fenced: should the SIGSTOP land after L was unfenced, 4.1+
        rightly elects it (ISR = {L}), and that is no sign of the bug
    F5  SIGCONT L, restart A and B                        -> full ISR again

Needs min.insync.replicas 1 (so the ISR shrinks to {L} without the ELR taking
the followers) and 4 brokers; `harness run --nemesis fenced-last-leader`
defaults both.
"""

from __future__ import annotations

from collections.abc import Sequence

from elr_harness.cluster import kraft
from elr_harness.core.config import ClusterConfig, TopicConfig
from elr_harness.core.errors import BadInput
from elr_harness.core.wait import wait_until
from elr_harness.nemesis.faults import kill, pause
from elr_harness.nemesis.needs import Setting
from elr_harness.nemesis.scenarios.base import ScenarioPackage, ScriptedScenario, StepOutcome


class FencedLastLeader(ScriptedScenario):
    name = "fenced-last-leader"

    def run(self) -> list[StepOutcome]:
        leader, a_id, b_id = self._roles()
        l_name, a_name, b_name = (self._broker_name(i) for i in (leader, a_id, b_id))

        def fenced(broker: int):
            return lambda s: broker in (s.fenced or ()) and broker not in s.isr

        return self._steps([
            ("F0", lambda: kill.kill(self.injector, a_name, step="F0")),
            ("F0-wait", lambda: self._wait("F0", fenced(a_id))),
            ("F1", lambda: kill.kill(self.injector, b_name, step="F1")),
            ("F1-wait", lambda: self._wait("F1", lambda s: fenced(b_id)(s)
                                           and list(s.isr) == [leader])),
            ("F2", lambda: kill.kill(self.injector, l_name, step="F2")),
            ("F2-wait", lambda: self._wait("F2", lambda s: s.leader == -1
                                           and leader in (s.fenced or ()))),
            ("F3", lambda: self._restart_and_freeze(l_name)),
            ("F4-wait", lambda: self._wait(
                "F4", lambda s: s.leader == leader and leader in (s.fenced or ()),
                self.timings.hold_fenced_s)),
            ("F5", lambda: self.injector.resume(l_name, step="F5")),
            ("F5-start-a", lambda: self.injector.start(a_name, step="F5")),
            ("F5-start-b", lambda: self.injector.start(b_name, step="F5")),
            ("F5-wait", lambda: self._wait("F5", lambda s: s.leader >= 0
                                           and len(s.isr) >= 3)),
        ])

    def _restart_and_freeze(self, name: str) -> None:
        """Start L and SIGSTOP it as soon as its log says the controller registered
        it: a fenced broker that cannot heartbeat stays fenced."""
        node = self.injector.cluster.nodes[name]
        before = kraft.registrations(node)
        self.injector.start(name, step="F3")
        # what the wait saw, not a second grep: a grep that fails (a busy host's
        # `exec`) reads as no registration, and recorded a registered L as not (CI)
        registered = wait_until(lambda: kraft.registrations(node) > before,
                                self.timings.step_timeout_s,
                                self.timings.registration_poll_s, self.stop_event)
        if self.stop_event.is_set():
            return
        pause.pause(self.injector, name, step="F3")
        self._finish("F3", registered, {"registered": registered, "paused": name})


def check(cluster: ClusterConfig, topics: Sequence[TopicConfig]) -> None:
    """The recipe needs a broker that answers while every replica is down, and an
    ISR that may shrink to the leader alone."""
    replicas = max(t.replication_factor for t in topics)
    if cluster.brokers <= replicas:
        raise BadInput(f"{FencedLastLeader.name} needs a broker that is no replica of the "
                       "partition (to answer while its replicas are down): --brokers "
                       f"{replicas + 1}")
    if any(t.min_insync_replicas != 1 for t in topics):
        raise BadInput(f"{FencedLastLeader.name} needs --min-insync-replicas 1 (the ISR "
                       "must shrink to the leader alone)")


PACKAGE = ScenarioPackage(
    FencedLastLeader, check=check,
    # KAFKA-19522's recipe: a fourth broker to answer, an ISR that may shrink to one
    cluster_settings=(Setting("cluster.brokers", lambda run: run.fenced_last_leader_brokers),
                      Setting("topic.min_insync_replicas",
                              lambda run: run.fenced_last_leader_min_insync_replicas)),
    help="KAFKA-19522's recipe: is a fenced last known leader elected? (4 brokers, "
         "min ISR 1)")
