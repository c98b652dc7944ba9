"""A whole `harness run` as a child process, and its verdict read back: what the
mutation score (soak.score) and the replays (soak.replay) are made of."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from elr_harness.core.files import read_json


def said(cell: dict[str, Any]) -> str:
    """A child run's outcome in words: its verdict, bad anomaly types and time."""
    bad = f" ({', '.join(cell['bad'])})" if cell["bad"] else ""
    return f"{cell['verdict']}{bad}, {cell['seconds']:.0f} s"


def run_child(args: list[str], cell_dir: Path, file_name: str) -> dict[str, Any]:
    """`harness run ARGS` in a child process, its output in cell_dir/<file_name>.log;
    its verdict, bad anomaly types, KIP-966 states reached and the time to its first
    INVALID, read from the run directory it made (verdict "error" when it made none
    with a results.json)."""
    cell_dir.mkdir(parents=True, exist_ok=True)
    marker = cell_dir / f"{file_name}.run-dir"
    log = cell_dir / f"{file_name}.log"
    marker.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "elr_harness.cli", "run", *args,
            "--record-run-dir", str(marker)]
    started = time.monotonic()
    with log.open("w") as out:
        code = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL,
                              env={**os.environ, "COLUMNS": "120"}).returncode
    cell: dict[str, Any] = {"exit": code, "log": str(log),
                            "seconds": round(time.monotonic() - started, 1)}
    run_dir = Path(marker.read_text().strip()) if marker.is_file() else None
    results = run_dir / "results.json" if run_dir else None
    if run_dir is None or results is None or not results.is_file():
        return {**cell, "verdict": "error", "run_dir": str(run_dir) if run_dir else None,
                "bad": [], "states": [], "first_invalid_s": None}
    read = read_json(results, str(results), max_bytes=1 << 30)
    verdict = {True: "valid", False: "invalid"}.get(read.get("valid"), "unknown")
    coverage = read.get("coverage") or {}
    return {**cell, "verdict": verdict, "run_dir": str(run_dir),
            "report": str(run_dir / "report.html"),
            "bad": sorted(read.get("bad_anomaly_types") or []),
            "states": sorted(s for s, seen in coverage.items()
                             if isinstance(seen, dict) and (seen.get("count") or 0) > 0),
            "first_invalid_s": first_invalid_s(run_dir, read) if verdict == "invalid" else None}


def first_invalid_s(run_dir: Path, results: dict[str, Any]) -> float | None:
    """Seconds from the history's first line to the first moment a bad anomaly was
    shown: an example is shown by its last operation (a lost write by the final
    read that misses it, not by its send); the earliest such over every example of
    every bad anomaly (None when no example names an operation)."""
    shown = [max(ops) for name in results.get("bad_anomaly_types") or []
             for example in (results.get("anomalies", {}).get(name, {}).get("examples") or [])
             if (ops := [op for op in (example.get("ops") or []) if isinstance(op, int)])]
    if not shown:
        return None
    first, wanted, start = min(shown), None, None
    with (run_dir / "history.jsonl").open("rb") as history:
        for number, line in enumerate(history):
            if number == 0 or number == first:
                try:
                    stamp = json.loads(line).get("time")
                except ValueError:
                    return None
                if number == 0:
                    start = stamp
                if number == first:
                    wanted = stamp
                    break
    if not isinstance(start, int) or not isinstance(wanted, int):
        return None
    return round((wanted - start) / 1e9, 1)


