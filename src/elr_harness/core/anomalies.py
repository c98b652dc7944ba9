"""The anomalies of the history contract (shared/HISTORY.md's table), in one table.

Each anomaly's name, when it is bad, what it means in one line, and its anchor in
docs/CHECKING.md. The checker names what it finds by these constants and judges
the verdict by `bad`; results.json, the report, the soak's summaries and
docs/CHECKING.md (a test holds the page to this table) read the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

LOST_WRITE = "lost-write"
LOST_COMMITTED_READ = "lost-committed-read"
INCONSISTENT_OFFSET = "inconsistent-offset"
DUPLICATE = "duplicate"
ABORTED_READ = "aborted-read"
REALTIME_ORDER = "realtime-order"
NONMONOTONIC_POLL = "nonmonotonic-poll"
POLL_SKIP = "poll-skip"
GARBAGE_READ = "garbage-read"
HWM_REGRESSION = "hwm-regression"
ELR_INVARIANT = "elr-invariant"
ELR_OUTSIDE_REPLICAS = "elr-outside-replicas"
ELR_MEMBER_DROPPED = "elr-member-dropped"
ELECTION_OUTSIDE_ELR = "election-outside-elr"
ELR_MEMBER_UNCLEAN = "elr-member-unclean"
ELR_WHILE_DISABLED = "elr-while-disabled"
FENCED_LEADER = "fenced-leader"
LAST_KNOWN_ELR_INVALID = "last-known-elr-invalid"
REPLICA_DIVERGENCE = "replica-divergence"
UNSEEN = "unseen"
TXN_ABORTED_READ = "txn-aborted-read"
TXN_LOST_WRITE = "txn-lost-write"
TXN_TORN = "txn-torn"
TXN_PRECOMMITTED_READ = "txn-precommitted-read"
HANGING_TXN = "hanging-txn"


class Bad(StrEnum):
    """When an anomaly makes the verdict invalid."""

    ALWAYS = "always"
    #: an acks=all write of a partition within KIP-966's fault budget
    ACKS_ALL_WITHIN_BUDGET = "acks=all within the fault budget"
    #: only with idempotent producers
    IDEMPOTENT = "with idempotent producers"
    #: never: it makes a verdict unknown (acks=all), not invalid
    NEVER = "never (unknown)"
    #: a partition within the fault budget whose topic has unclean leader election off
    #: (a transaction's value counts as acks=all)
    TXN_WITHIN_BUDGET = "within the fault budget, unclean leader election off"


@dataclass(frozen=True)
class Anomaly:
    name: str
    bad: Bad
    #: what it means, in one line (the report and CHECKING.md show it)
    meaning: str
    #: counted by acks level and partition (results.json's by_acks, by_partition)
    by_acks: bool = False

    @property
    def anchor(self) -> str:
        """Its anchor in docs/CHECKING.md ("Anomalies at a glance")."""
        return f"anomaly-{self.name}"


#: Every anomaly of the contract's table, in its order.
ANOMALIES: tuple[Anomaly, ...] = (
    Anomaly(LOST_WRITE, Bad.ACKS_ALL_WITHIN_BUDGET,
            "an acknowledged write is absent from its partition's final log", by_acks=True),
    Anomaly(LOST_COMMITTED_READ, Bad.ALWAYS,
            "a value a consumer read is gone from the final log, or at another offset"),
    Anomaly(INCONSISTENT_OFFSET, Bad.ALWAYS,
            "one partition offset holds two different values across acked sends and polls"),
    Anomaly(DUPLICATE, Bad.IDEMPOTENT, "one value at more than one offset of the final log"),
    Anomaly(ABORTED_READ, Bad.ALWAYS, "a poll returned a value whose send failed"),
    Anomaly(REALTIME_ORDER, Bad.ALWAYS,
            "a write acknowledged before another was sent sits at a higher offset"),
    Anomaly(NONMONOTONIC_POLL, Bad.ALWAYS,
            "a consumer's poll went back to an offset it had already passed"),
    Anomaly(POLL_SKIP, Bad.ALWAYS,
            "a consumer's poll jumped over offsets the final log holds"),
    Anomaly(GARBAGE_READ, Bad.ALWAYS, "a polled record holds a value this run never wrote"),
    Anomaly(HWM_REGRESSION, Bad.ALWAYS,
            "a partition's observed high watermark went down"),
    Anomaly(ELR_INVARIANT, Bad.ALWAYS,
            "ELR and ISR overlap, or ELR or LastKnownELR is kept with the ISR at min ISR"),
    Anomaly(ELR_OUTSIDE_REPLICAS, Bad.ALWAYS,
            "ELR or LastKnownELR names a broker that is no replica of the partition"),
    Anomaly(ELR_MEMBER_DROPPED, Bad.ALWAYS,
            "ISR + ELR fell below min ISR without an unclean shutdown of the broker that left"),
    Anomaly(ELECTION_OUTSIDE_ELR, Bad.ALWAYS,
            "a leaderless partition's new leader came from outside its ELR, while a member "
            "of it had no unclean shutdown"),
    Anomaly(ELR_MEMBER_UNCLEAN, Bad.ALWAYS,
            "a broker started again after an unclean shutdown is unfenced and still in "
            "an ELR"),
    Anomaly(ELR_WHILE_DISABLED, Bad.ALWAYS,
            "ELR or LastKnownELR kept after a partition change with the ELR feature off"),
    Anomaly(FENCED_LEADER, Bad.ALWAYS, "a partition's leader is a fenced broker"),
    Anomaly(LAST_KNOWN_ELR_INVALID, Bad.ALWAYS,
            "a leaderless partition's LastKnownELR names no broker of the cluster"),
    Anomaly(REPLICA_DIVERGENCE, Bad.ALWAYS,
            "two replicas hold different records below their high watermarks"),
    Anomaly(UNSEEN, Bad.NEVER,
            "an acknowledged write is absent from a final read that was incomplete",
            by_acks=True),
    Anomaly(TXN_ABORTED_READ, Bad.ALWAYS,
            "a read_committed poll returned a value of an aborted transaction"),
    Anomaly(TXN_LOST_WRITE, Bad.TXN_WITHIN_BUDGET,
            "a committed transaction's value is gone from the log, or hidden from "
            "read_committed readers"),
    Anomaly(TXN_TORN, Bad.TXN_WITHIN_BUDGET,
            "an unknown transaction is partly committed: some of its values are read "
            "committed, some are not"),
    Anomaly(TXN_PRECOMMITTED_READ, Bad.ALWAYS,
            "a read_committed poll returned a transaction's value before its commit was "
            "called"),
    Anomaly(HANGING_TXN, Bad.TXN_WITHIN_BUDGET,
            "a partition's last stable offset stayed below its high watermark past the "
            "transaction timeout"),
)

BY_NAME: dict[str, Anomaly] = {a.name: a for a in ANOMALIES}
NAMES: tuple[str, ...] = tuple(a.name for a in ANOMALIES)
#: Bad whenever found (lost-write and duplicate have conditions, unseen never is).
ALWAYS_BAD: tuple[str, ...] = tuple(a.name for a in ANOMALIES if a.bad is Bad.ALWAYS)
#: Counted by acks level (and partition) in results.json.
BY_ACKS: tuple[str, ...] = tuple(a.name for a in ANOMALIES if a.by_acks)
#: Bad within the fault budget where the topic's unclean leader election is off.
TXN_BUDGETED: tuple[str, ...] = tuple(a.name for a in ANOMALIES
                                      if a.bad is Bad.TXN_WITHIN_BUDGET)
#: The transactions' anomalies (contract v4), counted by protocol in results.json.
TXN_ANOMALIES: tuple[str, ...] = (TXN_ABORTED_READ, TXN_LOST_WRITE, TXN_TORN,
                                  TXN_PRECOMMITTED_READ, HANGING_TXN)
