"""The Node operations that are nothing but commands run in the node.

Finding, signalling and starting Kafka, and reading its log, are the same
shell commands whether they reach a Docker container or a host over SSH, so
both backends inherit them from here and only say how a command gets there
(`exec`).
"""

from __future__ import annotations

from elr_harness.cluster import kraft
from elr_harness.cluster.node import ExecResult, NodeSpec, exec_answered
from elr_harness.core.config import NodeTimeouts
from elr_harness.core.errors import HarnessError
from elr_harness.core.wait import wait_until

SIGNALS = {"TERM", "KILL", "STOP", "CONT"}


class KafkaProcessCommands:
    """kafka_pid, signal_kafka, start_kafka, wait_kafka_gone and log_tail, written
    against `exec` alone (cluster.node.Node's other half)."""

    spec: NodeSpec
    timeouts: NodeTimeouts

    def exec(self, cmd: list[str] | str, *, timeout_s: float | None = None,
             detach: bool = False) -> ExecResult:
        raise NotImplementedError

    def kafka_pid(self) -> int | None:
        """Kafka's pid, None when pgrep finds no process. pgrep exiting 0 (found)
        with no pid printed is an answer the Docker engine lost (moby/moby#27289):
        asked again, never read as "Kafka is gone"."""
        def pids(result: ExecResult) -> list[int]:
            return [int(p) for p in result.output.split() if p.isdigit()]

        def answered(result: ExecResult) -> bool:
            return result.exit_code != 0 or bool(pids(result))

        result = exec_answered(self, ["pgrep", "-f", kraft.KAFKA_PROCESS_PATTERN], answered,
                               self.timeouts.lost_output_retries,
                               timeout_s=self.timeouts.quick_command_s)
        if answered(result):
            found = pids(result)
            return found[0] if found else None
        raise HarnessError(f"{self.spec.name}: pgrep found Kafka's process but never printed "
                           f"its pid ({1 + self.timeouts.lost_output_retries} tries)")

    def signal_kafka(self, signal_name: str) -> bool:
        if signal_name not in SIGNALS:
            raise ValueError(f"unknown signal {signal_name}; one of {sorted(SIGNALS)}")
        result = self.exec(["pkill", f"-{signal_name}", "-f", kraft.KAFKA_PROCESS_PATTERN],
                           timeout_s=self.timeouts.quick_command_s)
        return result.exit_code == 0

    def start_kafka(self) -> None:
        result = self.exec(["sh", kraft.START_SCRIPT], timeout_s=self.timeouts.start_kafka_s)
        if not result.ok:
            raise HarnessError(f"{self.spec.name}: starting Kafka failed: {result.output[-500:]}")

    def wait_kafka_gone(self, timeout_s: float | None = None) -> bool:
        """True once no Kafka process is left in the node (after KILL or TERM)."""
        return wait_until(lambda: self.kafka_pid() is None,
                          self.timeouts.kafka_gone_s if timeout_s is None else timeout_s,
                          self.timeouts.process_poll_s)

    def log_tail(self, lines: int = 30) -> str:
        """The last lines Kafka wrote (server.log, else the JVM's stdout)."""
        cmd = (f"tail -n {lines} {kraft.SERVER_LOG} 2>/dev/null; "
               f"tail -n {lines} {kraft.STDOUT_LOG} 2>/dev/null")
        return self.exec(cmd, timeout_s=self.timeouts.quick_command_s).output
