"""A run writes only what is its own (#31): store/latest is replaced only when it
is the harness's link, and --record-run-dir (the soak's marker) never
overwrites a file that is there."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_rows import digests, run_row

from harness.core.errors import BadInput
from harness.store import check_store, new_run_dir

NO_ENGINE = "unix:///nonexistent/no-engine.sock"

ROWS = [
    (["run", "--nemesis", "none", "--store", "{store_latest_file}"],
     "--store {store_latest_file}: its 'latest' is a file or folder of yours"),
    (["run", "--nemesis", "none", "--store", "{store_latest_dir}"],
     "--store {store_latest_dir}: its 'latest' is a file or folder of yours"),
    (["run", "--nemesis", "none", "--record-run-dir", "{mine}/notes.run-dir"],
     "--record-run-dir {mine}/notes.run-dir: already exists (never overwritten)"),
    (["run", "--nemesis", "none", "--record-run-dir", "{mine}/passwd"],
     "--record-run-dir {mine}/passwd: not a soak's marker"),
]


def materialize(tmp_path: Path) -> dict[str, str]:
    """A store whose 'latest' is a user's file, one where it is a folder, and a
    folder of the user's with a file that looks like a marker."""
    latest_file = tmp_path / "store-with-file"
    latest_file.mkdir()
    (latest_file / "latest").write_text("my notes\n")
    latest_dir = tmp_path / "store-with-dir"
    (latest_dir / "latest").mkdir(parents=True)
    (latest_dir / "latest" / "keep.txt").write_text("mine\n")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.run-dir").write_text("my text\n")
    (mine / "passwd").write_text("root:x:0:0\n")
    return {"{store_latest_file}": str(latest_file), "{store_latest_dir}": str(latest_dir),
            "{mine}": str(mine)}


@pytest.mark.parametrize("args, message", ROWS, ids=[" ".join(a)[-40:] for a, _ in ROWS])
def test_a_run_refuses_to_write_over_what_is_not_its_own(tmp_path, args, message):
    places = materialize(tmp_path)
    before = digests(tmp_path)
    run_row(tmp_path, args, message, places, env={"DOCKER_HOST": NO_ENGINE})
    after = digests(tmp_path)
    after.pop(str(tmp_path / "cwd"))
    assert after == before


def test_latest_is_moved_only_when_it_is_the_harness_link(tmp_path):
    store = tmp_path / "store"
    first = new_run_dir(store, "t")
    assert (store / "latest").resolve() == first
    second = new_run_dir(store, "t2")
    assert (store / "latest").resolve() == second
    (store / "latest").unlink()
    (store / "latest").write_text("mine\n")
    with pytest.raises(BadInput, match="its 'latest' is a file or folder of yours"):
        check_store(store)
    new_run_dir(store, "t3")  # even if asked, a user's file stays
    assert (store / "latest").read_text() == "mine\n"
