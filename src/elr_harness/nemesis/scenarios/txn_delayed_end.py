"""A delayed EndTxn or marker (shared/SCENARIOS.md, txn-delayed-end; Jepsen's
Bufstream analysis, KAFKA-17754). C is the transaction coordinator of the run's
first transactional producer (its __transaction_state partition's leader):

    D0  SIGSTOP C for 4 s as transactions commit  -> their requests time out
                                                     (3 s) and are retried
    D1  SIGCONT C, hold 15 s                      -> the stale requests land as
                                                     the next transactions run
    D2  C's links to the other brokers throttled  -> markers and state writes late
    D3  unthrottled                               -> C's partition whole again
    D4  SIGSTOP C past the session timeout        -> fenced: a new coordinator
    D5  SIGCONT C, hold 15 s                      -> the old one meets its stale
                                                     requests

Its steps and needs are data: nemesis/scenario_files/txn-delayed-end.toml (the
txn workload; Kafka's own timeouts, so that D0's freeze keeps C the coordinator).
"""

from __future__ import annotations

from elr_harness.nemesis.scenarios.base import from_file

PACKAGE = from_file(
    "txn-delayed-end",
    help="Jepsen's Bufstream finding on Kafka (KAFKA-17754): the transaction coordinator "
         "frozen, throttled, then frozen past its session as transactions commit; "
         "late EndTxn and markers must commit or abort no later transaction")
