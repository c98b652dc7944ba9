"""Where the test suite's time goes (#60): runs the suite as CI does (`bash .ci/run`,
both halves side by side) with a probe in every Python process, then prints the
wall time, the 30 slowest tests, the time per file, and the fixed costs the
suite pays (Spark sessions, JVM starts here and in the nodes, cluster set-ups,
waits and sleeps by who waited).

    python benchmarks/suite_cost.py                  # run the whole suite, then print
    python benchmarks/suite_cost.py -- tests/unit    # only these tests (scripts/test.sh ARGS)
    python benchmarks/suite_cost.py --from DIR       # print an earlier measurement again
    python benchmarks/suite_cost.py --repo ../clone  # another checkout's suite (a "before")

The measurement is kept in a folder (default /tmp/suite-cost-<time>): events.jsonl
(the probe's lines, benchmarks/suite_cost_probe/) and suite.log (what the suite
printed). A figure, not a test: nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROBE = Path(__file__).resolve().parent / "suite_cost_probe"


def run_suite(out: Path, tests: list[str], repo: Path = REPO) -> tuple[float, int]:
    """Run the suite of the checkout at repo into out/; its wall seconds and exit code."""
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PROBE), env.get("PYTHONPATH")) if p)
    env["SUITE_COST_EVENTS"] = str(out / "events.jsonl")
    env["PYTEST_ADDOPTS"] = (env.get("PYTEST_ADDOPTS", "") + " -p suite_cost_plugin").strip()
    env.setdefault("CI", "true")
    command = ["bash", ".ci/run"] if not tests else ["bash", "scripts/test.sh", *tests]
    started = time.monotonic()
    with open(out / "suite.log", "wb") as log:
        rc = subprocess.call(command, cwd=repo, env=env, stdout=log, stderr=subprocess.STDOUT)
    wall = time.monotonic() - started
    (out / "wall.json").write_text(json.dumps({"wall_s": wall, "rc": rc, "command": command}))
    return wall, rc


def load(out: Path) -> tuple[list[dict], dict]:
    events = []
    with open(out / "events.jsonl", encoding="utf-8") as lines:
        for line in lines:
            try:
                events.append(json.loads(line))
            except ValueError:
                continue  # a line cut short by a killed process
    wall = json.loads((out / "wall.json").read_text()) if (out / "wall.json").exists() else {}
    return events, wall


def _secs(test: dict) -> float:
    return sum(test.get(phase) or 0.0 for phase in ("setup", "call", "teardown"))


def _union_s(items: list[dict]) -> float:
    """Wall seconds some item of items was going on (each ends at `at`, lasted
    `secs`): calls made side by side (six nodes formatted at once) count once."""
    spans = sorted((e["at"] - e["secs"], e["at"]) for e in items if e.get("secs"))
    total, end = 0.0, float("-inf")
    for start, stop in spans:
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total


def report(events: list[dict], wall: dict) -> str:
    rows: list[str] = []
    say = rows.append
    # an xdist worker's reports reached its controller's hooks too: measurements made
    # before the probe noted only the controller hold each test twice, and a session
    # per worker beside the controller's (which spans them)
    seen: set[tuple[str, str]] = set()
    tests = []
    for e in events:
        if e["kind"] == "test" and (e["half"], e["nodeid"]) not in seen:
            seen.add((e["half"], e["nodeid"]))
            tests.append(e)
    sessions = [max((e for e in events if e["kind"] == "session" and e["half"] == half),
                    key=lambda e: e["secs"]) for half in ("unit", "integration")
                if any(e["kind"] == "session" and e["half"] == half for e in events)]
    if wall:
        say(f"suite: {wall.get('wall_s', 0) / 60:.1f} min wall, exit {wall.get('rc')} "
            f"({' '.join(wall.get('command', []))})")
    for half in ("unit", "integration"):
        mine = [t for t in tests if t["half"] == half]
        sess = [s for s in sessions if s["half"] == half]
        outcomes = collections.Counter(t["outcome"] for t in mine)
        took = sum(s["secs"] for s in sess)
        say(f"{half:12s} {len(mine):5d} tests in {took:7.0f} s ({took / 60:.1f} min): "
            + ", ".join(f"{n} {o}" for o, n in sorted(outcomes.items())))

    say("")
    say("the 30 slowest tests (setup + call + teardown)")
    for t in sorted(tests, key=_secs, reverse=True)[:30]:
        say(f"  {_secs(t):7.1f} s  {t['half'][:5]:5s} {t['nodeid']}")

    say("")
    say("time per file")
    per_file: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])
    for t in tests:
        entry = per_file[t["nodeid"].split("::", 1)[0]]
        entry[0] += 1
        entry[1] += _secs(t)
    for name, (count, total) in sorted(per_file.items(), key=lambda kv: -kv[1][1]):
        say(f"  {total:7.1f} s  {count:4d} tests  {name}")

    say("")
    say("fixed costs (every process of the suite, the harness's children included):")
    say("count, seconds summed over the calls, and wall seconds (calls side by side once)")
    for half in ("unit", "integration"):
        mine = [e for e in events if e["half"] == half]
        say(f" {half}")

        def line(label: str, items: list[dict]) -> None:
            secs = sum(e.get("secs") or 0.0 for e in items)
            say(f"   {label:34s} {len(items):6d}  {secs:8.1f} s  {_union_s(items):8.1f} s")

        line("Spark sessions started", [e for e in mine if e["kind"] == "spark-session"])
        jvms = [e for e in mine if e["kind"] == "jvm"]
        for where, tool in sorted({(e["where"], e["tool"]) for e in jvms}):
            line(f"JVM starts, {where}: {tool}",
                 [e for e in jvms if (e["where"], e["tool"]) == (where, tool)])
            by_caller: dict[str, list[dict]] = collections.defaultdict(list)
            for e in jvms:
                if (e["where"], e["tool"]) == (where, tool):
                    by_caller[e["caller"]].append(e)
            for caller, items in sorted(by_caller.items(),
                                        key=lambda kv: -sum(e["secs"] or 0 for e in kv[1]))[:4]:
                line(f"  {caller[-32:]}", items)
        line("cluster set-ups", [e for e in mine if e["kind"] == "cluster-up"])
        waits = [e for e in mine if e["kind"] == "wait"]
        line("waits (wait_until), all", waits)
        line("waits that timed out", [e for e in waits if e["timed_out"]])
        by_waiter: dict[str, list[dict]] = collections.defaultdict(list)
        for e in waits:
            by_waiter[e["caller"]].append(e)
        for caller, items in sorted(by_waiter.items(),
                                    key=lambda kv: -sum(e["secs"] for e in kv[1]))[:5]:
            line(f"  {caller[-32:]}", items)
        sleeps = [e for e in mine if e["kind"] == "sleep" and e["main_thread"]]
        total = sum(e["secs"] for e in sleeps)
        say(f"   {'sleeps on a main thread':34s} {sum(e['count'] for e in sleeps):6d}  "
            f"{total:8.1f} s")
        by_caller: dict[str, float] = collections.defaultdict(float)
        for e in sleeps:
            by_caller[e["caller"]] += e["secs"]
        for caller, secs in sorted(by_caller.items(), key=lambda kv: -kv[1])[:8]:
            say(f"     {secs:8.1f} s  {caller}")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="source", type=Path,
                        help="print an earlier measurement's folder instead of running")
    parser.add_argument("--out", type=Path, help="the measurement's folder")
    parser.add_argument("--repo", type=Path, default=REPO,
                        help="the checkout whose suite to run (default: this one)")
    parser.add_argument("tests", nargs="*", help="tests to run instead of the whole suite")
    args = parser.parse_args()
    if args.source is not None:
        out = args.source
    else:
        out = args.out or Path(f"/tmp/suite-cost-{time.strftime('%Y%m%dT%H%M%S')}")
        print(f"measuring into {out}", file=sys.stderr)
        run_suite(out, args.tests, args.repo.resolve())
    events, wall = load(out)
    print(report(events, wall))
    return 0


if __name__ == "__main__":
    sys.exit(main())
