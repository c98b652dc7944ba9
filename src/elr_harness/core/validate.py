"""One typed boundary for every setting, whatever its source.

A flag, a `--config` file and a replayed test.json all end in the dataclasses
of harness.core.config; validate_config checks those with one rule per field,
the same functions the flags' argparse types call (run/flags.py). Values
reach shell scripts and Kafka's server.properties on the test hosts, as root:
a name, path or option with a newline, NUL or shell metacharacter is refused
here, before anything starts. Each rule raises Invalid(reason); the caller
names the source (`--brokers`, `--config FILE: [cluster] jvm_opts`).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from elr_harness.core.config import (
    CONSUMER_STARTS,
    JAVA_LOG_LEVELS,
    LATER_WORKLOADS,
    PARTITION_CHOICES,
    TXN_CLIENTS,
    WORKLOADS,
)
from elr_harness.core.errors import BadInput
from elr_harness.core.history import ACKS_LEVELS, COVERAGE_STATES, TXN_COVERAGE_STATES

#: The longest time any setting may name (a run, an interval, a timeout):
#: a typo such as 1e308 is refused, not waited for.
MAX_SECONDS = 7 * 86400.0
#: The most rounds `--rounds` may ask for (more outlast any time limit).
MAX_ROUNDS = 10_000
#: The most cores `local[N]` may ask Spark for (more only starves the machine).
MAX_LOCAL_CORES = 256
#: The private (RFC 1918) networks a cluster's subnet must lie in.
PRIVATE_NETWORKS = tuple(ipaddress.IPv4Network(n) for n in
                         ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))
SUBNET_PREFIXES = (16, 28)


class Invalid(ValueError):
    """Why a value breaks its field's rule (the caller says which field)."""


def _shown(value: Any) -> str:
    """A value for a one-line message: quoted, control characters escaped, cut short."""
    return repr(value[:60] if isinstance(value, str) else value)[:64]


# -- names, paths, options ------------------------------------------------------

#: Kafka's own rule for a topic's name (org.apache.kafka.common.internals.Topic).
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")
_CLUSTER_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]{0,39}")
_IMAGE_NAME = re.compile(r"[a-z0-9][a-z0-9._/:@-]{0,254}")
_REPOSITORY = re.compile(r"[a-z0-9][a-z0-9._/-]{0,127}")
_SAFE_PATH = re.compile(r"/[A-Za-z0-9._/-]{0,254}")
#: -Xms/-Xmx/-Xss with a size: all a heap setting may be.
_HEAP_TOKEN = re.compile(r"-X(ms|mx|ss)[1-9][0-9]{0,6}[kKmMgG]?")
#: A JVM option of the kinds a node or the checker needs, and nothing a shell reads;
#: no -XX:On... (OnError, OnOutOfMemoryError run commands) and no path in an -XX:
#: or -Xlog: value (HeapDumpPath, ErrorFile, file= write where they are told, as root).
_JVM_TOKEN = re.compile(
    r"-XX:[+-][A-Za-z][A-Za-z0-9]{0,79}"
    r"|-XX:(?!On)[A-Za-z][A-Za-z0-9]{0,79}=[A-Za-z0-9._:,+-]{1,200}"
    r"|-X(ms|mx|ss|mn)[1-9][0-9]{0,6}[kKmMgG]?"
    r"|-X(int|mixed|rs|share:(auto|on|off)|log:[A-Za-z0-9_,+=:.-]{1,200})"
    r"|-D[A-Za-z_][A-Za-z0-9_.-]{0,120}(=[A-Za-z0-9._:/,+@-]{0,200})?"
    r"|-(ea|da|esa|dsa|server)")
_MEMORY = re.compile(r"[1-9][0-9]{0,6}[kKmMgGtT]?")
_PACKAGE = re.compile(r"[a-z0-9][a-z0-9.+-]{0,99}")
_SUITE = re.compile(r"[a-z][a-z0-9-]{0,31}")
_URL = re.compile(r"(https?|file)://[A-Za-z0-9._~:/%+@-]{1,500}")
_SPARK_KEY = re.compile(r"spark\.[A-Za-z0-9._-]{1,200}")
_KAFKA_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+-]{0,63}")


