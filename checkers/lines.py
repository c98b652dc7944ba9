"""Which history lines follow the contract.

The converter (checkers/load.py) decides per line whether it is valid (a column
`_bad`), by the rules below in Spark SQL (spark_bad): the one place they decide
anything; a bad line is never kept. Only when Spark found a bad line, and
numbered the first, does `describe` read that one line in Python, to say in
words what is wrong with it (an int beyond 64 bits, a line that is JSON but not
an object, ...) and to tell a cut-short last line (not JSON at all) from a
malformed one. docs/CHECKING.md states the rules.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from checkers.events import spark_string
from harness.core.files import MAX_JSON_DEPTH, json_depth

#: The contract's fields as the converters read them. high_watermark is an int
#: on observe and replica lines and an object on polls: it is read as JSON text.
SCHEMA = (
    ("index", "BIGINT"), ("time", "BIGINT"), ("process", "BIGINT"), ("type", "STRING"),
    ("f", "STRING"), ("topic", "STRING"), ("partition", "INT"), ("acks", "STRING"),
    ("value", "BIGINT"), ("offset", "BIGINT"), ("error", "STRING"),
    ("records", "ARRAY<ARRAY<BIGINT>>"), ("final", "BOOLEAN"),
    ("seek", "MAP<STRING, BIGINT>"), ("fault", "STRING"), ("nodes", "ARRAY<STRING>"),
    ("leader", "BIGINT"), ("leader_epoch", "BIGINT"), ("isr", "ARRAY<BIGINT>"),
    ("elr", "ARRAY<BIGINT>"), ("last_known_elr", "ARRAY<BIGINT>"),
    ("fenced", "ARRAY<BIGINT>"), ("node", "STRING"), ("broker", "BIGINT"),
    ("log_end_offset", "BIGINT"), ("high_watermark", "STRING"),
    ("min_isr", "BIGINT"), ("replicas", "ARRAY<BIGINT>"), ("elr_feature", "BIGINT"),
)
SCHEMA_DDL = ", ".join(f"{name} {kind}" for name, kind in SCHEMA)
FIELDS = tuple(name for name, _ in SCHEMA)

TYPES = ("invoke", "ok", "fail", "info")
#: A blank line holds only JSON's whitespace (RFC 8259: space, tab, CR, LF); one
#: with any other character, a vertical tab or a no-break space, is malformed.
JSON_WHITESPACE = " \t\r\n"
#: The same test as Spark SQL, on the text reader's `value` column.
SPARK_BLANK = "trim(BOTH ' \\t\\r\\n' FROM value) = ''"
REQUIRED = ("index", "time", "process", "type", "f")
INT_FIELDS = ("index", "time", "process", "partition", "value", "offset", "leader",
              "leader_epoch", "broker", "log_end_offset", "min_isr", "elr_feature")
INT_LIST_FIELDS = ("isr", "elr", "last_known_elr", "fenced", "replicas")
TEXT_FIELDS = ("type", "f", "topic", "acks", "error", "fault", "node")
#: The kinds of line the contract defines. A line of another kind (a newer
#: recorder's) is ignored once its common fields are valid.
KINDS = ("send", "poll", "fault", "observe", "replica")
ACKS_VALUES = ("all", "1", "0")
#: Spark's reader takes any JSON token as a STRING column's text (5 becomes "5"),
#: so its converter also reads these fields as variants, whose schema tells a
#: string from a number; the common ints are typed there too, so a line whose
#: other fields do not parse still has a kind and an index.
SPARK_SHAPE = (("index", "BIGINT"), ("time", "BIGINT"), ("process", "BIGINT"),
               *((c, "VARIANT") for c in (*TEXT_FIELDS, "nodes", "detail")))
SPARK_SHAPE_DDL = ", ".join(f"{name} {kind}" for name, kind in SPARK_SHAPE)
#: Spark's JSON reader takes single-quoted names and strings unless told not to;
#: JSON (RFC 8259), and so the contract, has none.
SPARK_JSON_OPTIONS = {"allowSingleQuotes": "false"}
#: Lines whose high_watermark is one int (on polls it is an object).
INT_HWM_KINDS = ("observe", "replica")
#: A partition's name in a JSON object's key (seek, a poll's high_watermark).
PARTITION_KEY = "^-?[0-9]{1,10}$"
#: The JSON text of an object of ints keyed by partitions (Spark re-serializes an
#: object read as text without spaces).
INT_OBJECT = (r'^\{\s*("-?[0-9]{1,10}"\s*:\s*-?[0-9]+\s*'
              r'(,\s*"-?[0-9]{1,10}"\s*:\s*-?[0-9]+\s*)*)?\}$')
INT_TEXT = "^-?[0-9]+$"
_INT64 = (-(1 << 63), (1 << 63) - 1)
#: The deepest nesting `describe` parses (a recorder's line nests 3 levels).
MAX_LINE_DEPTH = MAX_JSON_DEPTH


def value_slot(f: str) -> int:
    """Which slot of a `records` entry holds the value (0-based): polls write
    [partition, offset, value], replica lines [offset, value, leader_epoch]."""
    return 1 if f == "replica" else 2


#: The fields each known kind requires on every line, and those a line of a given
#: kind and type requires beside them (HISTORY.md's tables; null counts as absent).
#: An ok send's offset is required unless its acks is "0": said where it is used.
KIND_REQUIRES = {
    "send": ("topic", "partition", "acks", "value"),
    "poll": ("topic",),
    "fault": ("fault", "nodes"),
    "observe": ("topic", "partition", "leader", "leader_epoch"),
    "replica": ("topic", "partition", "node", "broker", "log_end_offset", "records"),
}
TYPE_REQUIRES = {("send", "fail"): ("error",), ("send", "info"): ("error",),
                 ("poll", "fail"): ("error",), ("poll", "info"): ("error",),
                 ("poll", "ok"): ("records",)}
#: Kinds whose lines are always `ok` (no invoke, no failure).
ALWAYS_OK = ("observe", "replica")


def required_by_kind(q) -> str:
    """Spark SQL (q quotes a column name): true when a line of a known
    kind lacks a field KIND_REQUIRES or TYPE_REQUIRES names, or holds an acks level
    or a type its kind does not allow."""
    def missing(names) -> str:
        return " OR ".join(f"{q(n)} IS NULL" for n in names)

    f, t = q("f"), q("type")
    clauses = [f"({f} = '{kind}' AND ({missing(names)}))" for kind, names in
               KIND_REQUIRES.items()]
    clauses += [f"({f} = '{kind}' AND {t} = '{typ}' AND ({missing(names)}))"
                for (kind, typ), names in TYPE_REQUIRES.items()]
    acks = ", ".join(f"'{a}'" for a in ACKS_VALUES)
    clauses += [f"({f} = 'send' AND {q('acks')} NOT IN ({acks}))",
                f"({f} = 'send' AND {t} = 'ok' AND {q('acks')} != '0' AND {q('offset')} IS NULL)",
                f"({f} IN ({', '.join(repr(k) for k in ALWAYS_OK)}) AND {t} != 'ok')"]
    return " OR ".join(clauses)


def _spark_q(name: str) -> str:
    return f"`{name}`"


#: A line whose JSON text spells one of TEXT_FIELDS' keys with a value that does
#: not start with `"` (a number, an object, null...). JSON allows no other spelling
#: of these keys but one with a `\\u` escape, and no whitespace but RFC 8259's
#: (the reader takes no single-quoted names: SPARK_JSON_OPTIONS).
_NON_TEXT_VALUE = ('"(' + "|".join(TEXT_FIELDS) + ')"[ \\t\\r\\n]*:[ \\t\\r\\n]*'
                   '[^" \\t\\r\\n]')


def spark_needs_shape(corrupt: str = "_corrupt", value: str = "value") -> str:
    """Spark SQL: true when the line's typed read alone cannot judge it, so the
    variant read (SPARK_SHAPE) must: the typed read failed (its fields may be
    partial), or the text holds an escape (a key may be spelled with one), a
    `nodes` or `detail` key, or a text field's key with a value that is not a
    string. On every other line the variant read would only repeat the typed one
    (index, time and process are BIGINT in both; every text field is a string or
    absent), so it is skipped: it cost most of a large history's conversion."""
    keys = " OR ".join(f"contains({value}, {spark_string(chr(34) + k + chr(34))})"
                       for k in ("nodes", "detail"))
    return (f"{corrupt} IS NOT NULL OR contains({value}, '\\\\u') "
            f"OR {keys} "
            f"OR {value} RLIKE {spark_string(_NON_TEXT_VALUE)}")


