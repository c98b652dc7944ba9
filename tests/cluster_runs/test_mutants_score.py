"""`harness mutants score` on real Kafka (#54, #62): KIP-966's scenario on the release
and on one mutant that keeps an uncleanly shut down replica in the ELR. The control
stays valid in its three runs, the mutant's run is INVALID with lost-write (the rule
its catalog entry names: the replica that lost its page cache is elected from the
ELR), and score.json, junit.xml and index.html say it was killed.

The cell is the one the project's full score killed (docs/MUTANTS.md,
store/mutants/20261129T052231): unclean-last-replica-alone, the default plan's
second entry, so seed 0 + 1. The full score's unclean-last-replica cell of this
mutant was valid: this test asked for that one before (#62)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ENTRY = "unclean-last-replica-alone"
PLAN = f'[[entry]]\nname = "{ENTRY}"\nargs = ["--nemesis", "{ENTRY}"]\n'
MUTANT = "unclean-shutdown-kept-in-elr"


def test_an_unclean_replica_kept_in_the_elr_is_killed_and_the_control_valid(tmp_path) -> None:
    (tmp_path / "plan.toml").write_text(PLAN)
    proc = subprocess.run(
        [sys.executable, "-m", "elr_harness.cli", "mutants", "score", "--plan", "plan.toml",
         "--kafka-version", "4.4.0", "--mutant", MUTANT, "--seed", "1", "--store", "store",
         "--name", "it-mutants", "--subnet", "10.213.121.0/24"],
        cwd=tmp_path, capture_output=True, text=True, timeout=1500, env=os.environ)
    said = proc.stdout + proc.stderr
    assert proc.returncode == 0, said[-3000:]
    assert "mutation score: 1 of 1 decided mutants killed (100%); 0 inconclusive, 0 pending, " \
        "of 1; false alarms: 0 of 3 control runs INVALID; survived: none" in said, said[-3000:]
    [score_dir] = (tmp_path / "store" / "mutants").iterdir()
    score = json.loads((score_dir / "score.json").read_text())
    controls = [score["cells"][f"{target} / {ENTRY}"]
                for target in ("control", "control #2", "control #3")]
    mutant = score["cells"][f"{MUTANT} / {ENTRY}"]
    for control in controls:
        assert control["verdict"] == "valid" and control["bad"] == [], control
        assert "unplayed" not in control, control
    assert mutant["verdict"] == "invalid", mutant
    assert "lost-write" in mutant["bad"] and "unplayed" not in mutant, mutant
    assert mutant["first_invalid_s"] is not None and mutant["first_invalid_s"] > 0
    test = json.loads((Path(mutant["run_dir"]) / "test.json").read_text())
    assert f"mutants/4.4.0/{MUTANT}-" in str(test["kafka_dist"])
    suite = ET.parse(score_dir / "junit.xml").getroot()
    assert (suite.get("failures"), suite.get("errors")) == ("0", "0")
    page = (score_dir / "index.html").read_text()
    assert "Mutation score: 1 of 1 mutants killed" in page
    assert Path(score_dir, os.path.relpath(mutant["report"], score_dir)).is_file()
