"""One `harness run` of a scripted scenario into the worktree's own store/, and
what it recorded: shared by the scenario integration tests."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STORE = ROOT / "store"

#: Each scenario's own cluster name and subnet, so that the integration tests can
#: run in two workers side by side (scripts/test.sh): two runs on one subnet would
#: take each other's network. A scenario not listed here may not be run.
NETWORKS = {
    "unclean-last-replica-alone": ("it-alone", "10.213.150.0/24"),
    "disk-failure": ("it-disk-failure", "10.213.151.0/24"),
    "min-isr-drop": ("it-min-isr-drop", "10.213.152.0/24"),
    "slow-follower": ("it-slow-follower", "10.213.153.0/24"),
}


#: The send rate of the integration runs that test the harness's own working (every
#: kind made and undone, guided's rounds, a user's schedule file, the soak's
#: bookkeeping): a quarter of the default, since what they assert does not depend on
#: throughput, and at 200 sends/s a run keeps 0.8 of this machine's 2 cores busy
#: against 0.4 at 50 (#60: CI is CPU-bound). The scenario runs above, which
#: reproduce what Kafka does with writes in flight, keep the default.
MECHANICS_RATE = "50"


def own_network(name: str) -> tuple[str, ...]:
    """`--name` and `--subnet` flags of scenario `name`'s own cluster."""
    cluster, subnet = NETWORKS[name]
    return ("--name", cluster, "--subnet", subnet)


@dataclass(frozen=True)
class ScenarioRun:
    proc: subprocess.CompletedProcess
    run_dir: Path
    test: dict
    results: dict
    #: test.json's nemesis steps by name
    steps: dict[str, dict]
    history: list[dict]
    #: results.json's lost-write counts by acks
    lost: dict[str, int]

    @property
    def topic(self) -> str:
        """The run's (first) topic: the one the scenario acts on."""
        return next(iter(self.test["topics"]))

    def observations(self, brokers_only: bool = True) -> list[dict]:
        """The observe lines of the topic's partition 0 (the scenario's), only the
        brokers' views unless not brokers_only (the controller's too)."""
        return [e for e in self.history if e["f"] == "observe" and e["topic"] == self.topic
                and e["partition"] == 0 and not (brokers_only and "source" in e)]


def run_scenario(name: str, *flags: str, seed: int = 1) -> ScenarioRun:
    """Run scenario `name` (its seed, flags added) and read the run folder it added;
    on its own network (NETWORKS) unless the flags name one."""
    if "--subnet" not in flags:
        flags = (*flags, *own_network(name))
    runs = STORE / name
    before = set(runs.iterdir()) if runs.exists() else set()
    proc = subprocess.run(
        [sys.executable, "-m", "elr_harness.cli", "run", "--nemesis", name, "--seed", str(seed),
         *flags, "--store", str(STORE)], cwd=ROOT, capture_output=True, text=True, timeout=1200)
    added = sorted(set(runs.iterdir()) - before) if runs.exists() else []
    assert len(added) == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    return read_run(proc, added[0])


def read_run(proc: subprocess.CompletedProcess, run_dir: Path) -> ScenarioRun:
    test = json.loads((run_dir / "test.json").read_text())
    assert (run_dir / "results.json").exists(), (
        f"no verdict; error: {test.get('error')}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    results = json.loads((run_dir / "results.json").read_text())
    return ScenarioRun(
        proc, run_dir, test, results,
        steps={s["step"]: s for s in test["nemesis_result"]["steps"]},
        history=[json.loads(line) for line in (run_dir / "history.jsonl").open()],
        lost=results["anomalies"].get("lost-write", {}).get("by_acks", {"all": 0}))


def fault_index(history: list[dict], step: str, fault: str, typ: str = "ok") -> int:
    """The index of the `typ` line of the `fault` of nemesis step `step`."""
    return next(e["index"] for e in history if e["f"] == "fault" and e["type"] == typ
                and e["fault"] == fault and e.get("detail", {}).get("step") == step)
