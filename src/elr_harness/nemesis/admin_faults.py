"""The faults that change the cluster's config or features, not its nodes:
min-isr-change and feature-change (a part of nemesis.injector.FaultInjector).

They run Kafka's own tools in a node (cluster.admin_tools), chosen among the
nodes whose Kafka is up and not paused, controllers first and the least cut
off first. A change the controller refused ends `fail` (it certainly did not
happen), any other failure `info`. What a change changed is remembered until a
change of its own kind with `restore: true` puts it back and ends it
(harness.core.history.RESTORED_BY_SELF); `heal_all` restores what is left.

While the ELR feature is off KIP-966 promises nothing about unclean shutdowns:
the injector refuses a page-cache loss then, and refuses to turn ELR off while a
broker that lost its page cache is down.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from elr_harness.cluster.admin_tools import (
    ELR_FEATURE,
    AdminError,
    AdminRefused,
    AdminTools,
    admin_tools,
)
from elr_harness.cluster.node import Node
from elr_harness.core.errors import HarnessError
from elr_harness.core.history import RESTORE, Fault
from elr_harness.nemesis.injector_parts import InjectorPart, detail_of


class AdminFaults(InjectorPart):
    """Config and feature changes; FaultInjector provides the recording (`_fault`)
    and what is down, paused or cut off."""

    _admin: AdminTools | None
    lost_page_cache: set[str]
    #: Changes that are (or may be: ended info) in force, by target: topic (None:
    #: the cluster default) or feature -> (the value before, the value now).
    min_isr_changes: dict[str | None, tuple[int, int]]
    feature_changes: dict[str, tuple[int, int]]

    @property
    def admin(self) -> AdminTools:
        if self._admin is None:
            self._admin = admin_tools(self.cluster)
        return self._admin

    @property
    def elr_feature_off(self) -> bool:
        """Whether a feature change turned ELR off (or may have) and nothing restored it."""
        change = self.feature_changes.get(ELR_FEATURE)
        return change is not None and change[1] == 0

    def _tool_nodes(self) -> list[Node]:
        """Where Kafka's tools can run: nodes whose Kafka is up and not paused,
        controllers first, those cut off from the fewest peers first."""
        away = self.down | self.paused
        nodes = [n for n in self.cluster.controllers + self.cluster.brokers
                 if n.spec.name not in away]
        if not nodes:
            raise HarnessError("no node is up to run Kafka's admin tools in")
        return sorted(nodes, key=lambda n: len(self.grudge.get(n.spec.name, [])))

    def _read(self, ask: Callable[[Node], Any]) -> Any:
        """A read through the tools, tried in each node in turn (a read changes nothing)."""
        errors = []
        for node in self._tool_nodes():
            try:
                return ask(node)
            except AdminError as err:
                errors.append(str(err))
        raise AdminError("; ".join(errors))

    def min_isr(self, topic: str | None) -> int | None:
        """The topic's own min.insync.replicas (None: the cluster default); None when
        none is set there."""
        return self._read(lambda node: self.admin.min_isr(node, topic))

    def feature_level(self, feature: str) -> int | None:
        """The finalized level of `feature`; None when the cluster does not know it."""
        return self._read(lambda node: self.admin.feature_level(node, feature))

    def min_isr_change(self, topic: str | None, to: int, current: int,
                       step: str | None = None,
                       detail: dict[str, Any] | None = None) -> dict[str, Any]:
        """Set min.insync.replicas of `topic` (None: the cluster default) from
        `current` to `to`: the controller clears the ELR of the topic (of every topic)
        on such a change (KAFKA-16540). `restore_min_isr` puts it back."""
        def apply() -> None:
            self.admin.alter_min_isr(self._tool_nodes()[0], topic, to)

        return self._change(Fault.MIN_ISR_CHANGE, self.min_isr_changes, topic,
                            {"topic": topic, "from": current, "to": to}, step, detail, apply)

    def restore_min_isr(self, topic: str | None, step: str | None = None,
                        detail: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """Put back what min_isr_change changed on `topic` (None if nothing is)."""
        if topic not in self.min_isr_changes:
            return None
        before, now = self.min_isr_changes[topic]
        return self.min_isr_change(topic, before, now, step, {**(detail or {}), RESTORE: True})

    def feature_change(self, feature: str, to: int, current: int, step: str | None = None,
                       detail: dict[str, Any] | None = None) -> dict[str, Any]:
        """Upgrade or downgrade `feature` from level `current` to `to` (UpdateFeatures).
        Turning ELR off is refused while a broker that lost its page cache is down
        (it would come back with ELR off: KIP-966's protection would be gone for
        the very shutdown it is about). `restore_feature` puts it back."""
        def apply() -> None:
            self.admin.update_feature(self._tool_nodes()[0], feature, to, current)

        def refuse() -> str | None:
            if feature == ELR_FEATURE and to == 0 and self.lost_page_cache:
                return (f"{', '.join(sorted(self.lost_page_cache))} lost its page cache and "
                        "is down")
            return None

        return self._change(Fault.FEATURE_CHANGE, self.feature_changes, feature,
                            {"feature": feature, "from": current, "to": to}, step, detail,
                            apply, refuse)

    def restore_feature(self, feature: str, step: str | None = None,
                        detail: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """Put back what feature_change changed (None if nothing is)."""
        if feature not in self.feature_changes:
            return None
        before, now = self.feature_changes[feature]
        return self.feature_change(feature, before, now, step, {**(detail or {}), RESTORE: True})

    def _change(self, kind: Fault, changes: dict[Any, tuple[int, int]], target: Any,
                what: dict[str, Any], step: str | None, detail: dict[str, Any] | None,
                apply: Callable[[], None],
                refuse: Callable[[], str | None] | None = None) -> dict[str, Any]:
        """A config or feature change, recorded. `changes` remembers it (value before,
        value now) from its invoke until a restoring change ends `ok`: one that ended
        `info` may have happened. One the controller refused (`fail`) is forgotten."""
        restoring = bool((detail or {}).get(RESTORE))
        prior = changes.get(target)

        def act() -> None:
            if not restoring:
                changes[target] = ((prior or (what["from"],))[0], what["to"])
            apply()

        try:
            done = self._fault(kind, [], {**what, **detail_of(step, detail)}, act, refuse)
        except AdminRefused:
            if not restoring and prior is None:
                changes.pop(target, None)
            elif not restoring:
                changes[target] = prior
            raise
        if restoring:
            changes.pop(target, None)
        return done
