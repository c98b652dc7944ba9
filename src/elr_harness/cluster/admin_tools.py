"""Kafka's own config and feature tools, run inside a node: the admin path of the
min-isr-change and feature-change faults.

librdkafka's admin client has no UpdateFeatures, and the harness's wire client
speaks no admin API; Kafka's ConfigCommand and FeatureCommand do both, are in
every distribution the nodes mount, and run the same through Docker and SSH
(Node.exec). The feature tool talks to the controllers directly
(`--bootstrap-controller`, KIP-919): the controller is what changes a feature
level. The config tool asks the brokers (`--bootstrap-server`): a controller
answers no DescribeConfigs of a topic ("not yet supported when communicating
directly with the controller quorum", Kafka 4.4), and a broker forwards the
change to the controller.

What Kafka said decides how a fault line ends: a change the controller refused
(an invalid config or feature level) certainly did not happen (AdminRefused: the
fault ends `fail`); any other failure (a timeout, no controller reached) may
have happened (AdminError: `info`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from elr_harness.cluster import kraft
from elr_harness.cluster.node import Node
from elr_harness.core.errors import HarnessError, Refused

if TYPE_CHECKING:
    from elr_harness.cluster.cluster import Cluster

#: The feature that turns ELR on (level 1) and off (level 0), KIP-966.
ELR_FEATURE = "eligible.leader.replicas.version"
MIN_ISR = "min.insync.replicas"

#: Where releases keep the tools, newest first (ConfigCommand left Scala's
#: kafka.admin for Java's org.apache.kafka.tools after 4.1).
CONFIG_CLASSES = ("org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand")
FEATURE_CLASSES = ("org.apache.kafka.tools.FeatureCommand", "kafka.admin.FeatureCommand")

#: Kafka errors that mean the controller looked at the change and said no.
REFUSALS = ("InvalidConfigurationException", "InvalidRequestException",
            "InvalidUpdateVersionException", "PolicyViolationException",
            "UnsupportedVersionException", "Invalid update version", "Could not upgrade",
            "Could not downgrade", "Could not disable")
#: Errors that leave it open whether the change was made.
UNKNOWNS = ("TimeoutException", "timed out", "DisconnectException", "NotControllerException")


class AdminError(HarnessError):
    """The tool failed in a way that leaves open whether the change was made."""


class AdminRefused(AdminError, Refused):
    """Kafka refused the change: nothing was changed."""


@dataclass(frozen=True)
class AdminTools:
    """The tools of one distribution, and the controllers they ask."""

    config_class: str
    feature_class: str
    #: host:port of every broker, comma-separated.
    brokers: str
    #: host:port of every controller, comma-separated.
    controllers: str
    timeout_s: float

    def _java(self, main_class: str, *args: str) -> list[str]:
        bootstrap = (["--bootstrap-controller", self.controllers]
                     if main_class == self.feature_class
                     else ["--bootstrap-server", self.brokers])
        return kraft.tool_command("128m", main_class, *bootstrap, *args)

    # -- the commands -------------------------------------------------------------

    def min_isr_entity(self, topic: str | None) -> list[str]:
        """A topic's own config, or the cluster default (`None`: the brokers' dynamic
        default, which Kafka 4.1+ keeps for min.insync.replicas while ELR is on)."""
        if topic is None:
            return ["--entity-type", "brokers", "--entity-default"]
        return ["--entity-type", "topics", "--entity-name", topic]

    def describe_min_isr_command(self, topic: str | None) -> list[str]:
        return self._java(self.config_class, *self.min_isr_entity(topic), "--describe")

    def alter_min_isr_command(self, topic: str | None, value: int) -> list[str]:
        return self._java(self.config_class, *self.min_isr_entity(topic), "--alter",
                          "--add-config", f"{MIN_ISR}={value}")

    def describe_features_command(self) -> list[str]:
        return self._java(self.feature_class, "describe")

    def update_feature_command(self, feature: str, level: int, current: int) -> list[str]:
        """`upgrade` to a level not below `current`, else `downgrade` (a safe one:
        Kafka's docs call turning ELR off by level 0 safe; it refuses otherwise)."""
        verb = "upgrade" if level >= current else "downgrade"
        return self._java(self.feature_class, verb, "--feature", f"{feature}={level}")

    # -- run in a node --------------------------------------------------------------

    def min_isr(self, node: Node, topic: str | None) -> int | None:
        """The topic's own (or the cluster default) min.insync.replicas; None when
        none is set there."""
        return parse_min_isr(self._run(node, self.describe_min_isr_command(topic)))

    def alter_min_isr(self, node: Node, topic: str | None, value: int) -> str:
        return self._run(node, self.alter_min_isr_command(topic, value))

    def feature_level(self, node: Node, feature: str) -> int | None:
        """The finalized level of `feature` (0 when off); None when the cluster does
        not know the feature."""
        return parse_feature_level(self._run(node, self.describe_features_command()), feature)

    def update_feature(self, node: Node, feature: str, level: int, current: int) -> str:
        return self._run(node, self.update_feature_command(feature, level, current))

    def _run(self, node: Node, command: list[str]) -> str:
        result = node.exec(command, timeout_s=self.timeout_s)
        if result.ok:
            return result.output
        raise failure(node.spec.name, command, result.exit_code, result.output)


def admin_tools(cluster: Cluster) -> AdminTools:
    """The tools of the Kafka under test, asking every broker or controller of `cluster`."""
    port = cluster.config.controller_port
    return AdminTools(cluster.tool_class(CONFIG_CLASSES), cluster.tool_class(FEATURE_CLASSES),
                      ",".join(cluster.bootstrap),
                      ",".join(f"{n.spec.address}:{port}" for n in cluster.controllers),
                      cluster.config.timeouts.admin_tool_s)


def failure(name: str, command: list[str], exit_code: int, output: str) -> AdminError:
    """What a failed tool run means: refused (nothing changed) or unknown."""
    args = " ".join(command[7:])  # after java, its options, the class and the bootstrap
    tail = " ".join(output.strip().splitlines()[-3:])[-400:]
    message = f"{name}: {args}: exited {exit_code}: {tail}"
    if any(u in output for u in UNKNOWNS) or not any(r in output for r in REFUSALS):
        return AdminError(message)
    return AdminRefused(message)


def parse_min_isr(output: str) -> int | None:
    """min.insync.replicas as ConfigCommand --describe lists it (`  min.insync.
    replicas=2 sensitive=false synonyms={...}`); None when the entity has none."""
    match = re.search(r"^\s*min\.insync\.replicas=(\d+)\b", output, re.M)
    return int(match.group(1)) if match else None


def parse_feature_level(output: str, feature: str) -> int | None:
    """The FinalizedVersionLevel of `feature` in FeatureCommand describe's output
    (`Feature: x<TAB>SupportedMinVersion: 0<TAB>...<TAB>FinalizedVersionLevel: 1`);
    a feature listed with no finalized level (`-`) is at 0."""
    for line in output.splitlines():
        fields = dict(re.findall(r"(\w+):\s*(\S+)", line))
        if fields.get("Feature") == feature:
            level = fields.get("FinalizedVersionLevel")
            return int(level) if level is not None and level.isdigit() else 0
    return None
