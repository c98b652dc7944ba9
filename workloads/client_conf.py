"""librdkafka settings of the workload's clients, built from WorkloadConfig.

Kept in one place so the producers, consumers, final reads and the benchmark
talk to Kafka with exactly the same client behaviour.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any

from harness.config import WorkloadConfig

#: librdkafka's own log lines go to Python logging under this name, so a run
#: decides what to show instead of librdkafka printing to stderr.
CLIENT_LOGGER = logging.getLogger("workloads.librdkafka")


def producer_conf(bootstrap: Sequence[str], acks: str, config: WorkloadConfig) -> dict[str, Any]:
    """One producer client: one attempt per send unless idempotent."""
    conf: dict[str, Any] = {
        "bootstrap.servers": ",".join(bootstrap),
        "acks": acks,
        "enable.idempotence": config.idempotent,
        "message.timeout.ms": config.message_timeout_ms,
        "request.timeout.ms": config.request_timeout_ms,
        "socket.timeout.ms": config.socket_timeout_ms,
        "linger.ms": config.linger_ms,
        "topic.metadata.refresh.interval.ms": config.metadata_refresh_interval_ms,
        "logger": CLIENT_LOGGER,
    }
    if not config.idempotent:
        # One send = one attempt: its final error then says what happened to it.
        conf["retries"] = 0
    return _with_debug(conf, config)


def _with_debug(conf: dict[str, Any], config: WorkloadConfig) -> dict[str, Any]:
    """librdkafka's debug contexts, when asked for, at DEBUG level in the run's log."""
    if config.client_debug:
        conf["debug"] = config.client_debug
        CLIENT_LOGGER.setLevel(logging.DEBUG)
    return conf


def consumer_conf(bootstrap: Sequence[str], config: WorkloadConfig,
                  client_name: str) -> dict[str, Any]:
    """One consumer client: manual assignment, no commits, no silent jumps."""
    return _with_debug({
        "bootstrap.servers": ",".join(bootstrap),
        # librdkafka's consumer wants a group id; with assign() it never joins it.
        "group.id": f"elr-harness-{os.getpid()}-{client_name}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        # Never move the position behind our back: out-of-range and log
        # truncation become errors the consumer handles and records.
        "auto.offset.reset": "error",
        "enable.partition.eof": False,
        "isolation.level": "read_uncommitted",
        "check.crcs": True,
        "fetch.wait.max.ms": config.fetch_wait_max_ms,
        "socket.timeout.ms": config.socket_timeout_ms,
        "topic.metadata.refresh.interval.ms": config.metadata_refresh_interval_ms,
        "logger": CLIENT_LOGGER,
    }, config)
