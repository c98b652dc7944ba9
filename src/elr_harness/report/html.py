"""Tiny HTML building blocks that escape by default.

Anything from the history or from Kafka (record values, error names, topic
names) is untrusted text; the only way to put markup in a page is to wrap it in
Safe, so forgetting to escape means too much escaping, never injected markup.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from pathlib import Path

#: An empty inline icon: without it a browser asks the server for /favicon.ico.
NO_FAVICON = '<link rel="icon" href="data:,">'


class Safe(str):
    """Markup built by this package: passed through unescaped."""


def h(value: object) -> Safe:
    """Escaped text, or the markup itself if it is already Safe."""
    if isinstance(value, Safe):
        return value
    if value is None:
        return Safe("")
    return Safe(html.escape(str(value), quote=True))


def join(parts: Iterable[object]) -> Safe:
    return Safe("".join(h(p) for p in parts))


def tag(name: str, content: object = "", **attrs: object) -> Safe:
    """<name attrs>content</name>; attribute values are escaped, `class_` means class."""
    rendered = "".join(
        f' {key.rstrip("_").replace("_", "-")}="{h(value)}"'
        for key, value in attrs.items() if value is not None
    )
    return Safe(f"<{name}{rendered}>{h(content)}</{name}>")


def table(headers: Iterable[object], rows: Iterable[Iterable[object]], class_: str = "",
          row_ids: Iterable[str | None] | None = None,
          row_classes: Iterable[str | None] | None = None) -> Safe:
    """A table whose every cell is escaped unless it is Safe; rows may carry ids
    (a link's target) and classes."""
    rows = list(rows)
    ids = list(row_ids) if row_ids is not None else [None] * len(rows)
    classes = list(row_classes) if row_classes is not None else [None] * len(rows)
    head = join(tag("th", c) for c in headers)
    body = join(tag("tr", join(tag("td", c) for c in row), id=i, class_=k)
                for row, i, k in zip(rows, ids, classes, strict=True))
    return tag("table", Safe(f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody>"),
               class_=class_ or None)


def not_available(what: str, why: str) -> Safe:
    """The one way a missing piece shows: say what is missing and why, never crash."""
    return tag("div", join([tag("strong", f"{what}: not available."), " ", why]), class_="na")


def image(data_uri: str | None, alt: str, missing_why: str) -> Safe:
    if data_uri is None:
        return not_available(alt, missing_why)
    return Safe(f'<img class="plot" src="{h(data_uri)}" alt="{h(alt)}">')


def stylesheet() -> str:
    """The report's CSS, inlined so the page needs no other file."""
    return (Path(__file__).with_name("report.css")).read_text(encoding="utf-8")
