"""Time to verdict of the main scenario, phase by phase, and a soak's runs per hour.

    python benchmarks/run_phases.py [--runs 5] [--workdir DIR] [--kafka-version latest]
        [--soak-minutes 20] [--elr on]
    python benchmarks/run_phases.py --summarize STORE

Runs `harness run --nemesis unclean-last-replica` --runs times, as the README
types it (warm: the image and the jars are cached by the first), each in the
store under the working directory, and prints every phase's median, min and max
(test.json's phases, the check's time from results.json) and the whole command's
wall time to its verdict, with each run's verdict. With --soak-minutes, then
runs a soak of that scenario alone for that long and prints its runs per hour.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

#: The environment's console script: the README's `harness`.
HARNESS = str(Path(sys.executable).with_name("harness"))
SCENARIO = ["--nemesis", "unclean-last-replica"]


def one_run(workdir: Path, version: str, elr: str) -> dict:
    """One run as a user types it: its wall time, exit code and run directory."""
    started = time.monotonic()
    proc = subprocess.run([HARNESS, "run", *SCENARIO, "--kafka-version", version,
                           "--elr", elr], cwd=workdir, capture_output=True, text=True)
    wall = time.monotonic() - started
    return {"wall_s": wall, "exit": proc.returncode,
            "run_dir": (workdir / "store" / "latest").resolve()}


def phase_times(run_dir: Path) -> dict[str, float]:
    """name -> seconds: test.json's phases, then the check (results.json)."""
    test = json.loads((run_dir / "test.json").read_text())
    phases = test.get("phases")
    times = {p["name"]: p["duration_s"] for p in phases} if isinstance(phases, list) else {}
    results = run_dir / "results.json"
    if results.exists():
        times["check"] = json.loads(results.read_text())["stats"]["checker_seconds"]
    return times


def table(rows: list[dict]) -> str:
    names: list[str] = []
    for row in rows:
        names += [n for n in row["phases"] if n not in names]
    lines = ["| phase | median s | min s | max s |", "|---|---|---|---|"]
    for name in [*names, "time to verdict (wall)"]:
        values = [r["wall_s"] if name.startswith("time to verdict") else r["phases"].get(name)
                  for r in rows]
        values = [v for v in values if v is not None]
        if values:
            lines.append(f"| {name} | {statistics.median(values):.1f} | {min(values):.1f} | "
                         f"{max(values):.1f} |")
    lines.append("")
    lines += [f"run {i + 1}: exit {r['exit']}, {r['wall_s']:.1f} s, {r['run_dir']}"
              for i, r in enumerate(rows)]
    return "\n".join(lines)


def soak_rate(workdir: Path, minutes: float, version: str) -> str:
    plan = workdir / "plan.toml"
    plan.write_text('[[entry]]\nname = "unclean-last-replica"\n'
                    f"args = {json.dumps(SCENARIO)}\n")
    subprocess.run([HARNESS, "soak", "--plan", str(plan), "--duration", f"{minutes}m",
                    "--kafka-version", version, "--store", "soak-store"], cwd=workdir,
                   capture_output=True, text=True)
    soak = sorted((workdir / "soak-store" / "soak").iterdir())[-1]
    state = json.loads((soak / "soak.json").read_text())
    runs, used_s = len(state["runs"]), state["used_s"]
    statuses = [r["status"] for r in state["runs"]]
    return (f"soak of {minutes:g} min: {runs} runs in {used_s / 60:.1f} min = "
            f"{runs / (used_s / 3600):.1f} runs/hour; verdicts {statuses}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--workdir", type=Path, default=Path.cwd() / "phases-bench")
    parser.add_argument("--kafka-version", default="latest")
    parser.add_argument("--elr", choices=["on", "off"], default="on")
    parser.add_argument("--soak-minutes", type=float, default=0.0)
    parser.add_argument("--summarize", type=Path, metavar="STORE",
                        help="print the table of the runs already in a store")
    args = parser.parse_args()
    if args.summarize:
        run_dirs = sorted(d for d in (args.summarize / "unclean-last-replica").iterdir()
                          if d.is_dir())
        rows = []
        for d in run_dirs:  # the run's own duration, then its check
            times = phase_times(d)
            recorded = json.loads((d / "test.json").read_text()).get("duration_s", 0.0)
            rows.append({"wall_s": recorded + times.get("check", 0.0), "exit": "?",
                         "run_dir": d, "phases": times})
        print(table(rows))
        return 0
    args.workdir.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in range(args.runs):
        row = one_run(args.workdir, args.kafka_version, args.elr)
        row["phases"] = phase_times(row["run_dir"])
        rows.append(row)
        print(f"run {n + 1}: exit {row['exit']} in {row['wall_s']:.1f} s", flush=True)
    print(table(rows))
    if args.soak_minutes:
        print(soak_rate(args.workdir, args.soak_minutes, args.kafka_version))
    return 0


if __name__ == "__main__":
    sys.exit(main())
