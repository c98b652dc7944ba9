"""What the Spark checker and the reference checker (tests/reference_checker.py)
must agree on, as two views of one shape, and the assertion that they do.

Used by the property tests (tests/unit/test_checker_vs_reference.py) on random
histories, and by the integration tests on every history real Kafka produced.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from reference_checker import ACKS, ANOMALIES, Reference, reference_check
from reference_txn import TXN_ANOMALIES

_BY_ACKS = ("lost-write", "unseen")
_PAIR_RULES = ("elr-member-dropped", "election-outside-elr", "elr-member-unclean")
_CHECKED = ("sends", "polled_records", "final_records", "observations", "replica_records")


def reference_view(r: Reference) -> dict:
    """What both checkers must agree on, from the reference."""
    return {
        "valid": r.valid,
        "counts": dict(r.counts),
        "by_acks": {name: dict(r.by_acks[name]) for name in _BY_ACKS},
        "bad": sorted(r.bad),
        "truncated_lines": r.truncated_lines,
        "incomplete_partitions": sorted(r.incomplete_partitions),
        "page_cache_losses": dict(sorted(r.page_cache_losses.items())),
        "budgets": dict(sorted(r.budgets.items())),
        "unprotected_losses": dict(sorted(r.unprotected_losses.items())),
        "beyond_budget": sorted(r.beyond_budget),
        "checked": dict(r.checked),
        "isr_churn": {key: [e, s, round(ns / 1e9, 3)]
                      for key, (e, s, ns) in sorted(r.isr_churn.items())},
        "coverage": r.coverage,
        "judged": {name: {"pairs": r.judged.get(name, 0), "found": r.counts[name]}
                   for name in _PAIR_RULES},
        # contract v4
        "by_protocol": {name: r.by_protocol[name] for name in TXN_ANOMALIES
                        if r.counts[name]},
        "transactions": r.transactions,
        "rc_incomplete": sorted(r.rc_incomplete),
    }


def spark_view(results: dict) -> dict:
    """The same from the Spark checker's results.json dict."""
    anomalies = results["anomalies"]
    zero = dict.fromkeys(ACKS, 0)
    guarantee = results["guarantee"]
    return {
        "valid": results["valid"],
        "counts": {name: anomalies.get(name, {}).get("count", 0) for name in ANOMALIES},
        "by_acks": {name: {a: anomalies.get(name, {}).get("by_acks", zero)[a] for a in ACKS}
                    for name in _BY_ACKS},
        "bad": sorted(results["bad_anomaly_types"]),
        "truncated_lines": results["stats"]["truncated_lines"],
        "incomplete_partitions": sorted(results["stats"]["incomplete_partitions"]),
        "page_cache_losses": {key: g["page_cache_losses"] for key, g in sorted(guarantee.items())},
        "budgets": {key: g["budget"] for key, g in sorted(guarantee.items())},
        "unprotected_losses": {key: g["unprotected_losses"]
                               for key, g in sorted(guarantee.items())},
        "beyond_budget": sorted(key for key, g in guarantee.items() if not g["within_budget"]),
        "checked": {name: results["checked"].get(name) for name in _CHECKED},
        "isr_churn": {key: [c["expansions"], c["shrinks"], c["seconds_below"]]
                      for key, c in sorted(results["stats"]["isr_churn_below_min_isr"].items())},
        "coverage": results["coverage"],
        "judged": results["judged"],
        "by_protocol": {name: anomalies[name]["by_protocol"] for name in TXN_ANOMALIES
                        if name in anomalies},
        # absent from a history without transactions or read_committed reads (v3's)
        "transactions": results.get("transactions", []),
        "rc_incomplete": sorted(results["stats"].get("read_committed_incomplete", [])),
    }


def differences(ref: dict, got: dict) -> dict:
    """Only what differs, as {key: {"reference": ..., "spark": ...}} (counts per anomaly)."""
    out = {}
    for key in ref:
        if key == "counts":
            for name in ANOMALIES:
                if ref[key][name] != got[key][name]:
                    out[name] = {"reference": ref[key][name], "spark": got[key][name]}
        elif ref[key] != got[key]:
            out[key] = {"reference": ref[key], "spark": got[key]}
    return out


def assert_reference_agrees(run_dir: Path) -> dict:
    """The reference checker's view of run_dir's history equals the view of the
    results.json the Spark checker wrote there; returns that view."""
    test_file = run_dir / "test.json"
    test = json.loads(test_file.read_text()) if test_file.exists() else None
    ref = reference_view(reference_check(run_dir / "history.jsonl", test))
    got = spark_view(json.loads((run_dir / "results.json").read_text()))
    assert got == ref, f"{run_dir}: " + json.dumps(differences(ref, got), indent=1)
    _note(run_dir, test, ref)
    return ref


#: A file each agreement on a real run's history adds one JSON line to (test.json's
#: test name and Kafka version, the verdict, the pair rules' judged pairs and every
#: anomaly found), when this variable names one: the figures a change to the checker
#: is judged by on real Kafka's histories.
NOTES_ENV = "ELR_AGREEMENT_NOTES"


def _note(run_dir: Path, test: dict | None, view: dict) -> None:
    path = os.environ.get(NOTES_ENV)
    if not path:
        return
    line = {"run_dir": str(run_dir), "nemesis": (test or {}).get("nemesis"),
            "kafka_version": (test or {}).get("kafka_version"),
            "elr_enabled": (test or {}).get("elr_enabled"), "valid": view["valid"],
            "observations": view["checked"]["observations"], "judged": view["judged"],
            "found": {name: n for name, n in view["counts"].items() if n}}
    with open(path, "a") as notes:
        notes.write(json.dumps(line) + "\n")
