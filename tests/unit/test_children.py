"""The one launcher of child runs (soak.children): the soak's, the score's, the
replays' and the shrink's. A child outliving its bound is handed a Ctrl-C, then
killed after the grace; a child whose parent dies gets SIGINT; run_child's cell
of a child that outlived child_timeout_s is an error that says so, and the cluster
it left (by its --name, as the next run of that name would) is removed."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

from elr_harness.core.config import SOAK_TOKEN_ENV, ClusterConfig, SoakConfig
from elr_harness.soak import children

#: A child that says when it got SIGINT and then ends (or, `deaf`, goes on).
CHILD = textwrap.dedent("""
    import signal, sys, time
    said = sys.argv[1]
    deaf = sys.argv[2] == "deaf"
    def got(*_):
        open(said, "a").write("SIGINT\\n")
        if not deaf:
            sys.exit(3)
    signal.signal(signal.SIGINT, got)
    open(said, "a").write("started\\n")
    for _ in range(600):
        time.sleep(0.1)
    """)


def _child(tmp_path: Path, deaf: bool = False) -> tuple[subprocess.Popen, Path]:
    said = tmp_path / "said.txt"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    proc = children.start_child([sys.executable, str(script), str(said),
                                 "deaf" if deaf else "-"], tmp_path / "child.log", {})
    _until(lambda: said.is_file() and "started" in said.read_text())
    return proc, said


def _until(condition, within_s: float = 20.0) -> None:
    deadline = time.monotonic() + within_s
    while not condition():
        assert time.monotonic() < deadline, "never happened"
        time.sleep(0.05)


def test_a_child_past_its_bound_is_handed_a_ctrl_c_and_ends(tmp_path):
    proc, said = _child(tmp_path)
    code, timed_out = children.wait_child(proc, grace_s=10, timeout_s=0.5)
    assert (code, timed_out) == (3, True)
    assert said.read_text().splitlines() == ["started", "SIGINT"]


def test_a_child_deaf_to_ctrl_c_is_killed_after_the_grace(tmp_path):
    proc, said = _child(tmp_path, deaf=True)
    started = time.monotonic()
    code, timed_out = children.wait_child(proc, grace_s=0.5, timeout_s=0.2)
    assert (code, timed_out) == (-9, True)
    assert time.monotonic() - started < 10
    assert said.read_text().splitlines() == ["started", "SIGINT"]


def test_a_child_within_its_bound_gives_its_own_exit_code(tmp_path):
    proc = children.start_child([sys.executable, "-c", "import sys; sys.exit(1)"],
                                tmp_path / "log", {})
    assert children.wait_child(proc, grace_s=1, timeout_s=30) == (1, False)


def test_the_wait_ticks_while_the_child_runs_and_never_past_its_bound(tmp_path):
    """The soak's progress line comes from the same wait as every child's (#62: one
    launcher): a tick per tick_every_s while the child runs, none once its bound is
    reached, where it is handed a Ctrl-C as without ticks."""
    ticks: list[float] = []
    proc = children.start_child([sys.executable, "-c", "import time; time.sleep(1.0)"],
                                tmp_path / "log", {})
    assert children.wait_child(proc, grace_s=1, tick=ticks.append,
                               tick_every_s=0.2) == (0, False)
    assert len(ticks) >= 2 and ticks == sorted(ticks) and ticks[-1] < 5, ticks
    ticks.clear()
    (tmp_path / "bound").mkdir()
    proc, said = _child(tmp_path / "bound")
    code, timed_out = children.wait_child(proc, grace_s=10, timeout_s=0.7,
                                          tick=ticks.append, tick_every_s=0.2)
    assert (code, timed_out) == (3, True)
    assert ticks and all(t < 0.7 for t in ticks), ticks
    assert said.read_text().splitlines() == ["started", "SIGINT"]


def test_a_child_gets_sigint_when_its_parent_dies(tmp_path):
    said = tmp_path / "said.txt"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    parent = textwrap.dedent(f"""
        import os, sys, time
        from pathlib import Path
        from elr_harness.soak.children import start_child
        proc = start_child([sys.executable, {str(script)!r}, {str(said)!r}, "-"],
                           Path({str(tmp_path / 'child.log')!r}), {{}})
        print(proc.pid, flush=True)
        while not (Path({str(said)!r}).is_file() and "started" in Path({str(said)!r}).read_text()):
            time.sleep(0.05)
        os._exit(0)  # dies without a word to its child
        """)
    out = subprocess.run([sys.executable, "-c", parent], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    _until(lambda: "SIGINT" in said.read_text())


def test_run_childs_cell_of_a_hung_run_is_an_error_and_its_cluster_goes(tmp_path,
                                                                           monkeypatch):
    """A replay that hangs: run_child ends it at child_timeout_s, says so, and removes
    the cluster its --name gives."""
    started: list[tuple[list[str], dict[str, str]]] = []
    removed: list[tuple[str, Path | None, str | None]] = []

    def hangs(argv, log_path, env):
        started.append((argv, env))
        return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])

    monkeypatch.setattr(children, "start_child", hangs)
    monkeypatch.setattr(children, "tear_down_cluster",
                        lambda name, nodes, token, only_with_token=True:
                        removed.append((name, nodes, token, only_with_token)))
    config = replace(SoakConfig(), child_timeout_s=0.3, interrupt_grace_s=5)
    cell = children.run_child(["--nemesis", "none", "--name", "shrunk"], tmp_path,
                              "replay-1", config)
    assert cell["verdict"] == "error" and cell["run_dir"] is None
    assert cell["timed_out"] == "ended after 0.3 s (child_timeout_s)"
    [(argv, env)] = started
    assert argv[-2] == "--record-run-dir" and argv[3:6] == ["run", "--nemesis", "none"]
    # a plain run's: no soak's token, and its --name's cluster removed as the next run
    # of that name would remove it
    assert SOAK_TOKEN_ENV not in env
    assert removed == [("shrunk", None, None, False)]


def test_run_child_removes_nothing_after_a_run_with_a_verdict(tmp_path, monkeypatch):
    run_dir = tmp_path / "store" / "run"
    run_dir.mkdir(parents=True)
    (run_dir / "results.json").write_text(json.dumps({"valid": True,
                                                      "bad_anomaly_types": []}))
    removed: list[object] = []

    def recorded(argv, log_path, env):
        Path(argv[-1]).write_text(str(run_dir))
        return subprocess.Popen([sys.executable, "-c", "pass"])

    monkeypatch.setattr(children, "start_child", recorded)
    monkeypatch.setattr(children, "tear_down_cluster", lambda *a, **k: removed.append(a))
    cell = children.run_child(["--nemesis", "none"], tmp_path, "replay-1")
    assert cell["verdict"] == "valid" and "timed_out" not in cell and removed == []
    # no --name: the default cluster's name, as the child's run took it
    assert children._cluster_of(["--nodes-file=h.yaml"]) == (ClusterConfig().name,
                                                              Path("h.yaml"))


def test_run_childs_cell_says_what_its_nemesis_did_not_play(tmp_path, monkeypatch):
    """A score must tell a VALID that played its faults from one that did not: the
    cell carries what test.json says was skipped (hunt/score_pages reads it)."""
    run_dir = tmp_path / "store" / "run"
    run_dir.mkdir(parents=True)
    (run_dir / "results.json").write_text(json.dumps({"valid": True,
                                                      "bad_anomaly_types": []}))

    def recorded(argv, log_path, env):
        Path(argv[-1]).write_text(str(run_dir))
        return subprocess.Popen([sys.executable, "-c", "pass"])

    monkeypatch.setattr(children, "start_child", recorded)
    monkeypatch.setattr(children, "tear_down_cluster", lambda *a, **k: None)
    for test, said in [
        ({"nemesis": "unclean-last-replica", "nemesis_result": {"schedule": {
            "steps": [{"step": "T0", "fault": "partition", "skipped": "no leader"}]},
            "injected": []}}, "step T0 skipped: no leader"),
        ({"nemesis": "all", "nemesis_result": {"injected": ["kill"]}}, None),
        (None, "what was played is unknown: "),
    ]:
        if test is None:
            (run_dir / "test.json").unlink()
        else:
            (run_dir / "test.json").write_text(json.dumps(test))
        cell = children.run_child(["--nemesis", "x"], tmp_path, "cell")
        assert cell["verdict"] == "valid"
        if said is None:
            assert "unplayed" not in cell, cell
        else:
            assert cell["unplayed"].startswith(said), cell
