"""`harness soak` against hostile input (#31): soak.json edited by anyone who can
write the store, plan files that spell reserved flags in other ways, numbers in
non-ASCII digits, FIFOs and deep JSON. Each row is one line and exit 2; the
effects tests show that nothing the soak did not start is signalled, nothing
outside its folder is deleted or read, and junit.xml stays XML."""

from __future__ import annotations

import copy
import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from cli_rows import digests, run_row

from elr_harness.core.config import SoakConfig
from elr_harness.soak.junit import write_junit
from elr_harness.soak.plan import DEFAULT_PLAN, PlanEntry, planned_run
from elr_harness.soak.results import run_record
from elr_harness.soak.state import TOKEN_ENV, is_our_child, start_time

#: No Docker engine answers here: a resume that goes on to tear down touches nothing.
NO_ENGINE = {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}


def _damaged(place: str, words: str) -> tuple[list[str], str]:
    return (["soak", "--resume", place], f"--resume {place}: soak.json is damaged ({words}")


ROWS = [
    # soak.json, checked whole before anything is signalled, deleted or written
    _damaged("{soak_pid_text}", "current.pid: not an integer"),
    _damaged("{soak_pid_1}", "current.pid: 1 is not between 2 and"),
    _damaged("{soak_grace_huge}", "config.interrupt_grace_s: 1000000000.0 is not between 0"),
    _damaged("{soak_duration_nan}", "config.duration_s: nan is not between"),
    _damaged("{soak_keep}", "config.keep: not one of all, no-cache, failing"),
    _damaged("{soak_versions}", "config.kafka_versions: not a list of Kafka releases"),
    _damaged("{soak_cluster}", "cluster_name: 'a b' is not a cluster name"),
    _damaged("{soak_store}", "store: not an absolute path"),
    _damaged("{soak_version_true}", "soak_version: not 1"),
    _damaged("{soak_runs}", "runs: not a list of objects"),
    _damaged("{soak_run_status}", "runs[0].status: not one of valid"),
    _damaged("{soak_marker}", "current.marker: not a text"),
    _damaged("{soak_token}", "current.token: not 32 hexadecimal digits"),
    _damaged("{soak_cluster_token}", "cluster_token: not 32 hexadecimal digits"),
    _damaged("{soak_plan_sto}", "plan: plan entry 'a': --store is set by the soak for every "
                                "run ('--sto' abbreviates it)"),
    _damaged("{soak_plan_record}", "plan: plan entry 'a': --record-run-dir is set by the soak"),
    (["soak", "--resume", "{soak_deep}"],
     "--resume {soak_deep}: soak.json: JSON nested deeper than 64 levels"),
    # plan files
    (["soak", "--store", "{store}", "--plan", "{fifo}"], "--plan {fifo}: not a regular file"),
    (["soak", "--store", "{store}", "--plan", "{plan_huge}"],
     "--plan {plan_huge}: 16777217 bytes, more than the 16777216 accepted"),
    (["soak", "--store", "{store}", "--plan", "{plan_sto}"],
     "plan entry 'a': --store is set by the soak for every run ('--sto' abbreviates it)"),
    (["soak", "--store", "{store}", "--plan", "{plan_conf}"],
     "plan entry 'a': --config is set by the soak for every run ('--conf' abbreviates it)"),
    (["soak", "--store", "{store}", "--plan", "{plan_nodes}"],
     "plan entry 'a': --nodes-file is set by the soak for every run ('--nodes' abbreviates"),
    (["soak", "--store", "{store}", "--plan", "{plan_record}"],
     "plan entry 'a': --record-run-dir is set by the soak for every run"),
    (["soak", "--store", "{store}", "--plan", "{plan_list}"],
     "--plan {plan_list}: entry 1: not a table"),
    (["soak", "--store", "{store}", "--plan", "{plan_control}"],
     "--plan {plan_control}: entry 1: `name` holds a control character"),
    # numbers: 1 s at least, ASCII digits only
    (["soak", "--store", "{store}", "--duration", "0.5"],
     "argument --duration: '0.5' is not between 1 s and 7 days"),
    (["soak", "--store", "{store}", "--duration", "\u0663h"],
     "argument --duration: '\u0663h' is not a duration"),
    (["soak", "--store", "{store}", "--min-free", "\u0663G"],
     "argument --min-free: '\u0663G' is not a size"),
    (["soak", "--store", "{store}", "--seed", "\u0663"],
     "argument --seed: '\u0663' is not a seed"),
    (["soak", "--store", "{store}", "--seed", "1_000"], "argument --seed: '1_000' is not a seed"),
    # #52: help asked for in a plan (argparse printed `harness run`'s help, then the
    # soak said "not `harness run` flags"), in a plan file and in soak.json
    *[(["soak", "--store", "{store}", "--plan", "{plan_" + key + "}"],
       "plan entry 'a': -h/--help asks for `harness run`'s help, which is no run; "
       "`harness run --help` prints it") for key in ("help", "h", "help_later")],
    _damaged("{soak_plan_help}", "plan: plan entry 'a': -h/--help asks for `harness run`'s "
                                 "help"),
    # #52: soak.json's store gone (it went on, then failed: "No such file or directory")
    (["soak", "--resume", "{soak_store_gone}"], "--resume {soak_store_gone}: the store "
     "soak.json names, {store_gone}, does not exist; was it moved or deleted?"),
    # #52: a file where the soak's folder goes ("File exists")
    (["soak", "--store", "{store_soak_file}", "--duration", "1h"],
     "--store {store_soak_file}: soak in it is a file, not the folder the soak keeps its "
     "directories in; move it away or pick another --store"),
]


