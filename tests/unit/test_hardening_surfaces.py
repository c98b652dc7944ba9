"""#63's surfaces, as bad-input rows (exit 2, one line naming the input, no
traceback, nothing made in the working folder; tests/cli_rows.py): schedule files,
what a replay or a shrink reads of a run, resume files, `harness report` over a
results.json it cannot read, the score's flags, a kind aimed at the other class of
node. benchmarks/bad_input_sweep.py counts ROWS with the other modules' rows.

Each row also leaves every file under its folder as it was: a report.html written
before, a shrink.json, a run's schedule.toml (a FIFO or a link is compared as what
it is)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_rows import run_row_changing_nothing

NO_ENGINE = "unix:///nonexistent/docker.sock"

_STEP = '[[step]]\nfault = "kill"\ntarget = "follower"\n'

ROWS = [
    # schedule files: read as every settings file is
    (["run", "--schedule", "{sched_fifo}"], "--schedule {sched_fifo}: not a regular file"),
    (["run", "--schedule", "{sched_zero}"], "--schedule {sched_zero}: not a regular file"),
    (["run", "--schedule", "{sched_bom}"], "--schedule {sched_bom}: starts with a UTF-8 "
                                           "byte order mark (BOM)"),
    (["run", "--schedule", "{sched_big}"], "more than the 16777216 accepted"),
    (["run", "--schedule", "{sched_deep}"], "--schedule {sched_deep}: not TOML (nested too "
                                            "deep)"),
    (["run", "--schedule", "{sched_many}"], "--schedule {sched_many}: 50001 steps, more "
                                            "than the 50000 a schedule may hold"),
    (["run", "--schedule", "{sched_wrong_class}"], "controller-kill acts on a controller: aim "
                                                   "it at `active-controller` or a "
                                                   "controller node (controller-N), not "
                                                   "'follower'"),
    # a report never replaces the last good one
    (["report", "{run_cut}"], "{run_cut}/results.json cannot be read"),
    (["report", "{run_list}"], "{run_list}/results.json is not a JSON object; report.html "
                               "is left as it was"),
    (["report", "{run_fifo}"], "{run_fifo}/results.json cannot be read: not a regular file; "
                               "report.html is left as it was"),
    (["report", "{run_zero}"], "{run_zero}/results.json cannot be read: not a regular file"),
    (["report", "{run_maybe}"], "{run_maybe}/results.json: `valid` is 'maybe', not true, "
                                "false or \"unknown\""),
    (["report", "{run_text_count}"], "{run_text_count}/results.json: "
                                     "`coverage.elr-not-empty` has no count of 0 or more"),
    # what a replay or a shrink reads of a run
    (["replay", "{run_bad_schedule}"], "replay: {run_bad_schedule}/schedule.toml: not TOML"),
    (["replay", "{run_passwd}"], "replay: {run_passwd}/schedule.toml: not TOML"),
    (["replay", "{run_null_args}"], "replay: {run_null_args}/test.json: `cli_args` is not "
                                    "the list of words"),
    (["replay", "{run_no_release}"], "replay: {run_no_release}/test.json: neither "
                                     "`kafka_dist`"),
    (["shrink", "{run_string_bad}"], "shrink: {run_string_bad}/results.json: "
                                     "`bad_anomaly_types` is not a list of anomaly names"),
    # resume files
    (["shrink", "--resume", "{shrink_missing}"], "shrink.json: `run_dir` is missing"),
    (["shrink", "--resume", "{shrink_k}"], "shrink.json: `k` is not a count from 1 to 20"),
    (["mutants", "score", "--resume", "{score_empty}"], "score.json: `mutants` names no "
                                                        "mutant"),
    # the score's flags
    (["mutants", "score", "--mutant", ""], "--mutant: '' names no mutant"),
    (["mutants", "score", "--mutant", ","], "--mutant: ',' names no mutant"),
    (["mutants", "score", "--kafka-version", "4" * 5000], "--kafka-version: 5000 characters, "
                                                          "more than 4096"),
    (["mutants", "score", "--seed", "1" * 30], "--seed: '111111111111111111111111111111' is "
                                               "not a seed"),
]


def _run(root: Path, name: str, results: object | str | None = None,
         schedule: str | None = _STEP, test: dict | None = None) -> Path:
    """A run folder: test.json, schedule.toml, a results.json (a dict, or raw text),
    and a report.html the harness wrote before."""
    from elr_harness.report.atomic import REPORT_GENERATOR

    run = root / "runs" / name
    run.mkdir(parents=True)
    (run / "test.json").write_text(json.dumps(test or {
        "cli_args": ["run", "--nemesis", "kill"], "kafka_version": "4.4.0",
        "test": "kill", "seed": 1}))
    if schedule is not None:
        (run / "schedule.toml").write_text(schedule)
    good = {"valid": True, "reason": "valid", "anomalies": {}, "bad_anomaly_types": [],
            "anomaly_types": [], "coverage": {}}
    if results is not None:
        text = results if isinstance(results, str) else json.dumps({**good, **results})
        (run / "results.json").write_text(text)
    (run / "report.html").write_text(f"<!DOCTYPE html>\n<html><head>{REPORT_GENERATOR}</head>"
                                     "<body>the last good report: VALID</body></html>\n")
    return run


def materialize(tmp_path: Path) -> dict[str, str]:
    """The files every row of ROWS names."""
    files = tmp_path / "files"
    files.mkdir(parents=True, exist_ok=True)
    places: dict[str, str] = {}

    def place(key: str, path: Path) -> None:
        places["{" + key + "}"] = str(path)

    os.mkfifo(files / "fifo.toml")
    place("sched_fifo", files / "fifo.toml")
    (files / "zero.toml").symlink_to("/dev/zero")
    place("sched_zero", files / "zero.toml")
    (files / "bom.toml").write_bytes(b"\xef\xbb\xbf" + _STEP.encode())
    place("sched_bom", files / "bom.toml")
    with (files / "big.toml").open("w") as big:
        big.write(_STEP + "# " + "x" * (16 * 1024 * 1024) + "\n")
    place("sched_big", files / "big.toml")
    (files / "deep.toml").write_text("help = " + "[" * 5000 + "]" * 5000 + "\n" + _STEP)
    place("sched_deep", files / "deep.toml")
    (files / "many.toml").write_text("".join(
        f'[[step]]\nname = "s{i}"\nuntil = "isr full"\nwithin_s = 1\n' for i in range(50_001)))
    place("sched_many", files / "many.toml")
    (files / "wrong-class.toml").write_text('[[step]]\nfault = "controller-kill"\n'
                                            'target = "follower"\n')
    place("sched_wrong_class", files / "wrong-class.toml")

    good = json.dumps({"valid": True, "reason": "valid", "anomalies": {}})
    place("run_cut", _run(tmp_path, "cut", good[:len(good) // 2]))
    place("run_list", _run(tmp_path, "list", "[]"))
    fifo = _run(tmp_path, "fifo")
    os.mkfifo(fifo / "results.json")
    place("run_fifo", fifo)
    zero = _run(tmp_path, "zero")
    (zero / "results.json").symlink_to("/dev/zero")
    place("run_zero", zero)
    place("run_maybe", _run(tmp_path, "maybe", {"valid": "maybe"}))
    place("run_text_count", _run(tmp_path, "text-count",
                                 {"coverage": {"elr-not-empty": {"count": "7"}}}))
    place("run_bad_schedule", _run(tmp_path, "bad-schedule", {}, schedule="[[step]\n"))
    passwd = _run(tmp_path, "passwd", {}, schedule=None)
    (passwd / "schedule.toml").symlink_to("/etc/passwd")
    place("run_passwd", passwd)
    place("run_null_args", _run(tmp_path, "null-args", {}, test={
        "cli_args": ["run", None, {}], "kafka_version": "4.4.0"}))
    place("run_no_release", _run(tmp_path, "no-release", {}, test={"cli_args": ["run"]}))
    place("run_string_bad", _run(tmp_path, "string-bad", {
        "valid": False, "bad_anomaly_types": "lost-write"}))

    for name, state in (("missing", {"shrink_version": 1}),
                        ("k", {"shrink_version": 1, "run_dir": "/r", "bad": ["lost-write"],
                               "anomaly": "lost-write", "k": "2"})):
        folder = tmp_path / "shrinks" / name
        folder.mkdir(parents=True)
        (folder / "shrink.json").write_text(json.dumps(state))
        place(f"shrink_{name}", folder)
    score = tmp_path / "scores" / "empty"
    score.mkdir(parents=True)
    (score / "score.json").write_text(json.dumps({
        "score_version": 2, "kafka_version": "4.4.0", "mutants": [], "seed": 0,
        "cluster_name": "elr-mutants", "plan": [], "cells": {}}))
    place("score_empty", score)
    return places


@pytest.mark.parametrize(("args", "words"), ROWS,
                         ids=[" ".join(a)[:60] for a, _ in ROWS])
def test_bad_input_is_one_line_and_changes_nothing(tmp_path, args, words):
    run_row_changing_nothing(tmp_path, args, words, materialize(tmp_path),
                             env={"DOCKER_HOST": NO_ENGINE})
