"""`harness mutants score` on real Kafka (#54): KIP-966's scenario on the release
and on one mutant that keeps the ELR once the ISR is back at min ISR. The control
stays valid, the mutant's run is INVALID by elr-invariant (the rule its catalog
entry names), and score.json, junit.xml and index.html say it was killed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

PLAN = '[[entry]]\nname = "unclean-last-replica"\nargs = ["--nemesis", "unclean-last-replica"]\n'
MUTANT = "elr-kept-at-min-isr"


def test_a_mutant_that_keeps_the_elr_is_killed_and_the_control_stays_valid(tmp_path) -> None:
    (tmp_path / "plan.toml").write_text(PLAN)
    proc = subprocess.run(
        [sys.executable, "-m", "elr_harness.cli", "mutants", "score", "--plan", "plan.toml",
         "--kafka-version", "4.4.0", "--mutant", MUTANT, "--store", "store",
         "--name", "it-mutants", "--subnet", "10.213.121.0/24"],
        cwd=tmp_path, capture_output=True, text=True, timeout=1500, env=os.environ)
    said = proc.stdout + proc.stderr
    assert proc.returncode == 0, said[-3000:]
    assert "mutation score: 1 of 1 mutants killed; survived: none" in said, said[-3000:]
    [score_dir] = (tmp_path / "store" / "mutants").iterdir()
    score = json.loads((score_dir / "score.json").read_text())
    control = score["cells"]["control / unclean-last-replica"]
    mutant = score["cells"][f"{MUTANT} / unclean-last-replica"]
    assert control["verdict"] == "valid" and control["bad"] == [], control
    assert mutant["verdict"] == "invalid", mutant
    assert "elr-invariant" in mutant["bad"], mutant
    assert mutant["first_invalid_s"] is not None and mutant["first_invalid_s"] > 0
    test = json.loads((Path(mutant["run_dir"]) / "test.json").read_text())
    assert "mutants/4.4.0/elr-kept-at-min-isr-" in str(test["kafka_dist"])
    suite = ET.parse(score_dir / "junit.xml").getroot()
    assert (suite.get("failures"), suite.get("errors")) == ("0", "0")
    page = (score_dir / "index.html").read_text()
    assert "Mutation score: 1 of 1 mutants killed" in page
    assert Path(score_dir, os.path.relpath(mutant["report"], score_dir)).is_file()
