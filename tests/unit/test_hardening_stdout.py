"""A closed stdout never changes the exit code (#31): `harness check RUN | head -1`
and `harness run ... | true` end with the verdict's code, or 2 for a harness
error, never rich's SystemExit(1), which reads as "Kafka lost data"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from synthetic import Injection, SyntheticSpec, write_run_dir


def _harness_into_closed_pipe(args: list[str], cwd: Path,
                              env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run harness with stdout a pipe whose reader has already gone."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run([sys.executable, "-m", "elr_harness.cli", *args], stdout=write_end,
                              stderr=subprocess.PIPE, timeout=300, cwd=cwd,
                              env={**os.environ, **(env or {})})
    finally:
        os.close(write_end)
    return proc.returncode, proc.stderr.decode(errors="replace")


def test_a_run_refused_for_no_engine_still_exits_2(tmp_path):
    code, err = _harness_into_closed_pipe(
        ["run", "--nemesis", "none"], tmp_path,
        env={"DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"})
    assert code == 2, err
    assert "no Docker engine answers" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("anomaly, verdict, code", [(None, True, 0),
                                                     ("aborted-read", False, 1)])
def test_a_check_exits_with_its_verdict(tmp_path, anomaly, verdict, code):
    injections = (Injection(anomaly, at=0.5),) if anomaly else ()
    run = tmp_path / "run"
    write_run_dir(run, SyntheticSpec(lines=400, seed=1, injections=injections))
    got, err = _harness_into_closed_pipe(["check", str(run)], tmp_path)
    assert got == code, err
    assert "Traceback" not in err
    results = json.loads((run / "results.json").read_text())
    assert results["valid"] is verdict
