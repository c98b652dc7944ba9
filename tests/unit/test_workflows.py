"""The CI workflows: actionlint (built by scripts/setup.sh into .venv/bin) finds
nothing wrong, and they do what they are for (CI runs .ci/run; the nightly soaks
with its inputs, keeps the evidence and publishes the JUnit results)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO / ".github" / "workflows"
ACTIONLINT = Path(sys.prefix) / "bin" / "actionlint"


def test_actionlint_finds_nothing_wrong():
    assert ACTIONLINT.is_file(), f"{ACTIONLINT} missing: run scripts/setup.sh"
    files = sorted(str(p) for p in WORKFLOWS.glob("*.yml"))
    assert len(files) == 2
    run = subprocess.run([str(ACTIONLINT), "-no-color", *files], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr


def test_actionlint_would_catch_a_broken_workflow(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text("on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n"
                      "      - run: echo ${{ github.event.inputs.nope.really }\n")
    run = subprocess.run([str(ACTIONLINT), "-no-color", str(broken)], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr


def test_ci_runs_the_readme_test_command():
    assert "bash .ci/run" in (WORKFLOWS / "ci.yml").read_text()


def test_the_nightly_soaks_keeps_the_evidence_and_publishes_junit():
    nightly = (WORKFLOWS / "nightly.yml").read_text()
    for needed in ("schedule:", "workflow_dispatch:", "duration:", "kafka_versions:",
                   "harness soak --duration", "upload-artifact", "junit.xml",
                   "scripts/setup.sh"):
        assert needed in nightly, needed
