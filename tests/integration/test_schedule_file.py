"""A user's schedule file on real Kafka (the newest release, ELR on), #55: written in
a fresh directory, played by `harness run --schedule` as a user types it, then
played again by `harness replay`.

The file cuts a follower off, kills the leader (a kill keeps the page cache: within
KIP-966's promise) and restarts it, then heals the cut. Expected: valid, exit 0;
every wait seen; schedule.toml in the run directory with each step's resolved
target; and the replay gives the run's verdict, 1 of 1.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from scenario_runs import MECHANICS_RATE

pytestmark = pytest.mark.integration

HARNESS = str(Path(sys.executable).with_name("harness"))

USERS_FILE = """help = "a follower cut off, the leader killed and restarted, the cut healed"

[[step]]
name = "warm-up"
until = "high-watermark at least 100"
within_s = 60

[[step]]
name = "cut"
fault = "partition"
target = "follower"
as = "A"
until = "A not in isr"
within_s = 60

[[step]]
name = "down"
fault = "kill"
target = "L"
hold_s = 4

[[step]]
name = "up"
end = "down"
until = "L unfenced"
within_s = 60

[[step]]
name = "heal"
end = "cut"
until = "isr full"
within_s = 60
"""


def test_a_users_schedule_file_plays_and_replays(tmp_path):
    (tmp_path / "mine.toml").write_text(USERS_FILE)
    # at MECHANICS_RATE: the file's playing is the subject, not throughput; the
    # replay keeps the run's flags, the rate too
    proc = subprocess.run([HARNESS, "run", "--schedule", "mine.toml", "--rate", MECHANICS_RATE,
                           "--name", "it-sched", "--subnet", "10.213.142.0/24"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=1200)
    run_dir = (tmp_path / "store" / "latest").resolve()
    assert run_dir.parent.name == "schedule-mine", run_dir
    test = json.loads((run_dir / "test.json").read_text())
    assert "error" not in test and (run_dir / "results.json").is_file(), (
        proc.stdout[-3000:] + proc.stderr[-2000:])
    record = test["nemesis_result"]["schedule"]
    steps = {s["step"]: s for s in record["steps"]}
    with_waits = [n for n in ("warm-up", "cut", "up", "heal")]
    print(f"\n[schedule file] exit {proc.returncode}, steps "
          f"{[(s['step'], s.get('target'), s.get('seen')) for s in record['steps']]}")
    assert [s["step"] for s in record["steps"]] == ["warm-up", "cut", "down", "up", "heal"]
    assert all(steps[n]["seen"] is True for n in with_waits), record
    assert steps["down"]["target"] == record["names"]["L"]
    assert steps["cut"]["target"] != record["names"]["L"]
    assert test["nemesis"] == "schedule mine.toml"
    played = tomllib.loads((run_dir / "schedule.toml").read_text())["step"]
    assert [s["played"].get("target") for s in played] == \
        [steps[s["name"]].get("target") for s in played]
    results = json.loads((run_dir / "results.json").read_text())
    assert results["valid"] is True, results["reason"]
    assert proc.returncode == 0, proc.stdout[-3000:]

    again = subprocess.run([HARNESS, "replay", str(run_dir), "-n", "1"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=1200)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-2000:]
    assert "1 of 1 replays gave the run's verdict and bad anomaly types" in \
        " ".join(again.stdout.split()), again.stdout[-2000:]
    [replay_dir] = (tmp_path / "store" / "replay").iterdir()
    replayed = json.loads((replay_dir / "replay.json").read_text())
    assert replayed["same"] == 1 and replayed["replays"][0]["verdict"] == "valid"
