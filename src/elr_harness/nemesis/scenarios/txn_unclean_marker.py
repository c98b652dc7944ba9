"""KAFKA-20716: an unclean election drops a COMMIT marker (shared/SCENARIOS.md,
txn-unclean-marker). L leads the first topic's partition 0, which nearly every
transaction writes; A and B are its followers:

    T0  cut A off while transactions commit   -> ISR = {L, B}: markers acked without A
    T1  SIGSTOP B                             -> ISR = {L}; ELR on: ELR = {B}
    T2  power loss on L                       -> no leader; its unflushed log gone
    T3  heal A's cut                          -> ELR off + unclean on: A elected
                                                 without the markers (hanging-txn);
                                                 ELR on: never elected (T3-hold)
    T4  SIGCONT B                             -> ELR on: B elected, markers kept
    T5  restart L                             -> the ISR full again

Its steps and needs are data: nemesis/scenario_files/txn-unclean-marker.toml (the
txn workload, and unclean leader election on exactly when ELR is off).
"""

from __future__ import annotations

from elr_harness.nemesis.scenarios.base import from_file

PACKAGE = from_file(
    "txn-unclean-marker",
    help="KAFKA-20716: a follower cut off while transactions commit, the leader's power "
         "lost; ELR off + unclean election elects it without the commit markers "
         "(hanging-txn), ELR on never does")
