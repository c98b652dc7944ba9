"""Replacing a generated page atomically, so a reader never sees half of it."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def write_atomically(path: Path, text: str) -> None:
    """Write beside the target, then rename, so the old page stays until the new is whole."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def may_replace(path: Path, is_ours: Callable[[bytes, bytes], bool]) -> bool:
    """A generated page may be (re)written: absent, or a regular file (no symlink)
    whose first and last 4 KiB `is_ours(head, tail)` recognises as the harness's.
    A user's page, a link or a folder is never replaced."""
    if not os.path.lexists(path):
        return True
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with open(path, "rb") as page:
            head = page.read(4096)
            page.seek(max(0, page.seek(0, os.SEEK_END) - 4096))
            tail = page.read()
    except OSError:
        return False
    return is_ours(head, tail)