def text(value: str, limit: int = 4096) -> str:
    """Any free text: no newline, NUL or other control character, bounded."""
    if not isinstance(value, str):
        raise Invalid(f"{_shown(value)} is not text")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise Invalid(f"{_shown(value)} holds a newline, NUL or other control character")
    if len(value) > limit:
        raise Invalid(f"{len(value)} characters, more than {limit}")
    return value


def shown_path(path: Path | str) -> str:
    """A path for a one-line message: its first 120 characters as printable() shows
    them (a newline in a file name must not end the line)."""
    return printable(str(path)[:120])


#: What printable() escapes: C0 controls, DEL, C1 controls, lone surrogates (a
#: file name's bytes that are not UTF-8, as Python's surrogateescape gives them).
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def _escaped(match: re.Match) -> str:
    code = ord(match[0])
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"  # the byte the file name holds
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: object) -> str:
    """Text for one line on a terminal, whole (a path on a success line is copied
    from there): a control character or a byte that is not UTF-8 as \\xNN, so a
    name holding an escape sequence or a newline neither drives the terminal nor
    ends the line; everything else as it is."""
    return _UNPRINTABLE.sub(_escaped, str(text))


def _matching(pattern: re.Pattern, what: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        text(value)
        if not pattern.fullmatch(value):
            raise Invalid(f"{_shown(value)} is not {what}")
        return value
    return check


#: A Kafka version as every command takes it (`latest`, or a release's name).
KAFKA_VERSION_RULE = _matching(_KAFKA_VERSION, "a Kafka version")


def topic_name(value: str) -> str:
    text(value)
    if value in (".", "..") or not _TOPIC_NAME.fullmatch(value):
        raise Invalid(f"'{value[:60]}' is not a Kafka topic name (1-249 of a-z A-Z 0-9 . _ -)")
    return value


def cluster_name(value: str) -> str:
    """A name Docker accepts for containers and networks, short enough for both."""
    text(value)
    if not _CLUSTER_NAME.fullmatch(value):
        raise Invalid(f"'{value[:60]}' is not a cluster name (1-40 of a-z A-Z 0-9 _ . -, "
                      "starting with a letter or digit)")
    return value


image_name = _matching(_IMAGE_NAME, "a Docker image name")


def safe_path(value: str) -> str:
    """An absolute path a shell line on a test host may hold: a-z A-Z 0-9 . _ - /,
    no `..`, not / itself."""
    text(value)
    if not _SAFE_PATH.fullmatch(value) or ".." in value.split("/") or value.rstrip("/") == "":
        raise Invalid(f"{_shown(value)} is not an absolute path of a-z A-Z 0-9 . _ - / "
                      "(no .., not /)")
    return value


def local_path(value: Path | None) -> Path | None:
    """A path on this machine: only a newline or NUL is refused (it is never a shell's)."""
    if value is not None:
        text(str(value))
    return value


def _tokens(value: str, pattern: re.Pattern, what: str) -> str:
    """Space-separated words, each matching pattern whole (what: what each must be)."""
    text(value)
    for token in value.split():
        if not pattern.fullmatch(token):
            raise Invalid(f"{_shown(token)} is not {what}")
    return value


def jvm_heap(value: str) -> str:
    """`-Xms128m -Xmx256m`: only -Xms/-Xmx/-Xss tokens with sizes."""
    return _tokens(value, _HEAP_TOKEN, "-Xms, -Xmx or -Xss with a size (like -Xmx256m)")


def jvm_options(value: str) -> str:
    """Space-separated JVM options, each of a strict form (-XX:, -X.., -D..=...)."""
    return _tokens(value, _JVM_TOKEN, "a JVM option this harness passes on "
                                      "(-XX:+Flag, -XX:Name=value, -Xmx512m, -Dkey=value)")


# -- numbers ------------------------------------------------------------------


def integer(low: int, high: int) -> Callable[[int], int]:
    def check(value: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise Invalid(f"{_shown(value)} is not a whole number")
        if not low <= value <= high:
            raise Invalid(f"{value} is not between {low} and {high}")
        return value
    return check


def number(low: float, high: float, above_low: bool = False) -> Callable[[float], float]:
    """A finite number in [low, high] (or (low, high])."""
    def check(value: float) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise Invalid(f"{_shown(value)} is not a number")
        if not math.isfinite(value):
            raise Invalid(f"{value!r} is not a finite number")
        if value < low or (above_low and value == low) or value > high:
            raise Invalid(f"{value:g} is not {'above' if above_low else 'at least'} {low:g} "
                          f"and at most {high:g}")
        return value
    return check


#: A time in seconds: finite, >= 0, at most MAX_SECONDS.
seconds = number(0.0, MAX_SECONDS)
#: A time in seconds that must pass at all (a timeout, a period).
positive_seconds = number(0.0, MAX_SECONDS, above_low=True)
milliseconds = integer(0, int(MAX_SECONDS * 1000))
positive_ms = integer(1, int(MAX_SECONDS * 1000))
port = integer(0, 65535)
seed = integer(-(2**63), 2**63 - 1)


# -- networks and URLs ----------------------------------------------------------


def subnet(value: str) -> str:
    """A private (RFC 1918) IPv4 network of /16 to /28, in its canonical form."""
    text(value)
    try:
        network = ipaddress.IPv4Network(value, strict=True)
    except ValueError as err:
        raise Invalid(f"not an IPv4 subnet like 10.213.77.0/24: {err}") from None
    low, high = SUBNET_PREFIXES
    if network.prefixlen > high:
        raise Invalid(f"subnet {network} is too small (a prefix of /{low} to /{high} is "
                      "accepted)")
    if network.prefixlen < low:
        raise Invalid(f"subnet {network} is too large (a prefix of /{low} to /{high} is "
                      "accepted)")
    if not any(network.subnet_of(private) for private in PRIVATE_NETWORKS):
        raise Invalid(f"subnet {network} is not a private network (inside 10.0.0.0/8, "
                      "172.16.0.0/12 or 192.168.0.0/16)")
    return str(network)


_SPARK_LOCAL = re.compile(r"local(\[(\*|[0-9]{1,9})(,[0-9]{1,4})?\])?")
_SPARK_HOST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,252})?:[0-9]{1,5}")


