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


def count_label(results: dict[str, Any], name: str) -> str:
    """"4 (2 bad)", "3 (bad)" or "5 (reported)": an anomaly's count and how much of
    it is bad, as results.json says (its entry's `bad`, else bad_anomaly_types)."""
    entry = (results.get("anomalies") or {}).get(name) or {}
    count = entry.get("count", 0) if isinstance(entry, dict) else 0
    bad = entry.get("bad") if isinstance(entry, dict) else None
    if not isinstance(bad, int):
        bad = count if name in set(results.get("bad_anomaly_types") or []) else 0
    if bad == 0:
        return f"{count} (reported)"
    return f"{count} (bad)" if bad >= count else f"{count} ({bad} bad)"


def checked_line(results: dict[str, Any]) -> str | None:
    """"checked 1,234 sends, 5,678 polled records, ...": what the checker proved it
    read (results.json's `checked`), None for results without it."""
    checked = results.get("checked")
    if not isinstance(checked, dict) or not checked:
        return None
    words = (("sends", "sends"), ("polled_records", "polled records"),
             ("final_records", "final records"), ("observations", "observations"),
             ("replica_records", "replica records"))
    parts = [f"{checked[key]:,} {label}" for key, label in words
             if isinstance(checked.get(key), int) and (checked[key] or key != "replica_records")]
    return "checked " + ", ".join(parts)
