"""Benchmark of `harness check`: end to end (Spark start-up included) on
synthetic histories of 10k, 1M and 10M operations and one with anomalies.

    python benchmarks/checker.py [--ops 10000,1000000,10000000] [--dir DIR] [--recheck]

An operation is what shared/HISTORY.md calls one: an invoke and its completion
(two lines), or an observation (one line); the generator is asked for two
lines per operation, which gives slightly more operations than asked (a few
lines are single-line observations). Each row prints both counts.

Histories are generated once into DIR (default: the harness cache) and reused.
Each check runs as a subprocess; its peak RSS is the sum over the process and
all its descendants (python driver + JVM), sampled from /proc every 0.1 s.
The Parquet cache is deleted before each first check, so the JSON parsing is
timed; --recheck also times a second check that reuses it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the synthetic generator lives with the tests

from synthetic import SyntheticSpec, ensure_run_dir, every_anomaly  # noqa: E402

from elr_harness.core.config import cache_dir  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")


def _tree_rss(root: int) -> int:
    """Resident bytes of root and all its descendants."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()
            pid = int(entry.name)
            children.setdefault(int(stat[1]), []).append(pid)
            rss[pid] = int(stat[21]) * PAGE
        except (OSError, ValueError, IndexError):
            continue
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total


#: Lines asked of the generator per operation wanted.
LINES_PER_OP = 2


def count_operations(history: Path) -> tuple[int, int]:
    """(lines, operations): every operation but an observation starts with an invoke."""
    lines = ops = 0
    with open(history, "rb") as f:
        for line in f:
            lines += 1
            ops += b'"type":"invoke"' in line or b'"f":"observe"' in line
    return lines, ops


def timed_check(run_dir: Path) -> dict:
    """Run `harness check run_dir`; wall seconds, peak tree RSS, exit code."""
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "elr_harness.cli", "check", str(run_dir)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env={**os.environ, "ELR_CHECKER_PROFILE": "1"})
    peak = 0
    while proc.poll() is None:
        peak = max(peak, _tree_rss(proc.pid))
        time.sleep(0.1)
    wall = time.monotonic() - started
    output = proc.stdout.read().decode(errors="replace")
    return {"wall_s": wall, "peak_rss_mb": peak / 2**20, "exit": proc.returncode,
            "output": output}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # 10k operations: the fixed cost (JVM start, planning, code generation), which
    # on a shared host also shows how fast the machine was during the run
    parser.add_argument("--ops", default="10000,1000000,10000000")
    parser.add_argument("--anomalies-ops", type=int, default=1_000_000)
    parser.add_argument("--dir", type=Path, default=cache_dir() / "checker-bench")
    parser.add_argument("--recheck", action="store_true")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    runs = [(f"clean-{int(n):,}-ops".replace(",", "_"),
             SyntheticSpec(lines=LINES_PER_OP * int(n), seed=1))
            for n in args.ops.split(",") if n]
    runs.append((f"anomalies-{args.anomalies_ops:,}-ops".replace(",", "_"),
                 every_anomaly(lines=LINES_PER_OP * args.anomalies_ops, seed=2)))
    rows = []
    for name, spec in runs:
        run_dir = ensure_run_dir(args.dir, name, spec)
        lines, ops = count_operations(run_dir / "history.jsonl")
        size_mb = (run_dir / "history.jsonl").stat().st_size / 2**20
        shutil.rmtree(run_dir / "history.parquet", ignore_errors=True)
        attempts = [("first", timed_check(run_dir))]
        if args.recheck:
            attempts.append(("recheck", timed_check(run_dir)))
        for label, r in attempts:
            results = json.loads((run_dir / "results.json").read_text())
            row = {"history": name, "run": label, "ops": ops, "lines": lines,
                   "size_mb": round(size_mb), "wall_s": round(r["wall_s"], 1),
                   "ops_per_s": round(ops / r["wall_s"]),
                   "peak_rss_mb": round(r["peak_rss_mb"]), "exit": r["exit"],
                   "valid": results["valid"],
                   "anomalies": {k: v["count"] for k, v in results["anomalies"].items()}}
            rows.append(row)
            print(json.dumps(row), flush=True)
            phases = [ln for ln in r["output"].splitlines() if ln.startswith("[checker]")]
            print("\n".join("    " + p for p in phases), flush=True)
    print()
    print(f"{'history':<26}{'run':<9}{'ops':>12}{'lines':>12}{'MB':>7}{'wall s':>8}"
          f"{'ops/s':>10}{'peak RSS MB':>13}  verdict")
    for r in rows:
        print(f"{r['history']:<26}{r['run']:<9}{r['ops']:>12,}{r['lines']:>12,}"
              f"{r['size_mb']:>7}{r['wall_s']:>8}{r['ops_per_s']:>10,}{r['peak_rss_mb']:>13}"
              f"  {r['valid']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
