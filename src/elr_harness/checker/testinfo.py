"""What the checker needs from test.json, with the documented defaults.

Without test.json every topic is taken as replication factor 3 / min ISR 2
(CheckerConfig), ELR on, producers not idempotent, and a node named
"broker-N" is broker id N. A node test.json's `nodes` lists is a broker only by
its entry (role broker), whatever its name (docs/CHECKING.md, fault budget).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from elr_harness.core.config import CheckerConfig
from elr_harness.core.errors import BadInput
from elr_harness.core.files import read_json

_BROKER_NAME = re.compile(r"broker-(\d+)")


@dataclass(frozen=True)
class TopicInfo:
    partitions: int | None
    replication_factor: int
    min_insync_replicas: int
    #: test.json gives the topic's min.insync.replicas: the harness created the
    #: topic with it, so the topic has its own and the cluster default's is not
    #: in effect for it
    own_min_isr: bool = False
    #: unclean.leader.election.enable as test.json gives it (off when it does not)
    unclean_leader_election: bool = False


@dataclass(frozen=True)
class RunInfo:
    """The parts of test.json the checks use."""

    topics: dict[str, TopicInfo] = field(default_factory=dict)
    default_topic: TopicInfo = TopicInfo(None, 3, 2)
    elr_enabled: bool = True
    idempotent: bool = False
    #: test.json's brokers (role broker) by name
    node_ids: dict[str, int] = field(default_factory=dict)
    #: every node test.json's `nodes` names, brokers or not
    node_names: frozenset[str] = frozenset()
    kafka_version: str | None = None
    seed: int | None = None
    #: contract v4 (test.json's `transactions`): the cluster's transaction.version
    #: (None: not said), and hanging-txn's T in nanoseconds (transaction_timeout_ms +
    #: abort_check_interval_ms + hang_margin_ms; None: not said, so not judged)
    transaction_version: int | None = None
    hang_ns: int | None = None
    #: transaction_timeout_ms in nanoseconds (None: not said): the txn coverage
    #: state lso-below-hwm-beyond-txn-timeout's span
    txn_timeout_ns: int | None = None
    #: test.json's `observer` says `fenced_first` and `same_broker` (contract v4): a
    #: broker listed unfenced was so before its partitions were read, so
    #: elr-member-unclean is judged
    fenced_read_first: bool = False

    def topic(self, name: str) -> TopicInfo:
        return self.topics.get(name, self.default_topic)

    def broker_id(self, node: str) -> int | None:
        """Broker id of a node name: test.json's nodes (None for one that is no
        broker there: a controller named broker-3 is not broker 3), else the N of a
        name that is exactly "broker-N"."""
        if node in self.node_names:
            return self.node_ids.get(node)
        match = _BROKER_NAME.fullmatch(node)
        return int(match.group(1)) if match else None


def read_test_json(path: Path) -> dict | None:
    """test.json as a dict, None when absent; a clear error when unreadable."""
    if not path.exists():
        return None
    # bounded: a FIFO, a huge file or JSON nested 100000 deep is one line, not a hang
    # or a RecursionError
    data = read_json(path, f"{path} is not readable JSON")
    if not isinstance(data, dict):
        raise BadInput(f"{path} must hold a JSON object")
    return data


def parse_test_info(test: dict | None, config: CheckerConfig) -> RunInfo:
    """Interpret a test.json dict (or None) with the contract's defaults."""
    default = TopicInfo(None, config.default_replication_factor,
                        config.default_min_insync_replicas)
    if test is None:
        return RunInfo(default_topic=default)
    try:
        topics = {
            str(name): TopicInfo(
                int(t["partitions"]) if t.get("partitions") is not None else None,
                int(t.get("replication_factor", default.replication_factor)),
                int(t.get("min_insync_replicas", default.min_insync_replicas)),
                t.get("min_insync_replicas") is not None,
                t.get("unclean_leader_election") is True)
            for name, t in (test.get("topics") or {}).items()
        }
        nodes = test.get("nodes") or {}
        # role broker, as the contract's nodes say it: an entry without a role is
        # no broker (the reference checker's reading too)
        node_ids = {str(name): int(n["id"]) for name, n in nodes.items()
                    if isinstance(n, dict) and n.get("id") is not None
                    and n.get("role") == "broker"}
        seed = test.get("seed")
        txn = test.get("transactions") or {}
        version = txn.get("transaction_version")
        parts = [txn.get(k) for k in ("transaction_timeout_ms", "abort_check_interval_ms",
                                      "hang_margin_ms")]
        whole = all(isinstance(p, int) and not isinstance(p, bool) for p in parts)
        observer = test.get("observer")
        reads = observer if isinstance(observer, dict) else {}
        return RunInfo(
            fenced_read_first=reads.get("fenced_first") is True
            and reads.get("same_broker") is True,
            transaction_version=version if isinstance(version, int)
            and not isinstance(version, bool) else None,
            hang_ns=sum(parts) * 1_000_000 if whole else None,
            txn_timeout_ns=parts[0] * 1_000_000 if isinstance(parts[0], int)
            and not isinstance(parts[0], bool) else None,
            topics=topics, default_topic=default,
            elr_enabled=bool(test.get("elr_enabled", True)),
            idempotent=bool(test.get("idempotent_producers", False)),
            node_ids=node_ids, node_names=frozenset(str(name) for name in nodes),
            kafka_version=test.get("kafka_version"),
            seed=int(seed) if seed is not None else None)
    except (AttributeError, KeyError, TypeError, ValueError) as err:
        raise BadInput(f"test.json has an unexpected shape ({err!r}); see docs/FORMATS.md") \
            from err
