"""librdkafka settings of the workload's clients, built from WorkloadConfig.

Kept in one place so the producers, consumers, final reads and the benchmark
talk to Kafka with exactly the same client behaviour.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

from elr_harness.core.config import WorkloadConfig

#: librdkafka's own log lines go to Python logging under this name, so a run
#: decides what to show instead of librdkafka printing to stderr.
CLIENT_LOGGER = logging.getLogger("elr_harness.workloads.librdkafka")


#: librdkafka debug context a producer always runs with: its "broker" lines
#: (REQERR) are how ResendWatch learns that the client may re-send a request.
PRODUCER_DEBUG = "broker"


class ResendWatch:
    """A producer's librdkafka log sink that spots silent re-sends.

    librdkafka (seen with 2.16.0) can fail a produce request that is already
    on the wire with a *local* error it marks "not persisted", e.g. when it
    drops that broker's handle after a metadata response stops listing a
    fenced broker ("Broker handle destroyed without termination"). It then puts the
    messages back in the queue and sends them again to the new leader, without
    counting a retry, so even with retries=0 a message goes out twice: the
    first copy may already sit in the old leader's log, and the delivery
    report only tells how the second attempt ended. Every send this client has
    open when such a line is served must therefore be recorded as `info`.
    Log lines are served by poll() in order with delivery reports, so the
    sends open at that moment include every one the dropped request carried.

    The same holds for NOT_LEADER_OR_FOLLOWER: librdkafka re-sends after it
    without counting a retry, yet a leader answers it to an acks=all request it
    had already appended when it lost leadership while waiting for replicas
    (seen in a real ELR-on run: the zombie leader's copy survived because that
    broker was elected again from the ELR, while the re-send ended in
    NOT_ENOUGH_REPLICAS, a `fail` the checker then called an aborted-read).
    """

    #: REQERR lines of librdkafka's "broker" debug context for a produce request
    #: after which librdkafka may re-send messages whose first copy may have been
    #: appended: any failure inside the client (seen: "Local: Broker handle
    #: destroyed without termination: actions Refresh,MsgNotPersisted"), and the
    #: broker's "Not leader for partition".
    _MARKERS = ("ProduceRequest failed: Local:",
                "ProduceRequest failed: Broker: Not leader for partition")

    def __init__(self, on_resend: Callable[[str], None]) -> None:
        self._on_resend = on_resend

    def log(self, level: int, msg: str, *args: Any) -> None:
        """confluent-kafka's logger interface: logger.log(level, fmt, *args)."""
        try:
            text = msg % args if args else str(msg)
        except (TypeError, ValueError):  # never let a log line break poll()
            text = " ".join(str(a) for a in (msg, *args))
        if any(marker in text for marker in self._MARKERS):
            self._on_resend(text)
        CLIENT_LOGGER.log(level, "%s", text)


def producer_conf(bootstrap: Sequence[str], acks: str, config: WorkloadConfig,
                  watch: ResendWatch | None = None) -> dict[str, Any]:
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
    if watch is not None:
        conf["logger"] = watch
        return _with_debug(conf, config, always=PRODUCER_DEBUG)
    return _with_debug(conf, config)


def txn_producer_conf(bootstrap: Sequence[str], txn_id: str,
                      config: WorkloadConfig) -> dict[str, Any]:
    """One librdkafka transactional producer (idempotent and acks=all by itself)."""
    return _with_debug({
        "bootstrap.servers": ",".join(bootstrap),
        "transactional.id": txn_id,
        "transaction.timeout.ms": config.txn_timeout_ms,
        "message.timeout.ms": config.message_timeout_ms,
        "request.timeout.ms": config.request_timeout_ms,
        "socket.timeout.ms": config.socket_timeout_ms,
        "linger.ms": config.linger_ms,
        "topic.metadata.refresh.interval.ms": config.metadata_refresh_interval_ms,
        "logger": CLIENT_LOGGER,
    }, config)


def _with_debug(conf: dict[str, Any], config: WorkloadConfig,
                always: str = "") -> dict[str, Any]:
    """librdkafka's debug contexts: those a client needs, plus the user's, which are
    then logged at DEBUG level to the run's log."""
    contexts = [c for c in f"{always},{config.client_debug}".split(",") if c.strip()]
    if contexts:
        conf["debug"] = ",".join(dict.fromkeys(c.strip() for c in contexts))
    if config.client_debug:
        CLIENT_LOGGER.setLevel(logging.DEBUG)
    return conf


def consumer_conf(bootstrap: Sequence[str], config: WorkloadConfig, client_name: str,
                  on_stats: Callable[[str], None] | None = None, *,
                  isolation: str = "read_uncommitted",
                  partition_eof: bool = False) -> dict[str, Any]:
    """One consumer client: manual assignment, no commits, no silent jumps;
    `on_stats` gets librdkafka's statistics JSON (the fetch high watermarks).
    `partition_eof`: an event at each partition's end (the high watermark, or the
    LSO at read_committed) carrying the position there, past markers and aborted
    records that return nothing (the transactional workload's positions)."""
    conf = _with_debug({
        "bootstrap.servers": ",".join(bootstrap),
        # librdkafka's consumer wants a group id; with assign() it never joins it.
        "group.id": f"elr-harness-{os.getpid()}-{client_name}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        # Never move the position behind our back: out-of-range and log
        # truncation become errors the consumer handles and records.
        "auto.offset.reset": "error",
        "enable.partition.eof": partition_eof,
        "isolation.level": isolation,
        "check.crcs": True,
        "fetch.wait.max.ms": config.fetch_wait_max_ms,
        "socket.timeout.ms": config.socket_timeout_ms,
        "topic.metadata.refresh.interval.ms": config.metadata_refresh_interval_ms,
        "logger": CLIENT_LOGGER,
    }, config)
    if on_stats is not None:
        conf["stats_cb"] = on_stats
        conf["statistics.interval.ms"] = config.fetch_stats_interval_ms
    return conf