def _state(store: Path) -> dict:
    """A soak.json --resume accepts: its duration used up, so a resume ends at once."""
    config = {**SoakConfig().__dict__, "kafka_versions": ["latest"], "duration_s": 60.0}
    return {"soak_version": 1, "command": "harness soak", "started_at": "2026-11-25T10:00:00+00:00",
            "store": str(store), "cluster_name": "elr-soak-test", "config": config,
            "nodes_file": None, "plan": [{"name": "a", "args": ["--nemesis", "kill"]}],
            "used_s": 60.0, "runs": [], "abandoned": [], "current": None}


def _soak_dir(tmp_path: Path, name: str, edit, raw: str | None = None) -> str:
    store = tmp_path / "store"
    soak_dir = store / "soak" / name
    soak_dir.mkdir(parents=True)
    state = _state(store)
    edit(state)
    (soak_dir / "soak.json").write_text(raw if raw is not None else json.dumps(state))
    return str(soak_dir)


def _plan(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _args(*args: str) -> str:
    return "[[entry]]\nname = 'a'\nargs = " + json.dumps(["--nemesis", "kill", *args]) + "\n"


def materialize(tmp_path: Path) -> dict[str, str]:
    """The soak folders, plan files and FIFO the rows name."""
    (tmp_path / "store").mkdir(exist_ok=True)
    current = {"index": 0, "pid": _gone_pid(), "marker": "/x/runs/0000.run-dir",
               "started_at": "2026-11-25T10:00:00+00:00"}
    edits = {
        "soak_pid_text": lambda s: s.update(current={**current, "pid": "123"}),
        "soak_pid_1": lambda s: s.update(current={**current, "pid": 1}),
        "soak_grace_huge": lambda s: s["config"].update(interrupt_grace_s=1e9),
        "soak_duration_nan": lambda s: s["config"].update(duration_s=float("nan")),
        "soak_keep": lambda s: s["config"].update(keep="everything"),
        "soak_versions": lambda s: s["config"].update(kafka_versions=["../../etc"]),
        "soak_cluster": lambda s: s.update(cluster_name="a b"),
        "soak_store": lambda s: s.update(store="store"),
        "soak_version_true": lambda s: s.update(soak_version=True),
        "soak_runs": lambda s: s.update(runs=[1, 2]),
        "soak_run_status": lambda s: s.update(runs=[{"status": "fine"}]),
        "soak_marker": lambda s: s.update(current={**current, "marker": 5}),
        "soak_token": lambda s: s.update(current={**current, "token": "zz"}),
        "soak_cluster_token": lambda s: s.update(cluster_token="elr-harness.soak=x"),
        "soak_plan_sto": lambda s: s.update(plan=[{"name": "a", "args": ["--sto", "/etc"]}]),
        "soak_plan_record": lambda s: s.update(
            plan=[{"name": "a", "args": ["--record-run-dir", "/etc/passwd"]}]),
        "soak_plan_help": lambda s: s.update(plan=[{"name": "a", "args": ["--help"]}]),
        "soak_store_gone": lambda s: s.update(store=str(tmp_path / "store-gone")),
    }
    places = {f"{{{name}}}": _soak_dir(tmp_path, name, edit) for name, edit in edits.items()}
    places["{soak_deep}"] = _soak_dir(tmp_path, "deep", lambda s: None,
                                      raw="[" * 100_000 + "]" * 100_000)
    fifo = tmp_path / "plan.fifo"
    os.mkfifo(fifo)
    huge = tmp_path / "huge.toml"
    with huge.open("wb") as f:
        f.truncate(16 * 1024 * 1024 + 1)
    with_file = tmp_path / "store-with-a-file"
    with_file.mkdir(exist_ok=True)
    (with_file / "soak").write_text("a file where the soak's folder goes")
    places.update({
        "{store_gone}": str(tmp_path / "store-gone"), "{store_soak_file}": str(with_file),
        "{plan_help}": _plan(tmp_path, "help.toml", _args("--help")),
        "{plan_h}": _plan(tmp_path, "h.toml", "[[entry]]\nname = 'a'\nargs = ['-h']\n"),
        "{plan_help_later}": _plan(tmp_path, "later.toml", _args("--rate", "5", "--help")),
        "{store}": str(tmp_path / "store"), "{fifo}": str(fifo), "{plan_huge}": str(huge),
        "{plan_sto}": _plan(tmp_path, "sto.toml", _args("--sto", "/etc")),
        "{plan_conf}": _plan(tmp_path, "conf.toml", _args("--conf", "x.toml")),
        "{plan_nodes}": _plan(tmp_path, "nodes.toml", _args("--nodes", "hosts.yaml")),
        "{plan_record}": _plan(tmp_path, "record.toml", _args("--record-run-dir", "/etc/x")),
        "{plan_list}": _plan(tmp_path, "list.toml", 'entry = ["a", "b"]\n'),
        "{plan_control}": _plan(tmp_path, "control.toml",
                                "[[entry]]\nname = \"a\\u0007b\"\nargs = []\n"),
    })
    return places


@pytest.mark.parametrize(("args", "message"), ROWS, ids=[" ".join(r[0]) for r in ROWS])
def test_hostile_soak_input_is_one_line_and_exit_2(tmp_path, args, message):
    places = materialize(tmp_path)
    before = digests(tmp_path / "store")
    run_row(tmp_path, args, message, places, env=NO_ENGINE)
    assert digests(tmp_path / "store") == before, "nothing in the store is written or deleted"


# -- effects: what --resume does to things the soak did not make ---------------------


def _resume(soak_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "elr_harness.cli", "soak", "--resume",
                           str(soak_dir)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **NO_ENGINE}, cwd=soak_dir)


