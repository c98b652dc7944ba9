"""The verdict rules of shared/HISTORY.md on small inputs (no Spark)."""

from __future__ import annotations

from collections import Counter

from elr_harness.checker.results import Findings, PartitionFacts, assemble
from elr_harness.checker.testinfo import parse_test_info
from elr_harness.core.config import CheckerConfig

INFO = parse_test_info(None, CheckerConfig())


def _findings(counts: dict, partitions: dict | None = None, **kw) -> Findings:
    parts = partitions if partitions is not None else {
        ("t", 0): PartitionFacts(True, 10), ("t", 1): PartitionFacts(True, 11)}
    defaults = {"history_lines": 100, "any_final_reads": True,
                "ops": {"send": {"ok": {"all": 10, "1": 5, "0": 4}}}}
    defaults.update(kw)
    return Findings(counts=Counter(counts), examples={}, partitions=parts, **defaults)


def test_clean_is_valid():
    results = assemble(_findings({}), INFO, 1.0)
    assert results["valid"] is True and results["anomaly_types"] == []
    assert results["stats"]["loss_rates"] == {"all": 0.0, "1": 0.0, "0": 0.0}
    assert results["guarantee"]["t-0"]["within_budget"] is True


def test_acks_all_loss_within_budget_is_bad_and_acks_1_loss_is_not():
    results = assemble(_findings({("lost-write", "all", "t", 0): 2,
                                  ("lost-write", "1", "t", 1): 1}), INFO, 1.0)
    assert results["valid"] is False and results["bad_anomaly_types"] == ["lost-write"]
    assert results["anomalies"]["lost-write"]["by_acks"] == {"all": 2, "1": 1, "0": 0}
    assert results["stats"]["loss_rates"] == {"all": 0.2, "1": 0.2, "0": 0.0}
    assert results["guarantee"]["t-0"]["acks_all_lost"] == 2


def test_acks_all_loss_beyond_budget_is_expected():
    parts = {("t", 0): PartitionFacts(True, 10, page_cache_losses=2),
             ("t", 1): PartitionFacts(True, 11, page_cache_losses=1)}
    results = assemble(_findings({("lost-write", "all", "t", 0): 3}, parts), INFO, 1.0)
    assert results["valid"] is True and results["bad_anomaly_types"] == []
    assert results["guarantee"]["t-0"]["within_budget"] is False
    assert results["guarantee"]["t-1"]["within_budget"] is True
    # the same loss on the partition still within its budget is a violation
    results = assemble(_findings({("lost-write", "all", "t", 1): 1}, parts), INFO, 1.0)
    assert results["valid"] is False


def test_a_lowered_min_isr_or_the_elr_feature_off_spares_an_acks_all_loss():
    """The budget is the window's lowest min ISR - 1 (not test.json's), and a loss
    while the ELR feature was off is beyond it whatever the count."""
    parts = {("t", 0): PartitionFacts(True, 10, page_cache_losses=1, min_insync_replicas=1),
             ("t", 1): PartitionFacts(True, 11, page_cache_losses=1, unprotected_losses=1)}
    lost = {("lost-write", "all", "t", 0): 1, ("lost-write", "all", "t", 1): 1}
    results = assemble(_findings(lost, parts), INFO, 1.0)
    assert results["valid"] is True and results["bad_anomaly_types"] == []
    lowered, off = results["guarantee"]["t-0"], results["guarantee"]["t-1"]
    assert (lowered["within_budget"], lowered["budget"], lowered["min_insync_replicas"]) == (
        False, 0, 1)
    assert "min ISR 1 in effect at its lowest, not 2" in lowered["reason"]
    assert (off["within_budget"], off["budget"], off["unprotected_losses"]) == (False, 1, 1)
    assert "ELR feature was off" in off["reason"]
    # neither: test.json's min ISR 2, budget 1, the loss is a violation
    results = assemble(_findings(lost, {("t", 0): PartitionFacts(True, 10, page_cache_losses=1)}),
                       INFO, 1.0)
    assert results["valid"] is False
    assert results["guarantee"]["t-0"]["min_insync_replicas"] == 2


