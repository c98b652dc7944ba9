"""KIP-966 state coverage of a random mix against a guided schedule.

    python benchmarks/coverage.py [--minutes 30] [--workdir DIR] [--kafka-version latest]
        [--seed 1] [--one-at-a-time]
    python benchmarks/coverage.py --summarize SOAK_DIR SOAK_DIR

Runs two soaks of `--minutes` each, one of `--nemesis all` (a random mix of
every kind of `all`, 240 s runs, 8 s intervals) and one of `--nemesis guided`
(240 s runs, each handed the soak's coverage so far), at once on two subnets
(or one after the other), as a user types them, each in its own store under the
working directory. Then prints, for every KIP-966 state of the contract's list,
the runs of each soak that reached it (soak.json's coverage, from each run's
checker), the states no run of a soak reached, and each run's verdict with its
acks=all lost writes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from elr_harness.core.history import COVERAGE_STATES  # noqa: E402

#: The environment's console script: the README's `harness`.
HARNESS = str(Path(sys.executable).with_name("harness"))
#: name -> (plan entry's flags, cluster name, subnet)
SOAKS = {
    "all": (["--nemesis", "all", "--time-limit", "240", "--interval", "8"], "cov-all",
            "10.213.122.0/24"),
    "guided": (["--nemesis", "guided", "--time-limit", "240"], "cov-guided",
               "10.213.123.0/24"),
}


def _plan(path: Path, name: str, args: list[str]) -> Path:
    path.write_text(f'[[entry]]\nname = "{name}"\nargs = {json.dumps(args)}\n')
    return path


def start_soak(name: str, workdir: Path, minutes: float, version: str, seed: int
               ) -> subprocess.Popen:
    args, cluster, subnet = SOAKS[name]
    folder = workdir / name
    folder.mkdir(parents=True, exist_ok=True)
    plan = _plan(folder / "plan.toml", name, args)
    log = (folder / "soak.log").open("w")
    return subprocess.Popen(
        [HARNESS, "soak", "--plan", str(plan), "--duration", f"{minutes}m", "--seed",
         str(seed), "--kafka-version", version, "--name", cluster, "--subnet", subnet,
         "--store", "store"], cwd=folder, stdout=log, stderr=subprocess.STDOUT)


def soak_dir(folder: Path) -> Path:
    """The newest soak of a benchmark folder's store."""
    soaks = sorted((folder / "store" / "soak").iterdir())
    if not soaks:
        raise SystemExit(f"no soak in {folder}")
    return soaks[-1]


def table(soaks: dict[str, Path]) -> str:
    states = {name: json.loads((d / "soak.json").read_text()) for name, d in soaks.items()}
    names = list(states)
    lines = ["| state | " + " | ".join(f"{n}: runs that reached it" for n in names) + " |",
             "|---|" + "---|" * len(names)]
    for state in COVERAGE_STATES:
        cells = []
        for name in names:
            coverage = states[name].get("coverage") or {}
            runs = ((coverage.get("states") or {}).get(state) or {}).get("runs") or []
            checked = coverage.get("checked_runs", 0)
            cells.append(f"{len(runs)}/{checked}" + (
                f" ({', '.join(str(i + 1) for i in runs)})" if runs else " **never**"))
        lines.append(f"| {state} | " + " | ".join(cells) + " |")
    lines.append("")
    for name in names:
        runs = states[name]["runs"]
        unreached = (states[name].get("coverage") or {}).get("unreached") or []
        lines.append(f"{name}: {len(runs)} runs in {states[name]['used_s'] / 60:.1f} min; "
                     f"never reached: {', '.join(unreached) or 'none'}")
        for run in runs:
            lost = (run.get("lost_write_by_acks") or {}).get("all", "?")
            lines.append(f"  run {run['index'] + 1} seed {run['seed']}: {run['status']}, "
                         f"acks=all lost {lost}, {run.get('report') or run.get('error')}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--workdir", type=Path, default=Path.cwd() / "coverage-bench")
    parser.add_argument("--kafka-version", default="latest")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--one-at-a-time", action="store_true",
                        help="the guided soak after the random one, not beside it")
    parser.add_argument("--summarize", nargs=2, type=Path, metavar="SOAK_DIR",
                        help="print the table of two finished soaks (all, guided)")
    args = parser.parse_args()
    if args.summarize:
        print(table(dict(zip(SOAKS, args.summarize, strict=True))))
        return 0
    started = []
    for name in SOAKS:
        proc = start_soak(name, args.workdir, args.minutes, args.kafka_version, args.seed)
        if args.one_at_a_time:
            proc.wait()
        started.append(proc)
    for proc in started:
        proc.wait()
    print(table({name: soak_dir(args.workdir / name) for name in SOAKS}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
