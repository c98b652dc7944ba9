"""The Spark checker on the rules of HISTORY.md version 2, one small hand-written
history each, written with the contract's fields only (no `partitions` on final
polls). Every test here failed on the checker before version 2."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from batched_checks import BatchedChecks
from checker_fixtures import TEST_CONFIG

from elr_harness.cli.main import main

pytestmark = pytest.mark.usefixtures("spark")

T = {"topic": "t", "partition": 0}
NODES = {f"broker-{i}": {"role": "broker", "id": i} for i in (1, 2, 3)}
TEST = {"topics": {"t": {"partitions": 1, "replication_factor": 3, "min_insync_replicas": 2,
                         "unclean_leader_election": False}},
        "elr_enabled": True, "idempotent_producers": False, "nodes": NODES, "seed": 1,
        "kafka_version": "4.1.1"}


class History:
    """A history built op by op, with index and time filled in."""

    def __init__(self) -> None:
        self.ops: list[dict] = []

    def add(self, **op) -> int:
        self.ops.append({"index": len(self.ops), "time": 1000 * (len(self.ops) + 1), **op})
        return len(self.ops) - 1

    def send(self, process: int, value: int, offset: int | None, acks: str = "all",
             outcome: str = "ok") -> None:
        self.add(process=process, type="invoke", f="send", **T, acks=acks, value=value)
        done = {"offset": offset} if outcome == "ok" else {"error": "NOT_ENOUGH_REPLICAS"}
        self.add(process=process, type=outcome, f="send", **T, acks=acks, value=value, **done)

    def poll(self, process: int, records: list, final: bool = False, seek: dict | None = None,
             hwm: int | None = None, outcome: str = "ok") -> int:
        extra = {"final": True} if final else {}
        self.add(process=process, type="invoke", f="poll", topic="t", **extra,
                 **({"seek": {str(p): o for p, o in seek.items()}} if seek else {}))
        done: dict = {"records": records} if outcome == "ok" else {"error": "BROKER_GONE"}
        if hwm is not None and outcome == "ok":
            done["high_watermark"] = {"0": hwm}
        return self.add(process=process, type=outcome, f="poll", topic="t", **extra, **done)

    def write(self, directory: Path, test: dict | None = TEST) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "history.jsonl").write_text(
            "".join(json.dumps(op) + "\n" for op in self.ops))
        if test is not None:
            (directory / "test.json").write_text(json.dumps(test))
        return directory


def _log(n: int) -> list[list[int]]:
    return [[0, o, o] for o in range(n)]


CHECKS = BatchedChecks()


#: the tests' histories judged in one Spark batch first (batched_checks.py)
_checked_together = CHECKS.fixture("_check", autouse=True)


def _check(directory: Path, test: dict | None = TEST) -> dict:
    return CHECKS.check_history(directory / "history.jsonl", test, TEST_CONFIG)


def _counts(results: dict) -> dict[str, int]:
    return {name: entry["count"] for name, entry in results["anomalies"].items()}


def _sent(n: int) -> History:
    h = History()
    for v in range(n):
        h.send(0, v, v)
    return h


def test_contract_only_final_polls_judge_a_clean_run_valid(tmp_path):
    h = _sent(4)
    h.poll(9, _log(4), final=True, seek={0: 0}, hwm=4)
    results = _check(h.write(tmp_path))
    assert results["valid"] is True and results["anomalies"] == {}
    assert results["checked"] == {"sends": 4, "polled_records": 0, "final_records": 4,
                                  "observations": 0, "replica_records": 0}


def test_contract_only_final_polls_find_an_acks_all_loss(tmp_path):
    h = _sent(4)
    h.poll(9, [[0, 0, 0], [0, 1, 1], [0, 2, 3]], final=True, seek={0: 0}, hwm=3)
    results = _check(h.write(tmp_path))
    assert results["valid"] is False and results["bad_anomaly_types"] == [
        "inconsistent-offset", "lost-write"]
    assert results["anomalies"]["lost-write"]["by_acks"] == {"all": 1, "1": 0, "0": 0}


def test_a_failed_then_retried_final_poll_leaves_the_read_complete(tmp_path):
    h = _sent(3)
    h.poll(9, [], final=True, seek={0: 0}, outcome="fail")
    h.poll(9, _log(3), final=True, seek={0: 0}, hwm=3)
    results = _check(h.write(tmp_path))
    assert results["valid"] is True, results["reason"]


def test_an_open_final_invoke_leaves_the_read_incomplete(tmp_path):
    h = _sent(3)
    h.poll(9, _log(3), final=True, seek={0: 0}, hwm=3)
    h.add(process=9, type="invoke", f="poll", topic="t", final=True)
    results = _check(h.write(tmp_path))
    assert results["valid"] == "unknown"
    assert results["stats"]["incomplete_partitions"] == ["t-0"]
    assert "never completed" in results["stats"]["incomplete_why"]["t-0"]


def test_on_an_incomplete_partition_a_loss_the_read_got_past_is_a_lost_write(tmp_path):
    """Offsets 0-5 acked; the final read stopped at offset 3 of a high watermark of
    6, without value 1: that one is lost (the read got past it), 4 and 5 unseen."""
    h = _sent(6)
    h.poll(9, [[0, 0, 0], [0, 2, 2], [0, 3, 3]], final=True, seek={0: 0}, hwm=6)
    results = _check(h.write(tmp_path))
    assert results["stats"]["incomplete_partitions"] == ["t-0"]
    assert results["anomalies"]["lost-write"]["by_acks"] == {"all": 1, "1": 0, "0": 0}
    assert results["anomalies"]["unseen"]["by_acks"] == {"all": 2, "1": 0, "0": 0}
    assert results["valid"] is False and results["bad_anomaly_types"] == ["lost-write"]


def test_a_read_of_a_middle_copy_of_a_duplicate_is_not_a_lost_committed_read(tmp_path):
    h = History()
    h.send(0, 7, 0, acks="1")
    h.poll(1, [[0, 1, 7]])
    h.poll(9, [[0, 0, 7], [0, 1, 7], [0, 2, 7]], final=True, seek={0: 0}, hwm=3)
    results = _check(h.write(tmp_path))
    assert _counts(results) == {"duplicate": 1}
    assert results["valid"] is True


def test_a_value_read_at_an_offset_the_final_log_does_not_hold_it_at_is_lost(tmp_path):
    h = History()
    h.send(0, 7, 0, acks="1")
    h.send(0, 8, 1, acks="1")
    h.poll(1, [[0, 0, 7], [0, 1, 8]])
    h.poll(9, [[0, 0, 8]], final=True, seek={0: 0}, hwm=1)
    results = _check(h.write(tmp_path))
    counts = _counts(results)
    assert counts["lost-committed-read"] == 2  # 7 gone, 8 moved from 1 to 0
    assert results["valid"] is False


def test_nonmonotonic_and_skipping_polls_count_once_per_poll(tmp_path):
    h = History()
    for p in (0, 1):
        for o in range(4):
            h.add(process=0, type="invoke", f="send", topic="t", partition=p, acks="all",
                  value=10 * p + o)
            h.add(process=0, type="ok", f="send", topic="t", partition=p, acks="all",
                  value=10 * p + o, offset=o)
    h.poll(1, [[0, 0, 0], [0, 1, 1], [1, 0, 10], [1, 1, 11]])
    back = h.poll(1, [[0, 0, 0], [1, 0, 10]])
    h.poll(2, [[0, 0, 0], [1, 0, 10]])
    skip = h.poll(2, [[0, 3, 3], [1, 3, 13]])
    h.poll(9, [[p, o, 10 * p + o] for p in (0, 1) for o in range(4)], final=True,
           seek={0: 0, 1: 0}, hwm=None)
    test = {**TEST, "topics": {"t": {**TEST["topics"]["t"], "partitions": 2}}}
    results = _check(h.write(tmp_path, test), test)
    assert _counts(results) == {"nonmonotonic-poll": 1, "poll-skip": 1}
    assert back in results["anomalies"]["nonmonotonic-poll"]["examples"][0]["ops"]
    example = results["anomalies"]["poll-skip"]["examples"][0]
    # the example names the final poll that holds the offsets skipped over
    assert skip in example["ops"] and len(h.ops) - 1 in example["ops"]


def test_realtime_order_example_names_the_final_poll(tmp_path):
    h = History()
    h.send(0, 1, 1)
    h.send(1, 2, 0)
    final = h.poll(9, [[0, 0, 2], [0, 1, 1]], final=True, seek={0: 0}, hwm=2)
    results = _check(h.write(tmp_path))
    assert _counts(results) == {"realtime-order": 1}
    assert final in results["anomalies"]["realtime-order"]["examples"][0]["ops"]


def test_an_acks_0_send_is_never_the_earlier_write_of_a_realtime_order(tmp_path):
    """docs/CHECKING.md: an acks=0 ok only says the bytes left the client."""
    h = History()
    h.send(0, 1, None, acks="0")
    h.send(1, 2, 0)
    h.poll(9, [[0, 0, 2], [0, 1, 1]], final=True, seek={0: 0}, hwm=2)
    results = _check(h.write(tmp_path))
    assert results["valid"] is True and results["anomalies"] == {}


def test_observer_anomalies_of_version_2(tmp_path):
    h = _sent(2)
    observe = {"process": -2, "type": "ok", "f": "observe", **T, "leader_epoch": 3}
    fenced = h.add(**observe, leader=2, isr=[2], elr=[], last_known_elr=[], fenced=[2])
    # fine; its ELR not said, so no pair around it is judged by the ELR's upkeep
    h.add(**observe, leader=1, isr=[1], elr=None, last_known_elr=[], fenced=[2])
    bad_lkelr = h.add(**observe, leader=-1, isr=[], elr=[], last_known_elr=[3, 7])
    h.add(**observe, leader=-1, isr=[], elr=None, last_known_elr=[-1])  # ELR unknown: fine
    h.add(**observe, leader=-1, isr=[], elr=[], last_known_elr=[3])  # a broker: fine
    h.poll(9, _log(2), final=True, seek={0: 0}, hwm=2)
    results = _check(h.write(tmp_path))
    assert _counts(results) == {"fenced-leader": 1, "last-known-elr-invalid": 1}
    assert results["anomalies"]["fenced-leader"]["examples"][0]["ops"] == [fenced]
    assert results["anomalies"]["last-known-elr-invalid"]["examples"][0]["ops"] == [bad_lkelr]
    assert results["valid"] is False


def test_replicas_that_differ_below_their_high_watermark_diverge(tmp_path):
    h = _sent(4)
    h.poll(9, _log(4), final=True, seek={0: 0}, hwm=4)
    line = {"process": -3, "type": "ok", "f": "replica", **T}
    a = h.add(**line, node="broker-1", broker=1, high_watermark=4, log_end_offset=4,
              records=[[0, 0, 1], [1, 1, 1], [2, 2, 1], [3, 3, 2]])
    b = h.add(**line, node="broker-2", broker=2, high_watermark=3, log_end_offset=4,
              records=[[0, 0, 1], [2, 9, 1], [3, 3, 2]])
    h.add(**line, node="broker-3", broker=3, log_end_offset=1, records=[[0, 5, 1]])  # no hwm
    results = _check(h.write(tmp_path))
    assert _counts(results) == {"replica-divergence": 2}  # offsets 1 (missing) and 2
    assert results["checked"]["replica_records"] == 8
    assert all(e["ops"] == [a, b] for e in results["anomalies"]["replica-divergence"]["examples"])


def test_a_page_cache_loss_that_never_completed_counts_against_the_budget(tmp_path):
    h = History()
    observe = {"process": -2, "type": "ok", "f": "observe", **T, "leader_epoch": 1,
               "elr": [], "last_known_elr": []}
    h.add(**observe, leader=1, isr=[1, 2, 3])
    h.send(0, 0, 0)
    loss = {"process": -1, "f": "fault", "fault": "page-cache-loss"}
    h.add(**loss, type="invoke", nodes=["broker-1"])
    h.add(**loss, type="ok", nodes=["broker-1"])
    h.add(**loss, type="invoke", nodes=["broker-2"])  # the harness died here
    h.poll(9, [], final=True, seek={0: 0}, hwm=0)
    results = _check(h.write(tmp_path))
    assert results["guarantee"]["t-0"]["page_cache_losses"] == 2
    assert results["guarantee"]["t-0"]["within_budget"] is False
    assert results["valid"] is True  # the acks=all loss is beyond the budget: expected


@pytest.mark.parametrize("line, number, words", [
    ("[]", 3, "not an object"),
    ('{"index": 2, "time": 3, "process": 0, "type": "ok", "f": "send", '
     '"value": 99999999999999999999}', 3, "64-bit"),
    ('{"index": 2, "time": 3.5, "process": 0, "type": "ok", "f": "send"}', 3, "must be an int"),
])
def test_a_malformed_line_is_named_by_its_number_blank_lines_counted(tmp_path, capsys, line,
                                                                      number, words):
    h = _sent(1)
    h.poll(9, _log(1), final=True, seek={0: 0}, hwm=1)
    text = "".join(json.dumps(op) + "\n" for op in h.ops)
    lines = text.splitlines(keepends=True)
    # a blank line before it, and valid lines after it: it is not a cut-short last line
    (tmp_path / "history.jsonl").write_text(lines[0] + "\n" + line + "\n" + "".join(lines[1:]))
    assert main(["check", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"line {number} " in err and words in err and "Traceback" not in err


def test_a_line_of_json_whitespace_is_blank_and_any_other_character_is_not(tmp_path, capsys):
    """Found by the property test against the reference: Spark's trim() strips only
    spaces, so a tab-only line was called malformed. Blank is JSON's whitespace."""
    h = _sent(1)
    h.poll(9, _log(1), final=True, seek={0: 0}, hwm=1)
    lines = "".join(json.dumps(op) + "\n" for op in h.ops).splitlines(keepends=True)
    (tmp_path / "history.jsonl").write_text(lines[0] + "\t\n \t \n" + "".join(lines[1:]))
    assert main(["check", str(tmp_path)]) == 0
    shutil.rmtree(tmp_path / "history.parquet")
    (tmp_path / "history.jsonl").write_text(lines[0] + "\t\n\v\n" + "".join(lines[1:]))
    assert main(["check", str(tmp_path)]) == 2
    assert "line 3 " in capsys.readouterr().err