def test_duplicates_are_bad_only_with_idempotent_producers():
    counts = {("duplicate", "1", "t", 0): 1}
    assert assemble(_findings(counts), INFO, 1.0)["valid"] is True
    idempotent = parse_test_info({"idempotent_producers": True}, CheckerConfig())
    results = assemble(_findings(counts), idempotent, 1.0)
    assert results["valid"] is False and results["bad_anomaly_types"] == ["duplicate"]


def test_unknown_cases():
    incomplete = {("t", 0): PartitionFacts(False, None), ("t", 1): PartitionFacts(True, 3)}
    results = assemble(_findings({("unseen", "all", "t", 0): 4}, incomplete), INFO, 1.0)
    assert results["valid"] == "unknown" and results["bad_anomaly_types"] == []
    assert results["stats"]["incomplete_partitions"] == ["t-0"]
    assert "unseen" not in results["bad_anomaly_types"]
    assert assemble(_findings({}, truncated_lines=1), INFO, 1.0)["valid"] == "unknown"
    assert assemble(_findings({}, any_final_reads=False), INFO, 1.0)["valid"] == "unknown"
    empty = assemble(_findings({}, {}, history_lines=0), INFO, 1.0)
    assert empty["valid"] == "unknown" and "empty" in empty["reason"]


def test_bad_beats_unknown():
    incomplete = {("t", 0): PartitionFacts(False, None)}
    results = assemble(_findings({("garbage-read", None, "t", 0): 1}, incomplete,
                                 truncated_lines=1), INFO, 1.0)
    assert results["valid"] is False and results["bad_anomaly_types"] == ["garbage-read"]


def test_test_json_sets_budget_and_broker_ids():
    info = parse_test_info({"topics": {"t": {"partitions": 2, "replication_factor": 5,
                                       "min_insync_replicas": 3}},
                      "nodes": {"broker-a": {"role": "broker", "id": 7},
                                "controller-1": {"role": "controller", "id": 1001}},
                      "seed": 9, "kafka_version": "4.1.1", "elr_enabled": False}, CheckerConfig())
    assert info.broker_id("broker-a") == 7 and info.broker_id("broker-2") == 2
    assert info.broker_id("controller-1") is None
    results = assemble(_findings({}), info, 1.0)
    assert results["guarantee"]["t-0"]["budget"] == 2
    assert results["test"] == {"elr_enabled": False, "kafka_version": "4.1.1", "seed": 9}


def test_a_node_test_json_lists_is_a_broker_only_by_its_entry():
    """docs/CHECKING.md: "a node is a broker by test.json's `nodes` (role broker),
    else by a name `broker-N`": a controller named broker-3 is no broker, a listed
    node without a role neither, and only a name that is exactly broker-N is N."""
    info = parse_test_info({"nodes": {"kafka-a": {"role": "broker", "id": 1},
                                      "broker-3": {"role": "controller", "id": 3},
                                      "broker-4": {"id": 4}}}, CheckerConfig())
    assert info.broker_id("kafka-a") == 1 and info.broker_id("broker-3") is None
    assert info.broker_id("broker-4") is None and info.broker_id("broker-5") == 5
    assert info.broker_id("old-broker-6") is None and info.broker_id("broker-7x") is None


def _summary_text(results: dict, report) -> str:
    from rich.console import Console

    from elr_harness.report.summary import summary_table

    console = Console(width=200, record=True)
    console.print(summary_table(results, report))
    return console.export_text()


def test_summary_names_verdict_anomalies_how_many_are_bad_and_the_report(tmp_path):
    counts = {("poll-skip", None, "t", 1): 2, ("lost-write", "all", "t", 0): 2,
              ("lost-write", "1", "t", 0): 2, ("duplicate", None, "t", 0): 1}
    results = assemble(_findings(counts, checked={"sends": 9, "polled_records": 4,
                                                  "final_records": 8, "observations": 3,
                                                  "replica_records": 0}), INFO, 1.0)
    assert results["anomalies"]["lost-write"]["bad"] == 2
    assert results["anomalies"]["duplicate"]["bad"] == 0
    text = _summary_text(results, tmp_path / "report.html")
    assert "INVALID" in text and str(tmp_path / "report.html") in text
    assert "poll-skip" in text and "2 (bad)" in text
    assert "lost-write" in text and "4 (2 bad)" in text
    assert "1 (reported)" in text
    assert "checked 9 sends, 4 polled records, 8 final records, 3 observations" in text