def spark_kind(shape: str = "shape", exact: str = "_exact") -> str:
    """Spark SQL: a line's `f` as the variant read gives it (null unless a string),
    or the typed read's where the variant read was not needed (spark_needs_shape)."""
    return f"CASE WHEN {exact} THEN try_variant_get({shape}.f, '$', 'string') ELSE f END"


def spark_common(name: str, shape: str = "shape", exact: str = "_exact") -> str:
    """Spark SQL: index, time or process, from the variant read when it was needed."""
    return f"CASE WHEN {exact} THEN {shape}.{name} ELSE {name} END"


def spark_bad(corrupt: str = "_corrupt", shape: str = "shape", exact: str = "_exact") -> str:
    """Spark SQL over the parsed row (its typed fields, the corrupt-record column,
    the variant read `shape`, SPARK_SHAPE, and `exact`, whether it was made:
    spark_needs_shape): true when the line breaks the contract. Every clause is
    false, never null, on a valid line (the caller treats null as bad)."""
    def is_text(c: str) -> str:
        return (f"(NOT {exact} OR coalesce(schema_of_variant({shape}.{c}) IN "
                f"('STRING', 'VOID'), true))")

    def is_string(c: str) -> str:
        """A present string: a variant of that type, or the typed read's text."""
        return (f"CASE WHEN {exact} THEN coalesce(schema_of_variant({shape}.{c}) = 'STRING', "
                f"false) ELSE {c} IS NOT NULL END")

    bad_entry = ("exists(records, r -> r IS NULL OR size(r) != 3 OR r[0] IS NULL "
                 "OR (CASE WHEN f = 'replica' THEN r[2] ELSE r[1] END) IS NULL)")
    hwm = "high_watermark"
    kinds = ", ".join(f"'{k}'" for k in KINDS)
    types = ", ".join(f"'{t}'" for t in TYPES)
    of_its_kind = " OR ".join([
        f"{corrupt} IS NOT NULL",
        *(f"NOT {is_text(c)}" for c in TEXT_FIELDS if c not in ("type", "f")),
        f"({exact} AND coalesce(schema_of_variant({shape}.nodes) NOT IN ('ARRAY<STRING>', "
        f"'ARRAY<VOID>', 'VOID'), false))",
        "coalesce(exists(nodes, n -> n IS NULL), false)",
        f"({exact} AND coalesce(NOT (schema_of_variant({shape}.detail) LIKE 'OBJECT%' "
        f"OR schema_of_variant({shape}.detail) = 'VOID'), false))",
        f"coalesce(records IS NOT NULL AND {bad_entry}, false)",
        "coalesce(seek IS NOT NULL AND NOT forall(map_keys(seek), "
        f"k -> k RLIKE {spark_string(PARTITION_KEY)}), false)",
        f"coalesce(f = 'poll' AND {hwm} IS NOT NULL AND NOT ({hwm} RLIKE "
        f"{spark_string(INT_OBJECT)} AND from_json({hwm}, 'MAP<STRING, BIGINT>') IS NOT NULL), "
        "false)",
        f"coalesce(f IN ({', '.join(repr(k) for k in INT_HWM_KINDS)}) AND {hwm} IS NOT NULL "
        f"AND NOT ({hwm} RLIKE {spark_string(INT_TEXT)} "
        f"AND try_cast({hwm} AS BIGINT) IS NOT NULL), false)",
        f"coalesce({required_by_kind(_spark_q)}, false)",
    ])
    the_type = (f"CASE WHEN {exact} THEN try_variant_get({shape}.type, '$', 'string') "
                "ELSE type END")
    return " OR ".join([
        *(f"({spark_common(c, shape, exact)}) IS NULL" for c in ("index", "time", "process")),
        *(f"NOT ({is_string(c)})" for c in ("type", "f")),
        f"({the_type}) NOT IN ({types})",
        f"(({spark_kind(shape, exact)}) IN ({kinds}) AND ({of_its_kind}))",
    ])


