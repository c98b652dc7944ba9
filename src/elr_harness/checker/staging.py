"""Where Spark sees a history: a folder of the checker's own, with plain names.

Spark takes a path for a pattern: Hadoop expands `*`, `?`, `[...]` and `{a,b}`,
so `harness check 'run*'` judged every run matching it together; Hadoop also
refuses a ':' and bytes that are not UTF-8. So Spark never sees a user's path.
The checker makes a fresh folder (mkdtemp) under a base whose path is plain,
holding symlinks with plain names to the history and to the folders the
conversion is written in and read from; Python alone touches the user's paths
(renames, the marker). The folder holds only symlinks, and is removed when the
check ends, on error and Ctrl-C too.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import tempfile
from pathlib import Path

from elr_harness.core.config import cache_dir
from elr_harness.core.errors import HarnessError

#: What a path handed to Spark may hold: no glob, no ':', ASCII only.
PLAIN_PATH = re.compile(r"^/[A-Za-z0-9._/+-]*$")


def is_plain(path: Path) -> bool:
    """True when no reader can take path for a pattern or choke on it."""
    return bool(PLAIN_PATH.match(str(path)))


def staging_base() -> Path:
    """The first of the cache's staging folder and the system's temporary folders
    whose absolute path is plain and that can be written."""
    for base in (cache_dir() / "staging", Path(tempfile.gettempdir()), Path("/tmp")):
        try:
            base.mkdir(parents=True, exist_ok=True)
            base = Path(os.path.realpath(base))  # Hadoop resolves symlinks on writes
        except OSError:
            continue
        if is_plain(base) and os.access(base, os.W_OK | os.X_OK):
            return base
    raise HarnessError("no folder with a plain path to stage the history in (set "
                       "ELR_HARNESS_CACHE or TMPDIR to a writable folder such as /tmp/elr)")


def writable_by_spark(folder: Path) -> Path | None:
    """The real path of folder (not there yet), when Spark can write there: Hadoop
    resolves symlinks when it sets permissions, and mangles bytes that are not
    UTF-8 (or not ASCII, in a C locale) on the way; None when it is not plain."""
    real = Path(os.path.realpath(folder.parent)) / folder.name
    return real if is_plain(real) else None


#: A staging folder's name: the prefix, the pid of the check that made it, a suffix.
_PREFIX = "elr-check-"
_NAME = re.compile(rf"^{_PREFIX}([0-9]+)-")
#: The file that marks a staging folder as the checker's own (only such are swept).
MARKER = ".elr-harness-staging"


def sweep_leftovers(base: Path) -> None:
    """Remove staging folders a killed check left (kill -9 skips close()): only
    folders named and marked as the checker's, whose process is gone."""
    try:
        entries = list(base.iterdir())
    except OSError:
        return
    for entry in entries:
        match = _NAME.match(entry.name)
        if not match or entry.is_symlink() or not (entry / MARKER).is_file():
            continue
        if not os.path.exists(f"/proc/{match[1]}"):
            shutil.rmtree(entry, ignore_errors=True)


class Staging:
    """A fresh folder of symlinks with plain names; close() removes it (links only)."""

    def __init__(self) -> None:
        base = staging_base()
        sweep_leftovers(base)
        self.root = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=base))
        (self.root / MARKER).touch()
        self._names = itertools.count()

    def link(self, target: Path, name: str = "") -> Path:
        """A plain path in the staging folder that leads to target (any characters)."""
        path = self.root / f"{name or 'link'}-{next(self._names)}"
        os.symlink(os.path.abspath(target), path)
        return path

    def folder(self, name: str) -> Path:
        """A new empty folder path (not made) inside the staging folder, for output
        that Spark cannot write where it belongs (see writable_by_spark)."""
        return self.root / f"{name}-{next(self._names)}"

    def close(self) -> None:
        # rmtree unlinks symlinks without following them: nothing of the user's goes
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Staging:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