def _gone_pid() -> int:
    """The pid of a process that has ended (nothing to signal, before or after)."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _resumable(tmp_path: Path, **current) -> Path:
    store = tmp_path / "store"
    soak_dir = store / "soak" / "20261125T100000"
    (soak_dir / "runs").mkdir(parents=True)
    state = _state(store)
    state["config"]["interrupt_grace_s"] = 1.0
    state["current"] = {"index": 0, "pid": _gone_pid(),
                        "marker": str(soak_dir / "runs" / "0000.run-dir"),
                        "started_at": "2026-11-25T10:00:00+00:00", **current}
    (soak_dir / "soak.json").write_text(json.dumps(state))
    return soak_dir


@pytest.fixture
def stranger():
    """A live process the soak did not start (after a reboot, its old pid is anyone's)."""
    proc = subprocess.Popen(["sleep", "300"])
    yield proc
    proc.kill()
    proc.wait()


@pytest.mark.parametrize("with_start_time", [False, True])
def test_resume_never_signals_a_process_that_is_not_its_run(tmp_path, stranger,
                                                            with_start_time):
    # even with the stranger's true start time recorded: its environment lacks the token
    recorded = {"start_time": start_time(stranger.pid), "token": secrets.token_hex(16)} \
        if with_start_time else {}
    soak_dir = _resumable(tmp_path, pid=stranger.pid, **recorded)
    done = _resume(soak_dir)
    assert "Traceback" not in done.stdout + done.stderr
    assert "soak ended" in done.stdout, done.stdout + done.stderr
    time.sleep(0.2)
    assert stranger.poll() is None, "the stranger is still alive"
    state = json.loads((soak_dir / "soak.json").read_text())
    [abandoned] = state["abandoned"]
    assert f"not signalled: pid {stranger.pid}" in abandoned["note"]
    assert state["current"] is None


def test_a_marker_outside_the_soak_is_neither_read_nor_deleted(tmp_path):
    precious_dir = tmp_path / "precious"
    (precious_dir / "runs").mkdir(parents=True)
    secret_run = tmp_path / "store" / "t" / "SECRET-RUN"
    secret_run.mkdir(parents=True)
    outside = precious_dir / "runs" / "0000.run-dir"  # the right name, the wrong folder
    outside.write_text(f"{secret_run}\n")
    target = precious_dir / "target.txt"
    target.write_text(f"{secret_run}\n")
    soak_dir = _resumable(tmp_path, marker=str(outside))
    before = digests(precious_dir)
    done = _resume(soak_dir)
    assert "soak ended" in done.stdout, done.stdout + done.stderr
    assert digests(precious_dir) == before, "nothing outside the soak's folder is deleted"
    text = (soak_dir / "soak.json").read_text()
    assert "SECRET-RUN" not in text, "nothing outside the soak's folder is read"
    assert json.loads(text)["abandoned"][0]["run_dir"] is None

    # a symlink in runs/ pointing out is not followed either
    soak_dir = _resumable(tmp_path / "again")
    (soak_dir / "runs" / "0000.run-dir").symlink_to(target)
    done = _resume(soak_dir)
    assert "soak ended" in done.stdout, done.stdout + done.stderr
    assert digests(precious_dir) == before
    assert "SECRET-RUN" not in (soak_dir / "soak.json").read_text()


def test_a_damaged_soak_json_leaves_the_soak_folder_as_it_was(tmp_path):
    soak_dir = _resumable(tmp_path)
    state = json.loads((soak_dir / "soak.json").read_text())
    state["config"]["kafka_versions"] = ["../../etc"]
    (soak_dir / "soak.json").write_text(json.dumps(state))
    (soak_dir / "runs" / "0000.run-dir").write_text("/etc\n")
    before = digests(soak_dir)
    done = _resume(soak_dir)
    assert done.returncode == 2 and "soak.json is damaged" in done.stderr, done.stderr
    assert digests(soak_dir) == before, "nothing written, nothing deleted"


def test_its_own_run_is_recognised_by_start_time_and_token():
    token = secrets.token_hex(16)
    child = subprocess.Popen(["sleep", "300"], env={**os.environ, TOKEN_ENV: token})
    try:
        # vfork lets Popen return while exec still builds the new environment
        deadline = time.monotonic() + 10
        while not Path(f"/proc/{child.pid}/environ").read_bytes():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        ours = {"pid": child.pid, "start_time": start_time(child.pid), "token": token}
        assert ours["start_time"] is not None
        assert is_our_child(ours) is None
        assert "no token" in is_our_child({**ours, "token": secrets.token_hex(16)})
        assert "another start time" in is_our_child({**ours, "start_time": 1})
    finally:
        child.kill()
        child.wait()


def test_a_run_dir_outside_the_store_is_not_trimmed_by_keep(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "history.parquet").mkdir(parents=True)
    (elsewhere / "keepme.txt").write_text("mine")
    (elsewhere / "results.json").write_text(json.dumps({"valid": True}))
    marker = tmp_path / "0000.run-dir"
    marker.write_text(str(elsewhere))
    log = tmp_path / "0000.log"
    log.write_text("")
    before = digests(elsewhere)
    record = run_record(planned_run(DEFAULT_PLAN, ("latest",), 3, 0), 0, marker, log, 1.0,
                        SoakConfig(keep="failing"), tmp_path / "store")
    assert digests(elsewhere) == before
    assert record["run_dir"] is None and record["status"] == "error"


def _junit_of(tmp_path: Path, nasty: str) -> ET.Element:
    run = {"index": 0, "entry": f"e{nasty}", "seed": 1, "kafka_version_requested": "latest",
           "kafka_version": None, "status": "error", "duration_s": 1.0, "error": nasty,
           "reproduce": "harness run", "log": "/x/0000.log"}
    state = {"runs": [run, copy.deepcopy({**run, "status": "invalid", "reason": nasty})],
             "started_at": "2026-11-25T10:00:00+00:00", "command": f"harness soak {nasty}"}
    write_junit(state, tmp_path / "junit.xml")
    return ET.parse(tmp_path / "junit.xml").getroot()


def test_control_characters_in_a_run_error_or_entry_name_keep_junit_xml_xml(tmp_path):
    root = _junit_of(tmp_path, "".join(chr(c) for c in range(32)))
    [error] = root.iter("error")
    assert error.get("message").startswith("\\x00\\x01") and "\\x1f" in error.get("message")
    assert "\t\n" in error.get("message"), "tab and newline are XML and stay"
    assert [c.get("classname")[:4] for c in root.iter("testcase")] == ["e\\x0"] * 2
    # a lone surrogate (JSON can carry one) or U+FFFE is no XML either, nor UTF-8
    root = _junit_of(tmp_path, "\ud800\ufffe")
    assert next(root.iter("error")).get("message") == "\\xd800\\xfffe"


def test_a_plan_names_no_reserved_flag_in_any_spelling():
    from elr_harness.soak.plan import reserved_flag

    assert reserved_flag("--sto=/etc") == "--store"
    assert reserved_flag("--record") == "--record-run-dir"
    assert reserved_flag("--nemesis") is None and reserved_flag("--") is None
    assert reserved_flag("kill") is None
    assert PlanEntry("a", ()).args == ()


def test_what_the_soak_itself_records_passes_the_resume_check(tmp_path):
    from elr_harness.cli.main import build_parser
    from elr_harness.soak.state import check_state

    store = tmp_path / "store"
    run_dir = store / "t" / "20261125T000000"
    run_dir.mkdir(parents=True)
    (run_dir / "test.json").write_text(json.dumps({"kafka_version": "4.4.0"}))
    (run_dir / "results.json").write_text(json.dumps({
        "valid": False, "reason": "lost",
        "anomalies": {"lost-write": {"count": 3, "bad": 3, "by_acks": {"all": 3}}}}))
    marker = tmp_path / "0000.run-dir"
    marker.write_text(str(run_dir))
    log = tmp_path / "0000.log"
    log.write_text("harness: \x00odd\n")
    planned = planned_run((PlanEntry("a", ("--nemesis", "kill")),), ("latest",), 1, 0)
    state = _state(store)
    state["runs"] = [run_record(planned, 1, marker, log, 9.0, SoakConfig(), store),
                     run_record(planned, 2, tmp_path / "none", log, 1.0, SoakConfig(), store)]
    assert [r["status"] for r in state["runs"]] == ["invalid", "error"]
    state["current"] = {"index": 2, "pid": 1234, "start_time": 5, "token": "ab" * 16,
                        "marker": "/s/runs/0002.run-dir", "started_at": "2026-11-25T10:00:00"}
    run_parser = build_parser()._subparsers._group_actions[0].choices["run"]
    check_state(json.loads(json.dumps(state)), run_parser)


_STUBBORN_CHILD = """
import pathlib, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)  # a run stuck in its teardown
said, marker, run_dir = map(pathlib.Path, sys.argv[1:4])
run_dir.mkdir(parents=True)
marker.write_text(str(run_dir))
said.write_text("started")
time.sleep(120)
"""

_DRIVER = """
import json, sys
from pathlib import Path
from elr_harness.soak.runner import Soak
soak_dir = Path(sys.argv[1])
class Stand(Soak):
    def child_argv(self, planned, marker):
        return [sys.executable, "-c", CHILD, str(soak_dir / "child.txt"), str(marker),
                str(Path(self.state["store"]) / "t" / f"run{planned.index}")]
    def _tear_down_leftovers(self):
        pass
sys.exit(Stand(soak_dir, json.loads((soak_dir / "state.json").read_text())).go())
"""


def test_its_own_stuck_run_is_recognised_killed_and_its_run_dir_kept(tmp_path):
    """The positive side: the child the soak started carries the token, so a
    resume after the soak was killed waits out the grace and kills it."""
    from elr_harness.soak.runner import Soak, _alive

    soak_dir = tmp_path / "store" / "soak" / "20261125T100000"
    soak_dir.mkdir(parents=True)
    state = _state(tmp_path / "store")
    state["used_s"] = 0.0
    state["config"].update(duration_s=600.0, interrupt_grace_s=1.0, progress_every_s=60.0)
    (soak_dir / "state.json").write_text(json.dumps(state))
    driver = subprocess.Popen([sys.executable, "-c", f"CHILD = {_STUBBORN_CHILD!r}\n{_DRIVER}",
                               str(soak_dir)], start_new_session=True)
    deadline = time.monotonic() + 60
    while not (soak_dir / "child.txt").is_file():
        assert time.monotonic() < deadline and driver.poll() is None
        time.sleep(0.1)
    driver.kill()
    driver.wait()
    state = json.loads((soak_dir / "soak.json").read_text())
    current = state["current"]
    assert current["start_time"] == start_time(current["pid"])
    assert is_our_child(current) is None, "soak.json names its own run by pid, time and token"
    stand = Soak(soak_dir, state)
    stand._tear_down_leftovers = lambda: None
    stand.abandon_current()
    deadline = time.monotonic() + 10
    # killed (a zombie until something reaps it, or gone)
    while start_time(current["pid"]) == current["start_time"] and _alive(current["pid"]):
        assert time.monotonic() < deadline, "the stuck run was not killed"
        time.sleep(0.1)
    [abandoned] = json.loads((soak_dir / "soak.json").read_text())["abandoned"]
    assert abandoned["run_dir"] == str(tmp_path / "store" / "t" / "run0")
    assert abandoned["note"] == "killed: still running 1 s after its interrupt"
    assert not (soak_dir / "runs" / "0000.run-dir").exists(), "its own marker is removed"
