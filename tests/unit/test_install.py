"""An install from a wheel works outside the checkout (#51): the wheel built from the
project holds one import package, elr_harness, with every subpackage and its data;
installed into a fresh virtualenv in a folder of its own, its `harness` lists every
fault kind and scenario and checks a history, importing nothing from the checkout.

Slow (a wheel, a virtualenv, the dependencies from pip's cache, a Spark check):
about a minute, so it is one test that does it all.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from synthetic import SyntheticSpec, write_run_dir

from elr_harness.nemesis.faults import FAULT_KINDS
from elr_harness.nemesis.scenarios import SCENARIOS

ROOT = Path(__file__).resolve().parents[2]


def _run(*cmd: str, cwd: Path, timeout_s: float = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(list(cmd), cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout_s)


def test_a_wheel_installs_into_a_fresh_virtualenv_and_runs(tmp_path):
    work = tmp_path / "elsewhere"
    work.mkdir()
    built = _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                 "--disable-pip-version-check", "-w", str(tmp_path / "dist"), str(ROOT),
                 cwd=work)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("elr_harness-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"elr_harness"}, "one import package, nothing generic in site-packages"
    for needed in ("elr_harness/nemesis/faults/one_way_partition.py",
                   "elr_harness/nemesis/scenarios/unclean_last_replica.py",
                   "elr_harness/report/report.css",
                   "elr_harness/checker/data/training-history.jsonl.gz",
                   "elr_harness/nemesis/pagecache/pagecache_fs.py",
                   "elr_harness/nemesis/scenario_files/unclean-last-replica.toml",
                   "elr_harness/nemesis/scenario_files/fenced-last-leader.toml",
                   "elr_harness/nemesis/schedule/drawn.py", "elr_harness/core/toml_write.py",
                   "elr_harness/nemesis/schedule/recorded.py",
                   "elr_harness/nemesis/schedule/step.py",
                   "elr_harness/nemesis/faults/config_changes.py", "elr_harness/hunt/shrink.py",
                   "elr_harness/run/nemesis_thread.py",
                   "elr_harness/cluster/mutants/java/probe/ElrHarnessProbe.java",
                   "elr_harness/cluster/mutants/catalog.toml",
                   "elr_harness/cluster/mutants/java/src/main/java/elrharness/Mutate.java"):
        assert needed in names, needed

    venv = tmp_path / "venv"
    made = _run(sys.executable, "-m", "venv", str(venv), cwd=work)
    assert made.returncode == 0, made.stderr
    # --no-compile: byte-compiling pyspark's modules up front is pip's work, not the
    # wheel's (Python compiles what it imports)
    installed = _run(str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                     "--no-compile", "--disable-pip-version-check", str(wheel), cwd=work)
    assert installed.returncode == 0, installed.stderr[-2000:]
    harness = str(venv / "bin" / "harness")

    where = _run(str(venv / "bin" / "python"), "-c",
                 "import elr_harness, sys; print(elr_harness.__file__)", cwd=work)
    assert where.stdout.strip().startswith(str(venv)), where.stdout + where.stderr

    top = _run(harness, "--help", cwd=work)
    assert top.returncode == 0 and "run" in top.stdout and "check" in top.stdout, top.stderr
    run_help = _run(harness, "run", "--help", cwd=work)
    assert run_help.returncode == 0, run_help.stderr
    lines = run_help.stdout.splitlines()
    for name in [*FAULT_KINDS, *SCENARIOS]:
        assert any(line.split()[:1] == [name] for line in lines), name

    run_dir = work / "run"
    write_run_dir(run_dir, SyntheticSpec(lines=400, seed=5))
    checked = _run(harness, "check", str(run_dir), cwd=work)
    assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]
    assert json.loads((run_dir / "results.json").read_text())["valid"] is True
    shutil.rmtree(venv)