def spark_master(value: str) -> str:
    """local, local[*], local[N] (N <= MAX_LOCAL_CORES) or spark://host:port[,host:port]."""
    text(value)
    supported = "only local[*], local[N] and spark://host:port are supported"
    if match := _SPARK_LOCAL.fullmatch(value):
        cores = match[2]
        if cores not in (None, "*") and not 1 <= int(cores) <= MAX_LOCAL_CORES:
            raise Invalid(f"'{value[:60]}': local[N] takes 1 to {MAX_LOCAL_CORES} cores")
        return value
    if value.startswith("spark://"):
        hosts = value[len("spark://"):].split(",")
        if 1 <= len(hosts) <= 8 and all(_SPARK_HOST.fullmatch(h) and
                                        1 <= int(h.rsplit(":", 1)[1]) <= 65535
                                        for h in hosts):
            return value
    raise Invalid(f"'{value[:60]}' is not a Spark master URL ({supported})")


def spark_conf(value: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    for key, setting in value:
        _matching(_SPARK_KEY, "a Spark setting (spark.*)")(key)
        # extraJavaOptions start a JVM: the same rule as the checker's jvm_options
        (jvm_options if key.endswith("JavaOptions") else text)(setting)
    return value


def each(rule: Callable[[Any], Any], at_least: int = 0) -> Callable[[tuple], tuple]:
    def check(values: tuple) -> tuple:
        if len(values) < at_least:
            raise Invalid(f"needs at least {at_least} item(s)")
        for value in values:
            rule(value)
        return values
    return check


def optional(rule: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: value if value is None else rule(value)


def boolean(value: bool) -> bool:
    if not isinstance(value, bool):
        raise Invalid(f"{_shown(value)} is not true or false")
    return value


def one_of(choices: tuple[str, ...]) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value not in choices:
            raise Invalid(f"{_shown(value)} is not one of {', '.join(choices)}")
        return value
    return check



# -- the workload's choices --------------------------------------------------------

#: librdkafka's debug contexts (CONFIGURATION.md, `debug`).
DEBUG_CONTEXTS = ("generic", "broker", "topic", "metadata", "feature", "queue", "msg",
                  "protocol", "cgrp", "security", "fetch", "interceptor", "plugin",
                  "consumer", "admin", "eos", "mock", "assignor", "conf", "telemetry", "all")


def acks_levels(values: tuple) -> tuple:
    """At least one acks level of the contract's, each once."""
    each(one_of(ACKS_LEVELS), 1)(values)
    if len(set(values)) != len(values):
        raise Invalid(f"acks levels repeat in {list(values)}: name each level once")
    return values


def debug_contexts(value: str) -> str:
    """librdkafka's debug contexts, comma-separated (none: no debug log)."""
    text(value, 500)
    for context in (c.strip() for c in value.split(",") if c.strip()):
        if context not in DEBUG_CONTEXTS:
            raise Invalid(f"{_shown(context)} is no librdkafka debug context; use some of "
                          f"{', '.join(DEBUG_CONTEXTS)}")
    return value


def workloads(values: tuple) -> tuple:
    """What a run drives (`--workload plain,txn`): at least one, each once, each
    one built (eos, a later issue, is said to be not yet)."""
    if isinstance(values, str) or not isinstance(values, tuple | list):
        raise Invalid(f"{_shown(values)} is not a list of workloads")
    if not values:
        raise Invalid(f"name at least one workload of {', '.join(WORKLOADS)}")
    for value in values:
        if value in LATER_WORKLOADS:
            raise Invalid(f"{_shown(value)} is not yet built (consume-transform-produce "
                          f"comes with a later issue); use {' or '.join(WORKLOADS)}")
        if value not in WORKLOADS:
            raise Invalid(f"{_shown(value)} is no workload; use some of {', '.join(WORKLOADS)}")
    if len(set(values)) != len(values):
        raise Invalid(f"workloads repeat in {list(values)}: name each once")
    return tuple(values)


# -- the rules of every field ---------------------------------------------------

_TINY = integer(1, 1_000_000)
_COUNT = integer(0, 1_000_000)
_BYTES = integer(0, 2**50)

#: "section.field" -> its rule. Fields whose cross-field limits (a topic's
#: replication factor and the brokers, acks and producers) need the whole config
#: are checked again where that is known (cluster/kraft.py, workloads/validation.py).
RULES: dict[str, Callable[[Any], Any]] = {
    # cluster
    "cluster.name": cluster_name,
    "cluster.controllers": integer(-1000, 1000),
    "cluster.brokers": integer(-1000, 1000),
    "cluster.elr": boolean,
    # transaction.version finalized at format time: 1 or 2 (None: the release's own)
    "cluster.transaction_version": optional(integer(1, 2)),
    "cluster.guard_internal_topics": boolean,
    "cluster.timings.transaction_abort_check_interval_ms": positive_ms,
    "cluster.timings.transaction_max_timeout_ms": positive_ms,
    "cluster.kafka_version": KAFKA_VERSION_RULE,
    "cluster.kafka_dist": local_path,
    "cluster.subnet": subnet,
    "cluster.first_host": integer(2, 65000),
    "cluster.broker_port": integer(1, 65535),
    "cluster.controller_port": integer(1, 65535),
    "cluster.controller_heap": jvm_heap,
    "cluster.broker_heap": jvm_heap,
    "cluster.jvm_opts": jvm_options,
    "cluster.class_archive": boolean,
    "cluster.ready_timeout_s": positive_seconds,
    "cluster.node_start_timeout_s": positive_seconds,
    "cluster.log_dir": safe_path,
    "cluster.log_dirs": integer(1, 16),
    "cluster.metadata_log_dir": safe_path,
    "cluster.nodes_file": local_path,
    "cluster.timings.leader_imbalance_check_interval_s": integer(1, int(MAX_SECONDS)),
    "cluster.releases.metadata_url": _matching(_URL, "an http(s) URL"),
    "cluster.releases.cache_hours": number(0, MAX_SECONDS / 3600),
    "cluster.image.suite": _matching(_SUITE, "a Debian suite name"),
    "cluster.image.mirror": _matching(_URL, "an http(s) mirror URL"),
    "cluster.image.packages": each(_matching(_PACKAGE, "a Debian package name"), 1),
    "cluster.image.base_image": optional(image_name),
    "cluster.image.repository": _matching(_REPOSITORY, "a Docker repository name"),
    "cluster.ssh.kafka_dir": safe_path,
    "cluster.timeouts.create_topic_attempts": integer(1, 100),
    "cluster.timeouts.network_attempts": integer(1, 100),
    "cluster.timeouts.route_lookup_attempts": integer(1, 100),
    "cluster.timeouts.read_file_attempts": integer(1, 100),
    "cluster.timeouts.lost_output_retries": integer(0, 100),
    # topic (its counts against the cluster: cluster/kraft.py validate_topic)
    "topic.name": topic_name,
    "topic.partitions": integer(-(10**9), 10**9),
    "topic.replication_factor": integer(-1000, 1000),
    "topic.min_insync_replicas": integer(-1000, 1000),
    "topic.unclean_leader_election": boolean,
    # workload: each field's own rule (the rules across fields, acks against producers,
    # timeouts against each other: workloads/validation.py)
    "workload.producers": integer(1, 10**9),
    "workload.consumers": integer(0, 10**9),
    "workload.acks": acks_levels,
    "workload.processes_per_client": integer(1, 10_000),
    "workload.max_clients": integer(1, 1024),
    "workload.rate": number(0, 10_000_000),
    "workload.time_limit_s": positive_seconds,
    "workload.idempotent": boolean,
    "workload.client_debug": debug_contexts,
    "workload.partition_choice": one_of(PARTITION_CHOICES),
    "workload.seed": seed,
    "workload.poll_batch": _TINY,
    "workload.consumer_start": one_of(CONSUMER_STARTS),
    "workload.observe": boolean,
    "workload.final_read_parallelism": integer(1, 256),
    "workload.last_errors_kept": integer(1, 10_000),
    # transactions (the rules across fields: workloads/validation.py)
    "workload.workloads": workloads,
    "workload.txn_client": one_of(TXN_CLIENTS),
    "workload.txn_producers": integer(1, 1024),
    "workload.txn_min_sends": integer(1, 1000),
    "workload.txn_max_sends": integer(1, 1000),
    "workload.txn_abort_ratio": number(0, 1),
    "workload.txn_rate": number(0, 1_000_000),
    "workload.read_committed_consumers": integer(0, 1024),
    "workload.txn_value_base": integer(1, 2**62),
    "workload.txn_commit_attempts": integer(1, 100),
    "workload.txn_java_heap": jvm_heap,
    "workload.txn_java_log_level": one_of(JAVA_LOG_LEVELS),
    # a crash loses at most one second of what was recorded
    "workload.recorder_flush_interval_s": number(0, 1, above_low=True),
    # run
    "run.nemesis": lambda v: text(v, 1000),
    "run.schedule": lambda v: v if v is None else text(v, 4096),
    "run.seed": seed,
    "run.time_limit_s": seconds,
    "run.interval_s": seconds,
    "run.min_interval_s": seconds,
    "run.quiet_after_faults_s": seconds,
    "run.recovery_timeout_s": positive_seconds,
    "run.store": local_path,
    "run.keep_cluster": boolean,
    "run.check": boolean,
    "run.fenced_last_leader_brokers": integer(1, 1000),
    "run.guided.brokers": integer(3, 1000),
    "run.fenced_last_leader_min_insync_replicas": integer(1, 1000),
    "run.min_isr_drop_min_insync_replicas": integer(1, 1000),
    "run.elr_downgrade_brokers": integer(1, 1000),
    "run.reached": each(one_of((*COVERAGE_STATES, *TXN_COVERAGE_STATES))),
    "run.rounds": optional(integer(1, MAX_ROUNDS)),
    "run.scenario.warmup_high_watermark": integer(0, 1_000_000_000),
    # checker
    "checker.spark_master": spark_master,
    "checker.spark_logs_kept": integer(0, 10_000),
    "checker.driver_memory": _matching(_MEMORY, "a JVM memory size like 2g"),
    "checker.executor_memory": _matching(_MEMORY, "a JVM memory size like 1g"),
    "checker.max_examples": _COUNT,
    "checker.shuffle_partitions": _TINY,
    "checker.max_partition_bytes": integer(1, 2**40),
    "checker.bucket_bytes": integer(1, 2**40),
    "checker.parquet_cache": boolean,
    "checker.interpreted_below_bytes": _BYTES,
    "checker.interpreted_expressions_below_bytes": _BYTES,
    "checker.parsed_in_memory_below_bytes": _BYTES,
    "checker.max_line_bytes": _BYTES,
    "checker.default_replication_factor": integer(1, 1000),
    "checker.default_min_insync_replicas": integer(1, 1000),
    "checker.jvm_options": jvm_options,
    "checker.quick_jit_below_bytes": _BYTES,
    "checker.quick_jit_cached_below_bytes": _BYTES,
    "checker.class_archive": boolean,
    "checker.spark_conf": spark_conf,
}


def rule_of(path: str, value: Any) -> Callable[[Any], Any]:
    """The field's rule: RULES', else by its name (`*_ms`, `*_s`), else none found."""
    if path in RULES:
        return RULES[path]
    name = path.rsplit(".", 1)[-1]
    if name.endswith("_ms") and isinstance(value, int):
        return positive_ms if "linger" not in name else milliseconds
    if name.endswith("_s") and isinstance(value, int | float):
        return positive_seconds
    raise KeyError(path)


def fields_of(section: Any, prefix: str) -> list[tuple[str, Any]]:
    """(section.field path, value) of every leaf field, nested sections flattened;
    a field holding sections by name (RunConfig.faults: each fault kind's own
    settings) gives `prefix.field.name.leaf`."""
    leaves = []
    for field in dataclasses.fields(section):
        value = getattr(section, field.name)
        path = f"{prefix}.{field.name}"
        if dataclasses.is_dataclass(value):
            leaves.extend(fields_of(value, path))
        elif isinstance(value, Mapping) and all(dataclasses.is_dataclass(v)
                                                for v in value.values()):
            for name, part in sorted(value.items()):
                leaves.extend(fields_of(part, f"{path}.{name}"))
        else:
            leaves.append((path, value))
    return leaves


def validate_config(sections: dict[str, Any],
                    where: Callable[[str], str] | None = None,
                    rules: Mapping[str, Callable[[Any], Any]] | None = None) -> None:
    """Check every field of the typed config (sections: name -> dataclass or None)
    by its rule (RULES, with `rules` over them: the fault kinds' own, by path);
    BadInput `<where(path)>: <reason>` on the first that breaks one. where(path)
    names the field's source: its flag, or the file and table."""
    name = where or default_where
    extra = rules or {}
    for section, config in sections.items():
        if config is None:
            continue
        for path, value in fields_of(config, section):
            try:
                (extra[path] if path in extra else rule_of(path, value))(value)
            except Invalid as err:
                raise BadInput(f"{name(path)}: {err}") from None


def default_where(path: str) -> str:
    """`cluster.timings.request_timeout_ms` -> `[cluster.timings] request_timeout_ms`."""
    table, _, field = path.rpartition(".")
    return f"[{table}] {field}"
