"""One finished soak run as soak.json records it: read back from its run
directory (test.json, results.json), never re-derived, then trimmed by --keep."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from elr_harness.core.anomalies import LOST_WRITE
from elr_harness.core.config import SoakConfig
from elr_harness.core.errors import BadInput
from elr_harness.core.files import read_json, read_text
from elr_harness.core.history import listed_states

if TYPE_CHECKING:  # soak_cli imports KEEP_CHOICES: the plan's imports stay out of startup
    from elr_harness.soak.plan import PlannedRun

#: What a valid run keeps under --keep failing (the evidence of its verdict).
VERDICT_FILES = ("test.json", "results.json", "report.html")
#: --keep's choices; soak_cli's flag and soak.json's check both use this one.
KEEP_CHOICES = ("all", "no-cache", "failing")
#: The name of the file a run writes its run directory's path to.
MARKER_NAME = re.compile(r"[0-9]{4,9}\.run-dir")
#: Longest marker read: one path.
_MARKER_BYTES = 8192


def run_record(planned: PlannedRun, exit_code: int, marker: Path, log_path: Path,
               seconds: float, config: SoakConfig,
               store: Path | None = None) -> dict[str, Any]:
    """The record of a finished run; its run directory counts only inside `store`
    (--keep deletes in it, so a marker naming /etc must not lead there)."""
    run_dir = run_dir_from_marker(marker, store)
    test = _json(run_dir / "test.json") if run_dir else None
    results = _json(run_dir / "results.json") if run_dir else None
    record: dict[str, Any] = {
        "index": planned.index, "entry": planned.entry.name, "seed": planned.seed,
        "kafka_version_requested": planned.kafka_version,
        "kafka_version": _text((test or {}).get("kafka_version")),
        "exit_code": exit_code, "duration_s": seconds,
        "run_dir": str(run_dir) if run_dir else None,
        "log": str(log_path),
        "reproduce": _text((test or {}).get("reproduce")) or planned.command(),
    }
    record.update(_outcome(exit_code, test, results, log_path))
    if run_dir is not None:
        record["kept"] = keep(run_dir, config.keep, record["status"])
        record["disk_bytes"] = _size(run_dir)
        if (run_dir / "report.html").is_file():
            record["report"] = str(run_dir / "report.html")
    return record


def recorded_whole(run_dir: Path) -> bool:
    """The run was recorded to its end, so `harness run` would have checked it:
    test.json says it ended, neither interrupted nor failed, and its history is
    there. Any other run is recorded from its test.json alone."""
    test = _json(run_dir / "test.json")
    return test is not None and bool(test.get("ended_at")) and not test.get("interrupted") \
        and not test.get("error") and (run_dir / "history.jsonl").is_file()


def _outcome(exit_code: int, test: dict | None, results: dict | None,
             log_path: Path) -> dict[str, Any]:
    """status (valid, invalid, unknown, error, interrupted) and what it rests on."""
    if test is not None and test.get("interrupted"):
        return {"status": "interrupted", "reason": "the run was interrupted"}
    if test is not None and test.get("error"):
        return {"status": "error", "error": _text(test["error"], 500)}
    if results is None:
        return {"status": "error", "error": _text(_last_line(log_path), 500) or
                f"the run exited {exit_code} without results"}
    anomalies = {str(name): a for name, a in _dict(results.get("anomalies")).items()
                 if isinstance(a, dict)}
    record: dict[str, Any] = {
        "reason": _text(results.get("reason")),
        "anomalies": {name: _count(a.get("count")) for name, a in anomalies.items()},
        "bad_anomalies": {name: _count(a.get("bad")) for name, a in anomalies.items()
                          if _count(a.get("bad"))},
        "lost_write_by_acks": {str(acks): _count(n) for acks, n in _dict(
            _dict(anomalies.get(LOST_WRITE)).get("by_acks")).items()},
        # the KIP-966 states it reached, as its checker counted them
        "coverage": {str(state): _count(_dict(entry).get("count"))
                     for state, entry in _dict(results.get("coverage")).items()},
    }
    valid = results.get("valid")
    record["status"] = "valid" if valid is True else "invalid" if valid is False else "unknown"
    return record


def _text(value: Any, limit: int = 2000) -> str | None:
    """A field of the run's JSON as soak.json's check wants it: text, no NUL or
    lone surrogate, or None."""
    if value is None:
        return None
    text = str(value)[:limit].replace("\x00", "\\x00")
    return text.encode("utf-8", "replace").decode("utf-8")


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def keep(run_dir: Path, policy: str, status: str) -> str:
    """Trim a finished run by policy; an invalid or unknown run always keeps all."""
    if policy == "all" or status != "valid":
        return "all"
    cache = run_dir / "history.parquet"
    if cache.is_dir():
        shutil.rmtree(cache, ignore_errors=True)
    else:
        cache.unlink(missing_ok=True)
    if policy == "no-cache":
        return "all but the Parquet cache"
    for item in run_dir.iterdir():
        if item.name in VERDICT_FILES:
            continue
        if item.is_dir() and not item.is_symlink():
            shutil.rmtree(item, ignore_errors=True)
        else:
            item.unlink(missing_ok=True)
    return ", ".join(VERDICT_FILES)


def run_dir_from_marker(marker: Path, store: Path | None) -> Path | None:
    """The run directory a marker names, when it is a folder inside the store
    (resolved, so no symlink or `..` leads out); None otherwise."""
    try:
        if not marker.is_file() or marker.is_symlink():
            return None
        text = read_text(marker, "marker", _MARKER_BYTES).strip()
        if not text or "\x00" in text:
            return None
        run_dir = Path(text)
        if not run_dir.is_absolute() or not run_dir.is_dir():
            return None
        if store is not None and not _a_run_of(run_dir.resolve(), store.resolve()):
            return None
    except (BadInput, OSError, ValueError):
        return None
    return run_dir


def _a_run_of(real: Path, store: Path) -> bool:
    """Below the store, and neither the store itself nor its soaks' folder."""
    return real.is_relative_to(store) and real != store and \
        not real.is_relative_to(store / "soak")


def _json(path: Path) -> dict | None:
    try:
        data = read_json(path, path.name)
    except BadInput:
        return None
    return data if isinstance(data, dict) else None


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def _last_line(log_path: Path) -> str | None:
    """The child's last words: `harness: ...` when it refused or failed early."""
    try:
        lines = [line.strip() for line in log_path.read_text(errors="replace").splitlines()
                 if line.strip()]
    except OSError:
        return None
    said = [line for line in lines if line.startswith("harness:")]
    return (said or lines or [None])[-1]


def soak_coverage(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The soak's KIP-966 state coverage from its runs' records: per state of the
    contract's list (then any other a run named), the runs that reached it (their
    indices) and the times it was reached in all; and the states no run reached.
    Only runs that were checked count (a run without `coverage` says nothing)."""
    checked = [r for r in runs if isinstance(r.get("coverage"), dict)]
    states: dict[str, Any] = {}
    for state in listed_states(s for r in checked for s in r["coverage"]):
        reached = [r for r in checked if _count(r["coverage"].get(state))]
        states[state] = {"runs": [r["index"] for r in reached],
                         "count": sum(_count(r["coverage"].get(state)) for r in reached)}
    return {"checked_runs": len(checked), "states": states,
            "unreached": [s for s, v in states.items() if not v["runs"]]}
