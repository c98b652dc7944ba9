"""How a run ends when its end goes wrong: test.json still says how it ended
(run/phases.py, _close_and_tear_down), and a Ctrl-C while the workload starts its
clients stops the ones it started (workloads/client_thread.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from elr_harness.run.phases import Phases, _close_and_tear_down, write_played_schedule
from elr_harness.workloads.client_thread import ClientThread


class _Part:
    """The history's recorder (close) or the cluster (down): its one call may raise;
    it remembers being called."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.error, self.called = error, False

    def _call(self) -> None:
        self.called = True
        if self.error is not None:
            raise self.error

    close = down = _call


def _spec(keep: bool = False):
    return SimpleNamespace(run=SimpleNamespace(keep_cluster=keep))


def test_a_history_that_cannot_be_closed_is_the_runs_error_and_the_cluster_still_goes():
    recorder, cluster, outcome = _Part(OSError("No space left")), _Part(None), {}
    assert _close_and_tear_down(recorder, cluster, _spec(), Phases(), outcome) is False
    assert recorder.called and cluster.called
    assert outcome["errors"] == ["history: No space left"]
    assert outcome["error"] == "the history could not be closed: No space left"


def test_a_ctrl_c_during_the_close_still_removes_the_cluster_and_says_so():
    recorder, cluster, outcome = _Part(KeyboardInterrupt()), _Part(None), {}
    assert _close_and_tear_down(recorder, cluster, _spec(), Phases(), outcome) is True
    assert cluster.called
    assert outcome == {"errors": ["history: interrupted"]}


def test_a_failed_teardown_is_noted_and_is_not_the_runs_error():
    recorder, cluster, outcome = _Part(None), _Part(RuntimeError("docker gone")), {}
    assert _close_and_tear_down(recorder, cluster, _spec(), Phases(), outcome) is False
    assert outcome == {"errors": ["teardown: docker gone"]}


def test_a_kept_cluster_is_left_alone():
    recorder, cluster, outcome = _Part(None), _Part(None), {}
    assert _close_and_tear_down(recorder, cluster, _spec(keep=True), Phases(), outcome) is False
    assert recorder.called and not cluster.called and outcome == {}


@pytest.mark.parametrize("started", [False, True])
def test_a_client_is_joined_whether_or_not_it_was_started(started):
    class Quick(ClientThread):
        def _run(self) -> None:
            pass

    client = Quick("c")
    if started:
        client.start()
    assert client.join(5) is True


def test_each_phase_is_recorded_with_its_start_on_the_historys_clock(monkeypatch):
    """test.json's phases: every phase entered, in order, its start measured from the
    history's time 0 (the recorder's origin) and its duration; the one in course
    ends when the run does."""
    import elr_harness.run.phases as run

    now = iter([100.0, 101.0, 126.5, 186.5, 187.0, 188.25, 200.0, 203.5]).__next__
    monkeypatch.setattr(run.time, "monotonic", now)
    phases = Phases()  # 100.0
    phases.origin = 100.5  # the recorder opened the history half a second later
    for name in ("setup", "workload + nemesis", "heal", "final reads", "collect",
                 "teardown"):
        phases.enter(name)  # 101.0, 126.5, 186.5, 187.0, 188.25, 200.0
    assert [p["name"] for p in phases.recorded()] == [
        "setup", "workload + nemesis", "heal", "final reads", "collect"]
    phases.end()  # 203.5
    assert phases.recorded() == [
        {"name": "setup", "start_s": 0.5, "duration_s": 25.5},
        {"name": "workload + nemesis", "start_s": 26.0, "duration_s": 60.0},
        {"name": "heal", "start_s": 86.0, "duration_s": 0.5},
        {"name": "final reads", "start_s": 86.5, "duration_s": 1.25},
        {"name": "collect", "start_s": 87.75, "duration_s": 11.75},
        {"name": "teardown", "start_s": 99.5, "duration_s": 3.5}]
    phases.end()  # nothing in course: nothing changes
    assert phases.recorded()[-1]["duration_s"] == 3.5


def test_a_schedule_toml_that_cannot_be_written_is_noted_and_the_run_goes_on(tmp_path):
    """The replay file is written between the workload and the final reads: a write
    that fails (here its folder is a file) is the run's noted error, not an exception
    that would skip the heal and the final reads."""
    not_a_dir = tmp_path / "run"
    not_a_dir.write_text("")
    outcome: dict = {}
    record = {"steps": [], "names": {}}
    plan = SimpleNamespace(played_file=None)
    write_played_schedule(not_a_dir, plan, {"schedule": record}, outcome)
    [error] = outcome["errors"]
    assert error.startswith("schedule.toml: ")
    # nothing to write without a schedule, and a good folder gets the file
    write_played_schedule(tmp_path, plan, {}, outcome)
    assert not (tmp_path / "schedule.toml").exists()
    write_played_schedule(tmp_path, plan, {"schedule": record}, outcome)
    assert (tmp_path / "schedule.toml").is_file() and len(outcome["errors"]) == 1


def test_a_ctrl_c_during_the_workload_is_in_test_json_before_the_heal_begins(
        tmp_path, monkeypatch):
    """A run interrupted mid-workload says so in test.json before its heal, collect
    and teardown, which can outlast whoever waits for them: a resumed soak kills a
    run that has not ended after its grace, and that run must still read as
    interrupted, not as one whose end was never recorded (it once read so in CI)."""
    import json

    import elr_harness.nemesis.injector as injector
    import elr_harness.run.phases as run
    import elr_harness.workloads.observer as observer
    import elr_harness.workloads.workload as workload

    class Interrupted:
        def start(self, *args, **kwargs) -> None:
            raise KeyboardInterrupt

        def stop(self) -> None:
            pass

    monkeypatch.setattr(workload, "Workload", Interrupted)
    monkeypatch.setattr(observer, "ObserverLoop",
                        lambda *a: SimpleNamespace(start=lambda: None))
    monkeypatch.setattr(injector, "FaultInjector",
                        lambda *a: SimpleNamespace(stale_brokers=set()))
    seen: list[dict] = []

    def heal_and_finish(*args, **kwargs) -> None:
        seen.append(json.loads((tmp_path / "test.json").read_text()))

    monkeypatch.setattr(run, "_heal_and_finish", heal_and_finish)
    cluster = SimpleNamespace(up=lambda: None, distribution=None, specs=[],
                              create_topic=lambda t: None, bootstrap="b:9092",
                              observer=lambda *a, **k: None)
    spec = SimpleNamespace(
        cli_args=["run"], topics=[],
        cluster=SimpleNamespace(kafka_dist=None),
        workload=SimpleNamespace(observe_timeout_s=1.0, observe_interval_s=1.0))
    test = {"config": {"cluster": {}}}
    assert run._run_phases(spec, None, cluster, None, None, Phases(), {}, test,
                           tmp_path, lambda: None) is True
    [at_heal] = seen
    assert at_heal["interrupted"] is True and "ended_at" not in at_heal
    # a test.json that cannot be written then does not cost the heal and collect
    def full_disk(path, data) -> None:
        if data.get("interrupted"):
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(run, "write_json", full_disk)
    monkeypatch.setattr(run, "_heal_and_finish", lambda *a, **k: seen.append("healed"))
    test.pop("interrupted")
    assert run._run_phases(spec, None, cluster, None, None, Phases(), {}, test,
                           tmp_path, lambda: None) is True
    assert seen[-1] == "healed"
