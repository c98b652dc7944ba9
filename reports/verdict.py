"""One reading of results.json's verdict, shared by the report, the index and the summary."""

from __future__ import annotations

from typing import Any


def verdict_of(results: dict[str, Any] | None) -> tuple[str, str]:
    """(css class, word) for a verdict; a run without results.json is 'not checked'."""
    if results is None:
        return "unchecked", "NOT CHECKED"
    valid = results.get("valid")
    if valid is True:
        return "valid", "VALID"
    if valid is False:
        return "invalid", "INVALID"
    return "unknown", "UNKNOWN"


def anomaly_counts(results: dict[str, Any] | None) -> dict[str, int]:
    """Anomaly name -> count, for names results.json lists; bad ones first."""
    if not results:
        return {}
    anomalies = results.get("anomalies")
    if not isinstance(anomalies, dict):
        return {}
    bad = set(results.get("bad_anomaly_types") or [])
    counts: dict[str, int] = {}
    for name in sorted(anomalies, key=lambda n: (n not in bad, str(n))):
        entry = anomalies[name]
        count = entry.get("count") if isinstance(entry, dict) else None
        counts[str(name)] = int(count) if isinstance(count, int) else 0
    return counts