# -- wording what is wrong with the one line Spark judged bad first (the error path) --


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int_problem(name: str, v: object) -> str | None:
    if isinstance(v, float) and math.isfinite(v) and v == int(v) and abs(v) >= 2 ** 63:
        return f"field {name!r} holds {v:.0f}, outside the signed 64-bit range"
    if not _is_int(v):
        return f"field {name!r} must be an int, not {json.dumps(v)[:40]}"
    if not _INT64[0] <= v <= _INT64[1]:
        return f"field {name!r} holds {v}, an int outside the signed 64-bit range"
    return None


def _object_of_ints(name: str, v: object) -> str | None:
    if not isinstance(v, dict):
        return f"field {name!r} must be an object {{partition: int}}"
    for key, item in v.items():
        if not isinstance(key, str) or not key.lstrip("-").isdigit() or len(key) > 11:
            return f"field {name!r} has key {key!r}, which is not a partition number"
        problem = _int_problem(f"{name}.{key}", item)
        if problem:
            return problem
    return None


def _required_of(op: dict) -> tuple[str, ...]:
    """The fields a line of its kind and type requires (required_by_kind in Python)."""
    f, t = op["f"], op["type"]
    offset = ("offset",) if f == "send" and t == "ok" and op.get("acks") != "0" else ()
    return KIND_REQUIRES[f] + TYPE_REQUIRES.get((f, t), ()) + offset


