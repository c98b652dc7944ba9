"""The harness's mutation score (#54): how many mutant Kafkas its runs catch, and
how soon.

    python benchmarks/mutants.py SCORE_DIR
    python benchmarks/mutants.py [--plan FILE] [--kafka-version V] [--workdir DIR]

With SCORE_DIR (store/mutants/<time>/ of `harness mutants score`), reads its
score.json; without, runs `harness mutants score` as a user types it (a working
directory with the default relative store: the soak's default plan unless
--plan) and then reads that. Prints:

- the score: mutants killed of all, with the control's verdict on each entry (a
  kill on an entry whose control was not valid does not count);
- the median time to catch: per killed mutant, the earliest first INVALID over
  its entries (seconds into the run when a bad anomaly was first shown), and
  the median over the killed mutants;
- per plan entry, the mutants it catches (a mutant only one scripted scenario
  catches is a lead for guided);
- per surviving mutant, the states its runs reached.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HARNESS = str(Path(sys.executable).with_name("harness"))
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from elr_harness.hunt.score_pages import score_key, score_said, tally  # noqa: E402


def _score(args: argparse.Namespace) -> Path:
    """Run a score in the working directory; its score directory."""
    work = args.workdir.absolute()
    work.mkdir(parents=True, exist_ok=True)
    command = [HARNESS, "mutants", "score", "--kafka-version", args.kafka_version]
    if args.plan:
        command += ["--plan", str(args.plan.absolute())]
    started = time.monotonic()
    subprocess.run(command, cwd=work, check=False)
    print(f"score took {time.monotonic() - started:.0f} s")
    return sorted((work / "store" / "mutants").iterdir())[-1]


def report(score_dir: Path) -> None:
    state = json.loads((score_dir / "score.json").read_text())
    cells, entries = state["cells"], [e["name"] for e in state["plan"]]
    told = tally(state)
    print(f"score directory: {score_dir}")
    print(f"Kafka {state['kafka_version']}, seed {state['seed']}, plan: {', '.join(entries)}")
    print("control: " + ", ".join(f"{e} {told['control'][e]['status']} "
                                  f"({told['control'][e]['invalid']} of "
                                  f"{told['control'][e]['conclusive']} INVALID)"
                                  for e in entries))
    print(f"mutation score: {score_said(told)}")
    for key, reason in told["inconclusive_cells"].items():
        print(f"  inconclusive: {key}: {reason}")
    catch = {}
    for mutant in told["killed_by"]:
        times = [c["first_invalid_s"] for e in entries
                 if (c := cells.get(score_key(mutant, e)))
                 and told["outcomes"].get(score_key(mutant, e)) == "killed"
                 and c.get("first_invalid_s") is not None]
        if times:
            catch[mutant] = min(times)
    if catch:
        print(f"median time to catch: {statistics.median(catch.values()):.1f} s "
              f"(min {min(catch.values()):.1f}, max {max(catch.values()):.1f}, "
              f"over {len(catch)} killed mutants)")
    print("\nper entry, the mutants it catches:")
    for e in entries:
        caught = [m for m in state["mutants"]
                  if (c := cells.get(score_key(m, e))) and c["verdict"] == "invalid"]
        print(f"  {e:32} {len(caught):2}  {', '.join(caught)}")
    print("\nper mutant:")
    for m in state["mutants"]:
        row = []
        for e in entries:
            c = cells.get(score_key(m, e))
            outcome = told["outcomes"].get(score_key(m, e), "")
            row.append("." if c is None else
                       f"{outcome}: {c['verdict']}({','.join(c['bad'])})" if c["bad"]
                       else f"{outcome}: {c['verdict']}")
        status = ("killed" if m in told["killed_by"] else
                  "SURVIVED" if m in told["survived"] else
                  "inconclusive" if m in told["inconclusive"] else "pending")
        expected = state.get("rules", {}).get(m)
        if expected:
            status += (f"; expected {expected} fired in: "
                       f"{', '.join(told['expected_fired'][m]) or 'none'}")
        caught = f" in {catch[m]:.1f} s" if m in catch else ""
        print(f"  {m:42} {status}{caught}")
        for e, r in zip(entries, row, strict=True):
            print(f"      {e:30} {r}")
        if m in told["survived"]:
            states = sorted({s for e in entries
                             for s in cells.get(score_key(m, e), {}).get("states", [])})
            print(f"      states reached: {', '.join(states) or 'none'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("score_dir", nargs="?", type=Path, default=None)
    parser.add_argument("--plan", type=Path, default=None)
    parser.add_argument("--kafka-version", default="4.4.0")
    parser.add_argument("--workdir", type=Path, default=Path("bench-mutants"))
    args = parser.parse_args()
    score_dir = args.score_dir or _score(args)
    if not (score_dir / "score.json").is_file():
        print(f"mutants: {score_dir} has no score.json", file=sys.stderr)
        return 2
    report(score_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
