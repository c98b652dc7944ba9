"""The history contract (shared/HISTORY.md, version 4) in code.

The one place the contract's names, process ids and levels are spelled: the
recorder, the nemesis, the checker and the report import them from here. The
field tables the checker validates lines against are in checker/lines.py,
which builds its SQL from them.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

#: The history's file name in a run directory.
HISTORY_NAME = "history.jsonl"

#: Process ids of the lines no client writes.
NEMESIS_PROCESS = -1
OBSERVER_PROCESS = -2
COLLECTOR_PROCESS = -3

#: acks levels as the history spells them, strongest first (the order reports use).
ACKS_LEVELS = ("all", "1", "0")


class Kind(StrEnum):
    """A line's `f`."""

    SEND = "send"
    POLL = "poll"
    #: a transactional producer's transaction (contract v4)
    TXN = "txn"
    FAULT = "fault"
    OBSERVE = "observe"
    REPLICA = "replica"


class OpType(StrEnum):
    """A line's `type`."""

    INVOKE = "invoke"
    OK = "ok"
    FAIL = "fail"
    INFO = "info"


class Fault(StrEnum):
    """A fault line's `fault`: what the nemesis did. Controller faults carry their
    own names, so a report tells a controller kill from a broker kill; a leader
    bounce is a pause (SIGSTOP past the session timeout) under its own name. A
    reassignment of a partition's replicas lasts until its `reassign-end`, whose
    detail says whether it was cancelled or had completed."""

    PARTITION = "partition"
    CONTROLLER_PARTITION = "controller-partition"
    ISOLATE_FROM_CONTROLLERS = "isolate-from-controllers"
    HEAL = "heal"
    KILL = "kill"
    CONTROLLER_KILL = "controller-kill"
    STOP = "stop"
    START = "start"
    PAUSE = "pause"
    RESUME = "resume"
    BOUNCE_LEADER = "bounce-leader"
    PAGE_CACHE_LOSS = "page-cache-loss"
    DISK_FAULT = "disk-fault"
    MIN_ISR_CHANGE = "min-isr-change"
    FEATURE_CHANGE = "feature-change"
    SLOW_NETWORK = "slow-network"
    #: Ends a slow network (its own kind: a partition's heal neither removes its
    #: shaping nor ends it, so the two can be in force at once and drawn apart).
    UNTHROTTLE = "unthrottle"
    REASSIGN = "reassign"
    REASSIGN_END = "reassign-end"
    #: A node stops hearing `from` (its detail) while they still hear it; a heal ends it.
    ONE_WAY_PARTITION = "one-way-partition"


#: What each kind means to the contract (which ends which, what counts against the
#: fault budget, what shuts a broker down): core.fault_meanings, one table.

#: The detail key of a line that puts back what an earlier line of its own kind
#: changed (`"restore": true`): such a line ends that change, and nothing else does.
RESTORE = "restore"

#: Kinds a later line of the same kind ends (ENDED_BY maps each to itself): the
#: one with RESTORE in its detail whose detail names the same target under this
#: key (`topic`, null for the cluster default; `feature`). Without RESTORE a line
#: of these kinds begins a change; its `from` and `to` say what it changed.
RESTORED_BY_SELF: dict[Fault, str] = {
    Fault.MIN_ISR_CHANGE: "topic",
    Fault.FEATURE_CHANGE: "feature",
}


def restores(kind: Fault | str, detail: dict | None) -> bool:
    """Whether a fault line of `kind` puts back an earlier change (it ends one)."""
    return kind in RESTORED_BY_SELF and bool((detail or {}).get(RESTORE))


# -- fault details the checker reads (HISTORY.md, "Precise rules") ------------------

#: A disk-fault's detail key: true when unflushed data may have been dropped.
DROPPED = "dropped"
#: A min-isr-change's detail keys: the topic (null: the cluster default), the
#: min.insync.replicas before and after.
CHANGED_TOPIC, CHANGED_FROM, CHANGED_TO = "topic", "from", "to"
#: A feature-change's detail key naming the feature (with CHANGED_FROM/CHANGED_TO
#: its levels), and the feature whose level 0 turns KIP-966 off.
CHANGED_FEATURE = "feature"
ELR_FEATURE = "eligible.leader.replicas.version"

# -- values no cluster can report (HISTORY.md, first section: malformed) --------------

#: Fields that hold an offset (or a high watermark, a log end offset): never
#: negative. A record's offset and a seek's or a poll's high watermarks' values
#: count too (checker/lines.py says where each sits).
OFFSET_FIELDS = ("offset", "high_watermark", "log_end_offset")
#: Lowest values a cluster can report: a min ISR of at least 1, a feature level of
#: at least 0.
MIN_ISR_LOWEST, FEATURE_LEVEL_LOWEST = 1, 0
#: Broker id fields: none below 0, except these, which may hold -1 (no leader; a
#: last known ELR that names none).
BROKER_ID_FIELDS = ("leader", "isr", "elr", "last_known_elr", "fenced", "replicas", "broker")
MAY_HOLD_MINUS_ONE = ("leader", "last_known_elr")


class DetailType(StrEnum):
    """The type of a documented key of a fault's `detail`."""

    TEXT = "string"
    TEXT_OR_NULL = "string or null"
    INT = "int"
    BOOL = "true or false"
    TEXT_LIST = "list of strings"


