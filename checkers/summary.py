"""The few lines `harness check` prints: the report package's table when it is
there, else a plain one; always where results.json was written."""

from __future__ import annotations

from pathlib import Path


def plain_summary(results: dict, results_path: Path) -> str:
    """A small text table: verdict, reason, anomaly counts, results.json."""
    verdict = {True: "VALID", False: "INVALID"}.get(results.get("valid"), "UNKNOWN")
    bad = set(results.get("bad_anomaly_types") or [])
    rows = [("verdict", verdict), ("reason", str(results.get("reason", "")))]
    for name, entry in sorted((results.get("anomalies") or {}).items()):
        rows.append((name, f"{entry.get('count', 0)} ({'bad' if name in bad else 'reported'})"))
    if not results.get("anomalies"):
        rows.append(("anomalies", "none"))
    rows.append(("results", str(results_path)))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)


def print_results_summary(results: dict, results_path: Path) -> None:
    """Print the verdict summary and where results.json is."""
    try:
        from reports.summary import print_summary
    except ImportError:
        print(plain_summary(results, results_path))
        return
    report = results_path.parent / "report.html"
    print_summary(results, report if report.exists() else None)
    print(f"results: {results_path}")
