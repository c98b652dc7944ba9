"""ELR guarding __transaction_state (shared/SCENARIOS.md, txn-coordinator-loss):
unclean-last-replica's steps on the __transaction_state partition of the run's
first transactional producer's transactional.id, while its transactions are open
and committing. C is its coordinator (the partition's leader) at the start, A and
B the partition's followers:

    T0  partition A away from every node         -> ISR = {C, B}
    T1  partition B away too                     -> ISR = {C}; ELR on: ELR = {B}
    T2  power loss on C                          -> no leader
    T3  heal the partitions                      -> A and B unfenced
    T4  restart C                                -> ELR on: B leads; off: C leads
    T5  the partition whole, producers running   -> every open transaction ends

Its steps and needs are data: nemesis/scenario_files/txn-coordinator-loss.toml.
"""

from __future__ import annotations

from elr_harness.nemesis.scenarios.base import from_file

PACKAGE = from_file(
    "txn-coordinator-loss",
    help="KIP-966's last replica standing on the transaction coordinator's own "
         "__transaction_state partition, with transactions open and committing; ELR "
         "on loses no committed transaction")
