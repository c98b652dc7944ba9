"""What the kinds that change the cluster's config or features share (min-isr-change,
feature-change): reads through Kafka's tools, and a change recorded so that the
restoring line of its own kind ends it (core.history.RESTORED_BY_SELF)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from elr_harness.core.history import Fault
from elr_harness.nemesis.faults.base import Injector, detail_of


def read_with_tools(injector: Injector, ask: Callable[[Any], Any]) -> Any:
    """A read through Kafka's tools, tried in each node that can run them in turn (a
    read changes nothing); the last error when none answers."""
    from elr_harness.cluster.admin_tools import AdminError

    errors = []
    for node in injector.tool_nodes():
        try:
            return ask(node)
        except AdminError as err:
            errors.append(str(err))
    raise AdminError("; ".join(errors))


def record_change(injector: Injector, kind: Fault, changes: dict[Any, tuple[int, int]],
                  target: Any, what: dict[str, Any], step: str | None,
                  detail: dict[str, Any] | None, apply: Callable[[], None],
                  refuse: Callable[[], str | None] | None = None,
                  changed: Callable[[], None] | None = None) -> dict[str, Any]:
    """A config or feature change, recorded. `changes` (the kind's kept record)
    remembers it (value before, value now) from its invoke until a restoring change
    (`restore: true` in its detail, harness.core.history.RESTORE) ends `ok`: one
    that ended `info` may have happened. One the controller refused (`fail`) is
    forgotten. `changed()` is called after each change to `changes`."""
    from elr_harness.cluster.admin_tools import AdminRefused
    from elr_harness.core.history import RESTORE

    restoring = bool((detail or {}).get(RESTORE))
    prior = changes.get(target)
    noted = changed or (lambda: None)

    def act() -> None:
        if not restoring:
            changes[target] = ((prior or (what["from"],))[0], what["to"])
            noted()
        apply()

    try:
        done = injector.record(kind, [], {**what, **detail_of(step, detail)}, act, refuse)
    except AdminRefused:
        if not restoring and prior is None:
            changes.pop(target, None)
        elif not restoring:
            changes[target] = prior
        noted()
        raise
    if restoring:
        changes.pop(target, None)
        noted()
    return done
