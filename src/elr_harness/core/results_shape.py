"""The shape of results.json (the checker writes it: checker/results.py), in the
fields its readers use: the report, a replay and a shrink read a run's verdict
from it, and none of them may show or act on a field of another type. One check,
here below them all."""

from __future__ import annotations

from typing import Any


def results_shape_problem(results: dict[str, Any]) -> str | None:
    """Why a results.json is not of the shape the checker writes (checker/results.py),
    in the fields the report reads, or None: a report must not show VALID, UNKNOWN or
    a count it made up from a field of another type."""
    def uncounted(field: str) -> str | None:
        """Why results[field] is not an object of entries each with a count (absent:
        none), or None."""
        table = results.get(field, {})
        if not isinstance(table, dict):
            return f"`{field}` is not an object"
        for name, entry in table.items():
            number = entry.get("count", 0) if isinstance(entry, dict) else None
            if not isinstance(number, int) or isinstance(number, bool) or number < 0:
                return f"`{field}.{str(name)[:60]}` has no count of 0 or more"
        return None

    valid = results.get("valid")
    if not (valid is True or valid is False or valid == "unknown"):
        return f"`valid` is {str(valid)[:40]!r}, not true, false or \"unknown\" " \
               "(docs/FORMATS.md)"
    if not isinstance(results.get("reason", ""), str):
        return "`reason` is not text"
    # a field an older harness's results.json lacks is no problem; one of another type is
    problem = uncounted("anomalies") or uncounted("coverage")
    if problem is not None:
        return problem
    for field in ("bad_anomaly_types", "anomaly_types"):
        names = results.get(field, [])
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return f"`{field}` is not a list of anomaly names"
    for field in ("stats", "checked", "guarantee", "judged"):
        if not isinstance(results.get(field, {}), dict):
            return f"`{field}` is not an object"
    if not isinstance(results.get("transactions", []), list):
        return "`transactions` is not a list"
    return None