def describe(text: str) -> tuple[str | None, bool]:
    """The words for what breaks the contract in a line Spark judged bad (spark_bad
    decides; this only says which rule, in the same order: the common fields, then
    a known kind's own), and whether the line is JSON at all (a cut-short last line
    is not). A reason of None: no rule found to name (the message says so)."""
    if not text.strip(JSON_WHITESPACE):
        return None, True
    # Python's parser recurses: a line nested deeper than any recorder writes is
    # malformed (never taken for a cut-short one), and is not handed to it
    if json_depth(text, MAX_LINE_DEPTH) > MAX_LINE_DEPTH:
        return f"JSON nested deeper than {MAX_LINE_DEPTH} levels", True
    try:
        op = json.loads(text)
    except (ValueError, RecursionError) as err:
        return f"not JSON ({str(err)[:120]})", False
    if not isinstance(op, dict):
        return f"JSON but not an object ({type(op).__name__})", True
    for name in REQUIRED:
        if op.get(name) is None:
            return f"required field {name!r} is missing", True
    for name in ("index", "time", "process"):
        if problem := _int_problem(name, op[name]):
            return problem, True
    for name in ("type", "f"):
        if not isinstance(op[name], str):
            return f"field {name!r} must be a string", True
    if op["type"] not in TYPES:
        return f"type {op['type']!r} is none of {', '.join(TYPES)}", True
    if op["f"] not in KINDS:
        return None, True  # a newer recorder's kind of line: ignored
    return _kind_problem(op), True


def _kind_problem(op: dict) -> str | None:
    """What breaks the contract in a line of a known kind, or None."""
    for name in INT_FIELDS:
        if op.get(name) is not None and (problem := _int_problem(name, op[name])):
            return problem
    for name in TEXT_FIELDS:
        if op.get(name) is not None and not isinstance(op[name], str):
            return f"field {name!r} must be a string"
    nodes = op.get("nodes")
    if nodes is not None and not (isinstance(nodes, list)
                                  and all(isinstance(n, str) for n in nodes)):
        return "field 'nodes' must be a list of strings"
    if op.get("detail") is not None and not isinstance(op["detail"], dict):
        return "field 'detail' must be an object"
    if op.get("final") is not None and not isinstance(op["final"], bool):
        return "field 'final' must be true or false"
    for name in INT_LIST_FIELDS:
        items = op.get(name)
        if items is not None:
            if not isinstance(items, list):
                return f"field {name!r} must be a list of ints"
            for item in items:
                if problem := _int_problem(name, item):
                    return problem
    if op.get("records") is not None:
        records, slot = op["records"], value_slot(op["f"])
        if not isinstance(records, list):
            return "field 'records' must be a list"
        for entry in records:
            if not isinstance(entry, list) or len(entry) != 3:
                return f"a record {json.dumps(entry)[:40]} is not a list of three"
            for i, item in enumerate(entry):
                if item is None and i == slot:
                    continue
                if problem := _int_problem("records", item):
                    return problem
    if op.get("seek") is not None and (problem := _object_of_ints("seek", op["seek"])):
        return problem
    hwm = op.get("high_watermark")
    if hwm is not None:
        if op["f"] == "poll" and (problem := _object_of_ints("high_watermark", hwm)):
            return problem
        if op["f"] in INT_HWM_KINDS and (problem := _int_problem("high_watermark", hwm)):
            return problem
    if op["f"] == "send" and op.get("acks") is not None and op["acks"] not in ACKS_VALUES:
        return f"acks {op['acks']!r} is none of {', '.join(ACKS_VALUES)}"
    if op["f"] in ALWAYS_OK and op["type"] != "ok":
        return f"an {op['f']} line's type is always ok"
    for name in _required_of(op):
        if op.get(name) is None:
            return f"field {name!r} is required on {op['type']} {op['f']} lines"
    return None


def read_line(path: Path, number: int) -> tuple[str, bool]:
    """Line `number` (1-based, blank lines counted) of a file, and whether every
    line after it is blank."""
    text, rest_blank = "", True
    with open(path, encoding="utf-8", errors="replace", newline="") as lines:
        for i, line in enumerate(_physical_lines(lines), start=1):
            if i == number:
                text = line
            elif i > number and line.strip(JSON_WHITESPACE):
                rest_blank = False
                break
    return text, rest_blank


def _physical_lines(stream):
    """A text stream's lines, split on \\n, \\r\\n or \\r as Spark's line reader splits
    them (the stream is opened with newline="")."""
    for line in stream:
        yield line.rstrip("\r\n")
