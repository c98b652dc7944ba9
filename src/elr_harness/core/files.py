"""Reading a file a user named, without trusting it.

Every file the harness reads on a user's word (a --config file, a nodes file, a
soak plan, soak.json, test.json, results.json) goes through here: a regular
file only (a FIFO would hang, /dev/zero would fill memory), a size bound, and
for JSON a bound on nesting depth (Python's parser recurses and would raise
RecursionError). Each failure is one BadInput line naming the file.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import stat
from pathlib import Path
from typing import Any

from elr_harness.core.errors import BadInput

#: Largest settings-like file read whole (--config, nodes file, plan, test.json,
#: results.json, soak.json): far above any real one, far below a memory problem.
MAX_SETTINGS_BYTES = 16 * 1024 * 1024
#: Deepest nesting of JSON accepted in such a file, or in one history line.
MAX_JSON_DEPTH = 64
#: The widest integer such a file holds: the harness writes none beyond 64 bits
#: (Kafka's offsets, ids and times are int64), and a wider one (10**400) breaks
#: every reader that makes it a float.
MAX_JSON_INT = 2**64


def os_reason(err: OSError) -> str:
    """An OSError's reason in a person's words: the system's text, but a symlink
    loop said as one (the system calls it "too many levels of symbolic links")."""
    if err.errno == errno.ELOOP:
        return "a symlink loop: too many levels of symbolic links"
    return err.strerror or str(err)


#: path_problem's words for a path that is not there: the callers that accept an
#: absent path (it is made later, or has its own message) compare with this.
MISSING = "does not exist"


def path_problem(path: Path) -> str | None:
    """Why a path a user named cannot be followed, in words (it does not exist, a
    symlink that loops or leads nowhere, no permission), or None when it can.
    Path.exists() says False for all of these alike."""
    try:
        os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            return f"a symlink to {os.readlink(path)[:120]!r}, which does not exist"
        return MISSING
    except (OSError, ValueError) as err:
        return os_reason(err) if isinstance(err, OSError) else str(err)
    return None


def read_bytes(path: Path, what: str, max_bytes: int = MAX_SETTINGS_BYTES) -> bytes:
    """A regular file's bytes, at most max_bytes; BadInput(`what: why`) otherwise.

    Opened without blocking (a FIFO answers at once instead of waiting for a
    writer) and checked with fstat on the open descriptor, so a path swapped
    between a check and the open cannot slip through.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise BadInput(f"{what}: no such file") from None
    except OSError as err:
        raise BadInput(f"{what}: cannot read it ({os_reason(err)})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file"
            raise BadInput(f"{what}: {kind}")
        if info.st_size > max_bytes:
            raise BadInput(f"{what}: {info.st_size} bytes, more than the "
                           f"{max_bytes} accepted")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise BadInput(f"{what}: more than the {max_bytes} bytes accepted")
        return b"".join(chunks)
    except OSError as err:
        raise BadInput(f"{what}: cannot read it ({os_reason(err)})") from None
    finally:
        os.close(fd)


#: The byte order mark some editors put first in a UTF-8 file: TOML and JSON allow
#: none, and the parsers' words for it ("Invalid statement at line 1, column 1")
#: do not say what it is.
UTF8_BOM = b"\xef\xbb\xbf"


def read_text(path: Path, what: str, max_bytes: int = MAX_SETTINGS_BYTES) -> str:
    """read_bytes, decoded as UTF-8 (BadInput when it is not, or starts with a BOM)."""
    return text_of(read_bytes(path, what, max_bytes), what)


def text_of(data: bytes, what: str) -> str:
    """A settings file's bytes decoded as UTF-8; BadInput when they are not, or
    start with a BOM."""
    if data.startswith(UTF8_BOM):
        raise BadInput(f"{what}: starts with a UTF-8 byte order mark (BOM), which a "
                       "settings file may not hold; save it as UTF-8 without one")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise BadInput(f"{what}: not UTF-8 text (byte {err.start})") from None


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


def json_depth(text: str, limit: int = MAX_JSON_DEPTH) -> int:
    """How deep JSON text nests (strings skipped), counted only up to limit + 1."""
    depth = deepest = 0
    for match in _BRACKET.finditer(_JSON_STRING.sub("", text)):
        if match[0] in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    break
        else:
            depth -= 1
    return deepest


class _WideInt(ValueError):
    """An integer of the JSON text wider than MAX_JSON_INT."""


def _bounded_int(digits: str) -> int:
    """An integer of the JSON text, refused beyond MAX_JSON_INT (looked at as
    digits first: Python's int() refuses more than 4300 of them)."""
    if len(digits.lstrip("-")) > 20 or abs(number := int(digits)) > MAX_JSON_INT:
        shown = digits if len(digits) <= 24 else f"{digits[:12]}...({len(digits)} digits)"
        raise _WideInt(f"the integer {shown} is wider than 64 bits")
    return number


def loads_json(text: str, what: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """json.loads with a nesting bound and integers of at most 64 bits; BadInput
    naming `what` on any failure."""
    if json_depth(text, max_depth) > max_depth:
        raise BadInput(f"{what}: JSON nested deeper than {max_depth} levels")
    try:
        return json.loads(text, parse_int=_bounded_int)
    except _WideInt as err:
        raise BadInput(f"{what}: {err}") from None
    except (ValueError, RecursionError) as err:
        raise BadInput(f"{what}: not JSON ({str(err)[:120]})") from None


def read_json(path: Path, what: str, max_bytes: int = MAX_SETTINGS_BYTES) -> Any:
    """A JSON file a user named, read within the bounds above."""
    return loads_json(read_text(path, what, max_bytes), what)


def move_into_place(built: Path, home: Path) -> None:
    """A finished build (a folder made beside `home`) replaces whatever stood at
    `home`: a cache entry made again after an older or damaged one."""
    if home.exists():
        shutil.rmtree(home)
    built.rename(home)
