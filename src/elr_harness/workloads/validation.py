"""Checks of a WorkloadConfig before anything starts.

The CLI calls validate() right after parsing flags, so a typo fails with one
clear BadInput (exit 2) instead of a half-started run or a librdkafka trace.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from elr_harness.core.config import TopicConfig, WorkloadConfig
from elr_harness.core.errors import BadInput
from elr_harness.core.history import ACKS_LEVELS

PARTITION_CHOICES = ("round-robin", "random")
#: librdkafka's debug contexts (CONFIGURATION.md, `debug`).
DEBUG_CONTEXTS = ("generic", "broker", "topic", "metadata", "feature", "queue", "msg",
                  "protocol", "cgrp", "security", "fetch", "interceptor", "plugin",
                  "consumer", "admin", "eos", "mock", "assignor", "conf", "telemetry", "all")
CONSUMER_STARTS = ("earliest", "latest")


def validate(config: WorkloadConfig) -> None:
    """Raise BadInput naming the first impossible workload setting."""
    if not isinstance(config.producers, int) or config.producers < 1:
        raise BadInput(f"--producers must be at least 1, got {config.producers!r}")
    if not config.acks:
        raise BadInput(f"--acks needs at least one level of {', '.join(ACKS_LEVELS)}")
    for level in config.acks:
        if level not in ACKS_LEVELS:
            raise BadInput(f"unknown acks level {level!r}: use {', '.join(ACKS_LEVELS)}")
    if len(set(config.acks)) != len(config.acks):
        raise BadInput(f"acks levels repeat in {list(config.acks)}: name each level once")
    if config.producers < len(config.acks):
        unused = ", ".join(config.acks[config.producers:])
        raise BadInput(f"{config.producers} producer(s) cannot cover {len(config.acks)} acks "
                       f"levels (acks {unused} would have no producer): raise --producers")
    if config.idempotent and set(config.acks) != {"all"}:
        raise BadInput("idempotent producers need acks 'all' only "
                       f"(librdkafka refuses other levels), got {list(config.acks)}")
    _at_least("--concurrency", config.processes_per_client, 1)
    for context in (c.strip() for c in config.client_debug.split(",") if c.strip()):
        if context not in DEBUG_CONTEXTS:
            raise BadInput(f"--client-debug: {context!r} is no librdkafka debug context; "
                           f"use some of {', '.join(DEBUG_CONTEXTS)}")
    _at_least("--consumers", config.consumers, 0)
    for flag, count in (("--producers", config.producers), ("--consumers", config.consumers)):
        if count > config.max_clients:
            raise BadInput(f"{flag} {count} is more than {config.max_clients} clients "
                           "(each is a librdkafka client with its own threads)")
    _at_least("--rate", config.rate, 0)
    _positive("--time-limit", config.time_limit_s)
    if config.partition_choice not in PARTITION_CHOICES:
        raise BadInput(f"partition choice must be one of {', '.join(PARTITION_CHOICES)}, "
                       f"got {config.partition_choice!r}")
    if config.consumer_start not in CONSUMER_STARTS:
        raise BadInput(f"consumer start must be one of {', '.join(CONSUMER_STARTS)}, "
                       f"got {config.consumer_start!r}")
    for name in ("message_timeout_ms", "request_timeout_ms", "socket_timeout_ms",
                 "metadata_refresh_interval_ms", "fetch_wait_max_ms", "poll_batch"):
        _at_least(name, getattr(config, name), 1)
    _at_least("linger_ms", config.linger_ms, 0)
    if config.request_timeout_ms > config.message_timeout_ms:
        raise BadInput(f"request timeout ({config.request_timeout_ms} ms) must not exceed the "
                       f"message timeout ({config.message_timeout_ms} ms)")
    if config.linger_ms >= config.message_timeout_ms:
        raise BadInput("linger_ms must be below the message timeout")
    if config.socket_timeout_ms < config.fetch_wait_max_ms + 1000:
        raise BadInput("socket timeout must be at least fetch_wait_max_ms + 1000 ms "
                       "(librdkafka's rule)")
    for name in ("stop_timeout_s", "poll_timeout_s", "watermark_timeout_s",
                 "observe_interval_s", "observe_timeout_s", "final_read_timeout_s"):
        _positive(name, getattr(config, name))
    _at_least("final_read_parallelism", config.final_read_parallelism, 1)
    _at_least("last_errors_kept", config.last_errors_kept, 1)
    if not 0 < config.recorder_flush_interval_s <= 1.0:
        raise BadInput("recorder flush interval must be in (0, 1] s so a crash loses at most "
                       f"one second, got {config.recorder_flush_interval_s}")


def validate_targets(bootstrap: Sequence[str], topics: Sequence[TopicConfig]) -> None:
    """Raise BadInput when there is nothing to connect to or write to."""
    if isinstance(bootstrap, str) or not bootstrap or not all(bootstrap):
        raise BadInput(f"bootstrap must be a non-empty list of host:port, got {bootstrap!r}")
    if not topics:
        raise BadInput("the workload needs at least one topic")
    for topic in topics:
        if not topic.name:
            raise BadInput("a topic needs a name")
        if topic.partitions < 1:
            raise BadInput(f"topic {topic.name} needs at least one partition")


def _at_least(name: str, value: float, minimum: float) -> None:
    # nan compares false with everything: without isfinite it would pass
    if isinstance(value, bool) or not isinstance(value, int | float) or \
            not math.isfinite(value) or value < minimum:
        raise BadInput(f"{name} must be a number >= {minimum}, got {value!r}")


def _positive(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or \
            not math.isfinite(value) or not value > 0:
        raise BadInput(f"{name} must be a positive number of seconds, got {value!r}")