def test_a_last_line_that_is_json_but_not_an_object_is_malformed_not_cut_short(tmp_path,
                                                                                capsys):
    h = _sent(1)
    h.poll(9, _log(1), final=True, seek={0: 0}, hwm=1)
    h.write(tmp_path)
    with (tmp_path / "history.jsonl").open("a") as f:
        f.write("\n[]\n\n")
    assert main(["check", str(tmp_path)]) == 2
    assert f"line {len(h.ops) + 2} " in capsys.readouterr().err


def _comparable(results: dict) -> dict:
    results = json.loads(json.dumps(results))
    results["stats"].pop("checker_seconds")
    return results


def test_every_spelling_of_a_run_gives_the_same_results_from_any_directory(tmp_path,
                                                                         monkeypatch):
    """The blind checker: a relative path reached Spark's catalog as a folder of its
    warehouse, the events table was empty and a lossy run was judged clean."""
    h = _sent(4)
    h.poll(9, [[0, 0, 0], [0, 1, 1], [0, 2, 3]], final=True, seek={0: 0}, hwm=3)
    run = h.write(tmp_path / "store" / "scenario" / "20260101T000000")
    (tmp_path / "store" / "latest").symlink_to(Path("scenario") / "20260101T000000")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    seen = []
    for cwd, target in [(tmp_path, "store/latest"), (run, "."), (run.parent, run.name),
                        (run.parent, f"{run.name}/history.jsonl"), (elsewhere, str(run)),
                        (elsewhere, os.path.relpath(run, elsewhere))]:
        monkeypatch.chdir(cwd)
        shutil.rmtree(run / "history.parquet", ignore_errors=True)
        assert main(["check", target]) == 1, (cwd, target)
        seen.append(_comparable(json.loads((run / "results.json").read_text())))
    assert all(r == seen[0] for r in seen)
    assert seen[0]["anomalies"]["lost-write"]["by_acks"]["all"] == 1
    assert seen[0]["checked"]["sends"] == 4


def test_a_check_that_would_not_read_the_whole_history_is_an_error(tmp_path, capsys):
    """The checks count what they read and compare it with the JSON pass: an events
    table that lost its files is a harness error, never a verdict."""
    h = _sent(4)
    h.poll(9, _log(4), final=True, seek={0: 0}, hwm=4)
    h.write(tmp_path)
    assert main(["check", str(tmp_path)]) == 0
    for part in (tmp_path / "history.parquet" / "events").glob("*.parquet"):
        part.unlink()
    assert main(["check", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "sends: 0 in the checks' tables, 4 in the history" in err
