"""The Spark checker against synthetic histories: exact detection of every
anomaly of shared/HISTORY.md, alone and mixed, and nothing on clean histories."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from batched_checks import BatchedChecks
from checker_fixtures import assert_found_exactly, check_synthetic
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from synthetic import Injection, SyntheticSpec

BAD_WHEN_FOUND = ["lost-committed-read", "inconsistent-offset", "aborted-read",
                  "realtime-order", "nonmonotonic-poll", "poll-skip", "garbage-read",
                  "hwm-regression", "elr-invariant"]
pytestmark = pytest.mark.usefixtures("spark")
CHECKS = BatchedChecks()


#: the tests' histories judged in one Spark batch first (batched_checks.py)
_checked_together = CHECKS.fixture("_checked", autouse=True)


def _checked(run_dir: Path, spec: SyntheticSpec, **kwargs):
    return check_synthetic(run_dir, spec, check=CHECKS.check_history, **kwargs)
SLOW = settings(max_examples=3, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


@SLOW
@given(seed=st.integers(0, 10_000), partitions=st.integers(1, 4),
       producers=st.integers(1, 6), consumers=st.integers(1, 3),
       info_rate=st.sampled_from([0.03, 0.3]), fail_rate=st.sampled_from([0.02, 0.2]))
def test_clean_histories_have_no_anomaly(seed, partitions, producers, consumers,
                                         info_rate, fail_rate):
    spec = SyntheticSpec(lines=700, seed=seed, partitions=partitions, producers=producers,
                         consumers=consumers, info_rate=info_rate, fail_rate=fail_rate,
                         retry_rate=0.3, seek_rate=0.1)
    with tempfile.TemporaryDirectory() as tmp:
        results, generated = check_synthetic(Path(tmp), spec)
    assert results["anomalies"] == {}, results["anomalies"]
    assert results["valid"] is True, results["reason"]
    assert results["stats"]["sends_ok"] == generated.sends_ok
    assert results["stats"]["final_reads_complete"] is True
    assert results["stats"]["history_lines"] == generated.lines
    assert all(g["within_budget"] for g in results["guarantee"].values())


@settings(max_examples=4, deadline=None)
@given(name=st.sampled_from(BAD_WHEN_FOUND + ["lost-write", "duplicate"]),
       partition=st.integers(0, 2), at=st.floats(0.2, 0.8), seed=st.integers(0, 1000))
def test_one_planted_anomaly_is_found_exactly(name, partition, at, seed):
    spec = SyntheticSpec(lines=700, seed=seed,
                         injections=(Injection(name, at=at, partition=partition),))
    with tempfile.TemporaryDirectory() as tmp:
        results, generated = check_synthetic(Path(tmp), spec)
    assert results["anomaly_types"] == [name]
    assert_found_exactly(results, generated, name)
    if name == "duplicate":  # producers are not idempotent: reported, not bad
        assert results["bad_anomaly_types"] == [] and results["valid"] is True
    else:
        assert results["bad_anomaly_types"] == [name] and results["valid"] is False


def test_every_anomaly_mixed_in_one_history(tmp_path):
    names = BAD_WHEN_FOUND + ["duplicate"]
    injections = [Injection(n, at=0.1 + 0.07 * i, partition=(0, 2)[i % 2])
                  for i, n in enumerate(names)]
    injections += [Injection("lost-write", at=0.3, partition=0, acks="all"),
                   Injection("lost-write", at=0.5, partition=2, acks="1"),
                   Injection("lost-write", at=0.7, partition=0, acks="0"),
                   Injection("incomplete-final-read", partition=1)]
    spec = SyntheticSpec(lines=3000, seed=11, injections=tuple(injections))
    results, generated = _checked(tmp_path, spec)
    for name in names + ["lost-write"]:
        assert_found_exactly(results, generated, name)
    lost = results["anomalies"]["lost-write"]
    assert lost["by_acks"] == {"all": 1, "1": 1, "0": 1}
    unseen = results["anomalies"]["unseen"]
    assert unseen["by_acks"] == generated.unseen_by_acks
    assert sum(generated.unseen_by_acks.values()) > 0
    assert results["stats"]["incomplete_partitions"] == ["elr-test-1"]
    assert results["bad_anomaly_types"] == sorted(BAD_WHEN_FOUND + ["lost-write"])
    assert results["valid"] is False
    assert "lost-write" in results["reason"]
    sends = results["stats"]["sends_ok"]
    assert results["stats"]["loss_rates"] == {a: (1 / sends[a]) for a in ("all", "1", "0")}


def test_acks_0_and_1_losses_alone_are_reported_not_bad(tmp_path):
    spec = SyntheticSpec(lines=1000, seed=3, injections=(
        Injection("lost-write", at=0.4, partition=1, acks="0"),
        Injection("lost-write", at=0.6, partition=1, acks="1")))
    results, generated = _checked(tmp_path, spec)
    assert_found_exactly(results, generated, "lost-write")
    null_offset = [e for e in results["anomalies"]["lost-write"]["examples"] if e["acks"] == "0"]
    assert null_offset and null_offset[0]["offset"] is None
    assert results["valid"] is True and results["bad_anomaly_types"] == []
    assert "acks=1 lost-write" in results["reason"]


def test_acks_all_loss_beyond_the_fault_budget_is_expected(tmp_path):
    spec = SyntheticSpec(lines=1500, seed=5, fault_every=10**9, injections=(
        Injection("lost-write-beyond-budget", at=0.5, partition=2),))
    results, generated = _checked(tmp_path, spec)
    assert_found_exactly(results, generated, "lost-write")
    assert results["anomalies"]["lost-write"]["by_acks"]["all"] == 1
    assert results["valid"] is True, results["reason"]
    assert results["bad_anomaly_types"] == []
    g = results["guarantee"]["elr-test-2"]
    assert g == {**g, "within_budget": False, "page_cache_losses": 2, "budget": 1,
                 "acks_all_lost": 1}
    assert "beyond the fault budget" in results["reason"]


def test_one_page_cache_loss_per_full_isr_window_stays_within_budget(tmp_path):
    # the fault cycle has one page-cache loss, healed to a full ISR, per round
    spec = SyntheticSpec(lines=3000, seed=8, fault_every=150,
                         injections=(Injection("lost-write", at=0.9, partition=0),))
    results, _ = _checked(tmp_path, spec)
    assert results["stats"]["faults"]["page-cache-loss"] >= 2
    g = results["guarantee"]["elr-test-0"]
    assert g["within_budget"] is True and g["page_cache_losses"] == 1
    assert results["bad_anomaly_types"] == ["lost-write"]


def test_duplicates_are_bad_with_idempotent_producers(tmp_path):
    spec = SyntheticSpec(lines=800, seed=2, idempotent=True,
                         injections=(Injection("duplicate", at=0.5, partition=1),))
    results, generated = _checked(tmp_path, spec)
    assert_found_exactly(results, generated, "duplicate")
    assert results["bad_anomaly_types"] == ["duplicate"] and results["valid"] is False


def test_incomplete_final_read_is_unknown_never_valid(tmp_path):
    spec = SyntheticSpec(lines=800, seed=4, injections=(
        Injection("incomplete-final-read", partition=0),))
    results, generated = _checked(tmp_path, spec)
    assert results["valid"] == "unknown"
    assert results["anomaly_types"] == ["unseen"]
    assert results["anomalies"]["unseen"]["by_acks"] == generated.unseen_by_acks
    assert "final reads incomplete" in results["reason"]
    assert set(results["stats"]["incomplete_partitions"]) == set(
        generated.incomplete_partitions)


def test_without_test_json_defaults_apply(tmp_path):
    spec = SyntheticSpec(lines=800, seed=6, injections=(
        Injection("elr-invariant", at=0.5, partition=1),))
    results, generated = _checked(tmp_path, spec, with_test_json=False)
    assert_found_exactly(results, generated, "elr-invariant")
    assert results["test"] == {"elr_enabled": True, "kafka_version": None, "seed": None}
    assert set(results["guarantee"]) == {"elr-test-0", "elr-test-1", "elr-test-2"}
    assert all(g["budget"] == 1 for g in results["guarantee"].values())