#: The fault kinds whose `detail` the contract documents, and its keys: each line
#: of such a kind (invoke and completion alike) must carry them with these types,
#: or it is malformed (it would otherwise fall out of the fault budget unseen). A
#: key's lowest value, where it has one, is in DETAIL_LOWEST.
FAULT_DETAILS: dict[str, tuple[tuple[str, DetailType], ...]] = {
    Fault.MIN_ISR_CHANGE: (("topic", DetailType.TEXT_OR_NULL), ("from", DetailType.INT),
                           ("to", DetailType.INT)),
    Fault.FEATURE_CHANGE: (("feature", DetailType.TEXT), ("from", DetailType.INT),
                           ("to", DetailType.INT)),
    Fault.DISK_FAULT: (("dropped", DetailType.BOOL),),
    Fault.REASSIGN: (("topic", DetailType.TEXT), ("partition", DetailType.INT)),
    Fault.ONE_WAY_PARTITION: (("from", DetailType.TEXT_LIST),),
}
#: (kind, key) -> the lowest value a cluster can report there.
DETAIL_LOWEST: dict[tuple[str, str], int] = {
    (Fault.MIN_ISR_CHANGE, "from"): MIN_ISR_LOWEST, (Fault.MIN_ISR_CHANGE, "to"): MIN_ISR_LOWEST,
    (Fault.FEATURE_CHANGE, "from"): FEATURE_LEVEL_LOWEST,
    (Fault.FEATURE_CHANGE, "to"): FEATURE_LEVEL_LOWEST,
}

# -- KIP-966 state coverage (results.json's `coverage`) ------------------------------

#: The states a run may drive a partition into, in the order a report lists them
#: (docs/CHECKING.md, KIP-966 state coverage): the checker counts them, the report
#: and the soak show them, a guided schedule aims at them.
COVERAGE_STATES = (
    "isr-below-min-isr",
    "elr-not-empty",
    "leaderless-with-elr",
    "elected-from-elr",
    "last-known-elr-not-empty",
    "unclean-shutdown-of-elr-member",
    "leaderless-with-unclean-replica-unfenced",
    "min-isr-change-with-elr",
    "controller-failover-with-elr",
    "reassign-while-below-min-isr",
    "disk-fault-of-isr-or-elr-member",
    "elr-feature-change-with-elr",
    "elr-feature-change-while-leaderless",
)

#: Kafka's internal topics of transactions and consumer groups, as observe lines
#: name them.
TRANSACTION_STATE_TOPIC = "__transaction_state"
CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"
INTERNAL_TOPICS = (CONSUMER_OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC)

#: The states of a run with transactions (contract v4; docs/CHECKING.md,
#: "Transaction states"), listed after COVERAGE_STATES in a run that has a txn line
#: and absent from any other: a v3 history's results stay as they were.
TXN_COVERAGE_STATES = (
    "txn-coordinator-failover-with-open-txn",
    "leader-change-between-commit-and-marker",
    "internal-topic-with-elr",
    "lso-below-hwm-beyond-txn-timeout",
)


def listed_states(named: Iterable[str]) -> list[str]:
    """The order a report or a soak lists coverage states in: every KIP-966 state,
    the transaction states among `named` (a run with transactions lists them), then
    any other a newer checker named, sorted."""
    named = set(named)
    known = {*COVERAGE_STATES, *TXN_COVERAGE_STATES}
    return [*COVERAGE_STATES, *(s for s in TXN_COVERAGE_STATES if s in named),
            *sorted(named - known)]

# -- observe lines ------------------------------------------------------------------

#: An observe line's fields beyond the common ones, in the contract's order; the
#: first four always, the rest only where the cluster could say.
OBSERVE_FIELDS = ("topic", "partition", "leader", "leader_epoch", "isr", "elr",
                  "last_known_elr", "high_watermark", "fenced", "min_isr", "replicas",
                  "elr_feature", "last_stable_offset", "open_txn_offsets", "group_offsets")

# -- transactions (HISTORY.md, "Transactions (v4)") ------------------------------------

#: A poll's `isolation`; absent means READ_UNCOMMITTED.
READ_COMMITTED, READ_UNCOMMITTED = "read_committed", "read_uncommitted"
ISOLATIONS = (READ_COMMITTED, READ_UNCOMMITTED)
#: A txn invoke's `client`: the one whose transactions use KIP-890's protocol when
#: test.json's transaction_version is at least KIP_890_VERSION.
JAVA_CLIENT, LIBRDKAFKA_CLIENT = "java", "librdkafka"
KIP_890_VERSION = 2
#: The protocol in effect for a transaction, as results.json counts txn anomalies
#: by it: Kafka's Java client at transaction.version 2 (KIP-890), or the older one
#: (where KAFKA-17754 can make Kafka commit or abort a later transaction).
KIP_890, PRE_KIP_890 = "kip-890", "pre-kip-890"
PROTOCOLS = (KIP_890, PRE_KIP_890)
#: A txn value's outcome: ok without abort; ok with abort, or fail; info or no completion.
COMMITTED, ABORTED, UNKNOWN = "committed", "aborted", "unknown"


def protocol_of(client: str | None, transaction_version: int | None) -> str:
    """The protocol in effect for a transaction of `client` on a cluster at
    `transaction_version` (test.json's)."""
    return KIP_890 if client == JAVA_CLIENT and (transaction_version or 0) >= KIP_890_VERSION \
        else PRE_KIP_890
