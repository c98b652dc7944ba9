"""Which history lines follow the contract.

The converter (checker/load.py) decides per line whether it is valid (a column
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

from elr_harness.checker.events import spark_string
from elr_harness.core.files import MAX_JSON_DEPTH, json_depth
from elr_harness.core.history import (
    ACKS_LEVELS,
    BROKER_ID_FIELDS,
    DETAIL_LOWEST,
    FAULT_DETAILS,
    FEATURE_LEVEL_LOWEST,
    ISOLATIONS,
    MAY_HOLD_MINUS_ONE,
    MIN_ISR_LOWEST,
    DetailType,
    Kind,
    OpType,
)

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
    # contract version 4 (transactions). sends and inputs mix texts and ints: read
    # as texts here, their types judged on the variant read (spark_bad_v4);
    # last_stable_offset is an int on observe lines and an object on polls, read as
    # JSON text like high_watermark
    ("txn_id", "STRING"), ("sends", "ARRAY<ARRAY<STRING>>"), ("abort", "BOOLEAN"),
    ("inputs", "ARRAY<ARRAY<STRING>>"), ("group", "STRING"),
    ("commit_offsets", "MAP<STRING, BIGINT>"), ("offsets", "ARRAY<BIGINT>"),
    ("end_time", "BIGINT"), ("client", "STRING"), ("isolation", "STRING"),
    ("position", "MAP<STRING, BIGINT>"), ("last_stable_offset", "STRING"),
    ("open_txn_offsets", "ARRAY<BIGINT>"), ("group_offsets", "MAP<STRING, MAP<STRING, BIGINT>>"),
)
SCHEMA_DDL = ", ".join(f"{name} {kind}" for name, kind in SCHEMA)
FIELDS = tuple(name for name, _ in SCHEMA)

TYPES = tuple(str(t) for t in OpType)
#: A blank line holds only JSON's whitespace (RFC 8259: space, tab, CR, LF); one
#: with any other character, a vertical tab or a no-break space, is malformed.
JSON_WHITESPACE = " \t\r\n"
#: The same test as Spark SQL, on the text reader's `value` column.
SPARK_BLANK = "trim(BOTH ' \\t\\r\\n' FROM value) = ''"
#: The contract's file is UTF-8: a line whose bytes are not (an invalid byte, an
#: overlong form, an encoded surrogate, a character cut short) is no JSON text,
#: as the reference's strict decoder says. Spark's text reader keeps a line's
#: bytes as they are and its JSON reader takes a bad one for U+FFFD, so the
#: converter tests the bytes themselves (Spark SQL, on the text reader's `value`).
SPARK_UTF8 = "is_valid_utf8(value)"
REQUIRED = ("index", "time", "process", "type", "f")
INT_FIELDS = ("index", "time", "process", "partition", "value", "offset", "leader",
              "leader_epoch", "broker", "log_end_offset", "min_isr", "elr_feature", "end_time")
INT_LIST_FIELDS = ("isr", "elr", "last_known_elr", "fenced", "replicas")
TEXT_FIELDS = ("type", "f", "topic", "acks", "error", "fault", "node", "txn_id", "group",
               "client", "isolation")
#: Version 4's lists of mixed texts and ints, judged on the variant read: sends'
#: entries are [topic, partition, value], inputs' [topic, partition, offset, value].
TUPLE_FIELDS = {"sends": "sii", "inputs": "siii"}
#: The kinds of line the contract defines. A line of another kind (a newer
#: recorder's) is ignored once its common fields are valid.
KINDS = tuple(str(k) for k in Kind)
ACKS_VALUES = ACKS_LEVELS
#: Spark's reader takes any JSON token as a STRING column's text (5 becomes "5"),
#: so its converter also reads these fields as variants, whose schema tells a
#: string from a number; the common ints are typed there too, so a line whose
#: other fields do not parse still has a kind and an index.
SPARK_SHAPE = (("index", "BIGINT"), ("time", "BIGINT"), ("process", "BIGINT"),
               *((c, "VARIANT") for c in (*TEXT_FIELDS, "nodes", "detail", *TUPLE_FIELDS)))
SPARK_SHAPE_DDL = ", ".join(f"{name} {kind}" for name, kind in SPARK_SHAPE)
#: Spark's JSON reader takes single-quoted names and strings unless told not to;
#: JSON (RFC 8259), and so the contract, has none.
SPARK_JSON_OPTIONS = {"allowSingleQuotes": "false"}
#: Lines whose high_watermark is one int (on polls it is an object).
INT_HWM_KINDS = ("observe", "replica")
#: Lines whose last_stable_offset is one int (on polls it is an object; v4).
INT_LSO_KINDS = ("observe",)
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
    "txn": ("txn_id",),
    "fault": ("fault", "nodes"),
    "observe": ("topic", "partition", "leader", "leader_epoch"),
    "replica": ("topic", "partition", "node", "broker", "log_end_offset", "records"),
}
TYPE_REQUIRES = {("send", "fail"): ("error",), ("send", "info"): ("error",),
                 ("poll", "fail"): ("error",), ("poll", "info"): ("error",),
                 ("poll", "ok"): ("records",), ("txn", "invoke"): ("sends",),
                 ("txn", "fail"): ("error",), ("txn", "info"): ("error",)}
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
                       for k in ("nodes", "detail", *TUPLE_FIELDS))
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


def _lowest_id(name: str) -> int:
    """The lowest broker id a field may hold (HISTORY.md: only `leader` and
    `last_known_elr` may hold -1)."""
    return -1 if name in MAY_HOLD_MINUS_ONE else 0


def spark_impossible() -> list[str]:
    """Spark SQL clauses over a typed line of a known kind, each true when a field
    holds a value no cluster can report (HISTORY.md, first section): a negative
    offset, high watermark or log end offset (a record's, a seek's, a poll's high
    watermarks' too), a min ISR below 1, an ELR feature level below 0, a broker id
    below -1 (below 0 but in `leader` and `last_known_elr`). False, never null, on
    a valid line."""
    offset_of_record = "(CASE WHEN f = 'replica' THEN r[0] ELSE r[1] END)"
    clauses = [
        "offset < 0", "log_end_offset < 0",
        f"min_isr < {MIN_ISR_LOWEST}", f"elr_feature < {FEATURE_LEVEL_LOWEST}",
        f"exists(records, r -> {offset_of_record} < 0)",
        "exists(map_values(seek), o -> o < 0)",
        f"(f IN ({', '.join(repr(k) for k in INT_HWM_KINDS)}) "
        "AND try_cast(high_watermark AS BIGINT) < 0)",
        "(f = 'poll' AND exists(map_values(from_json(high_watermark, "
        "'MAP<STRING, BIGINT>')), o -> o < 0))",
        # version 4's offsets
        "exists(offsets, o -> o < 0)", "exists(map_values(position), o -> o < 0)",
        "exists(open_txn_offsets, o -> o < 0)", "exists(map_values(commit_offsets), o -> o < 0)",
        "exists(map_values(group_offsets), g -> exists(map_values(g), o -> o < 0))",
        "exists(inputs, e -> try_cast(e[2] AS BIGINT) < 0)",
        f"(f IN ({', '.join(repr(k) for k in INT_LSO_KINDS)}) "
        "AND try_cast(last_stable_offset AS BIGINT) < 0)",
        "(f = 'poll' AND exists(map_values(from_json(last_stable_offset, "
        "'MAP<STRING, BIGINT>')), o -> o < 0))",
    ]
    for name in BROKER_ID_FIELDS:
        lowest = _lowest_id(name)
        clauses.append(f"exists({name}, b -> b < {lowest})" if name in INT_LIST_FIELDS
                       else f"{name} < {lowest}")
    return [f"coalesce({c}, false)" for c in clauses]


def spark_bad_detail(shape: str = "shape", exact: str = "_exact") -> str:
    """Spark SQL over a fault line: true when its kind has a documented detail
    (harness.core.history.FAULT_DETAILS) and the line's `detail` lacks a key of it,
    holds one of another type, or one below the lowest value a cluster can report.
    The variant read (`shape`) is made for every line whose text holds a `detail`
    key (spark_needs_shape): without it, the line has none."""
    detail = f"{shape}.detail"

    def key_bad(kind: str, key: str, of: DetailType) -> str:
        schema = f"schema_of_variant(variant_get({detail}, '$.{key}'))"
        if of is DetailType.TEXT:
            return f"coalesce({schema} != 'STRING', true)"
        if of is DetailType.TEXT_OR_NULL:
            return f"coalesce({schema} NOT IN ('STRING', 'VOID'), false)"
        if of is DetailType.BOOL:
            return f"coalesce({schema} != 'BOOLEAN', true)"
        if of is DetailType.TEXT_LIST:
            return (f"coalesce({schema} NOT IN ('ARRAY<STRING>', 'ARRAY<VOID>') OR exists("
                    f"try_variant_get({detail}, '$.{key}', 'ARRAY<STRING>'), n -> n IS NULL), "
                    "true)")
        low = DETAIL_LOWEST.get((kind, key))
        below = ("" if low is None else
                 f" OR try_variant_get({detail}, '$.{key}', 'BIGINT') < {low}")
        return f"coalesce({schema} != 'BIGINT'{below}, true)"

    cases = []
    for kind, keys in FAULT_DETAILS.items():
        wrong = " OR ".join(key_bad(kind, key, of) for key, of in keys)
        cases.append(f"WHEN {spark_string(kind)} THEN NOT {exact} OR {detail} IS NULL "
                     f"OR coalesce(NOT (schema_of_variant({detail}) LIKE 'OBJECT%'), true) "
                     f"OR {wrong}")
    return f"coalesce(f = 'fault' AND CASE fault {' '.join(cases)} ELSE false END, false)"


def spark_bad_v4(shape: str = "shape", exact: str = "_exact") -> list[str]:
    """Spark SQL clauses over a typed line of a known kind, each true when one of
    contract version 4's fields breaks its type (HISTORY.md, "Transactions (v4)"):
    `sends` and `inputs` entries of [text, int, int] and [text, int, int, int] (on
    the variant read, made for every line naming either: spark_needs_shape), inputs
    not aligned with sends, an isolation level not the contract's, an
    open_txn_offsets entry that is null, a position keyed by no partition, and a
    last_stable_offset that is not an int (observe lines) or an object of ints
    keyed by partitions (polls). False, never null, on a valid line."""
    def tuples(name: str, kinds: str) -> str:
        v = f"{shape}.{name}"
        entry = "try_variant_get(e, '$', 'ARRAY<VARIANT>')"
        typed = " AND ".join(
            f"schema_of_variant({entry}[{i}]) = '{'STRING' if k == 's' else 'BIGINT'}'"
            for i, k in enumerate(kinds))
        fits = (f"schema_of_variant({v}) LIKE 'ARRAY%' AND forall(try_variant_get({v}, '$', "
                f"'ARRAY<VARIANT>'), e -> coalesce(size({entry}) = {len(kinds)} AND {typed}, "
                "false))")
        return (f"({exact} AND {v} IS NOT NULL AND schema_of_variant({v}) != 'VOID' "
                f"AND NOT coalesce({fits}, false))")

    lso = "last_stable_offset"
    isolations = ", ".join(spark_string(i) for i in ISOLATIONS)
    return [f"coalesce({c}, false)" for c in (
        *(tuples(name, kinds) for name, kinds in TUPLE_FIELDS.items()),
        # size(null) is -1 without ANSI: both must be there to be compared
        "inputs IS NOT NULL AND sends IS NOT NULL AND size(inputs) != size(sends)",
        f"isolation NOT IN ({isolations})",
        "exists(open_txn_offsets, o -> o IS NULL)",
        f"position IS NOT NULL AND NOT forall(map_keys(position), k -> k RLIKE "
        f"{spark_string(PARTITION_KEY)})",
        f"f = 'poll' AND {lso} IS NOT NULL AND NOT ({lso} RLIKE {spark_string(INT_OBJECT)} "
        f"AND from_json({lso}, 'MAP<STRING, BIGINT>') IS NOT NULL)",
        f"f IN ({', '.join(repr(k) for k in INT_LSO_KINDS)}) AND {lso} IS NOT NULL "
        f"AND NOT ({lso} RLIKE {spark_string(INT_TEXT)} AND try_cast({lso} AS BIGINT) "
        "IS NOT NULL)",
    )]


def spark_bad(corrupt: str = "_corrupt", shape: str = "shape", exact: str = "_exact",
              utf8: str = "_utf8") -> str:
    """Spark SQL over the parsed row (its typed fields, the corrupt-record column,
    the variant read `shape`, SPARK_SHAPE, `exact`, whether it was made:
    spark_needs_shape, and `utf8`, SPARK_UTF8 of its text): true when the line
    breaks the contract. Every clause is false, never null, on a valid line (the
    caller treats null as bad)."""
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
        *spark_impossible(),
        spark_bad_detail(shape, exact),
        *spark_bad_v4(shape, exact),
    ])
    the_type = (f"CASE WHEN {exact} THEN try_variant_get({shape}.type, '$', 'string') "
                "ELSE type END")
    return " OR ".join([
        f"NOT {utf8}",
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
    # read_line keeps a byte that is not UTF-8 as a lone surrogate (surrogateescape)
    bad_byte = next((i for i, c in enumerate(text) if "\udc80" <= c <= "\udcff"), None)
    if bad_byte is not None:
        return (f"not UTF-8 text (byte 0x{ord(text[bad_byte]) - 0xdc00:02x} at character "
                f"{bad_byte + 1})"), False
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
    if problem := _v4_problem(op):
        return problem
    if op["f"] == "send" and op.get("acks") is not None and op["acks"] not in ACKS_VALUES:
        return f"acks {op['acks']!r} is none of {', '.join(ACKS_VALUES)}"
    if op["f"] in ALWAYS_OK and op["type"] != "ok":
        return f"an {op['f']} line's type is always ok"
    for name in _required_of(op):
        if op.get(name) is None:
            return f"field {name!r} is required on {op['type']} {op['f']} lines"
    return _impossible_value(op) or _detail_problem(op)


def _v4_problem(op: dict) -> str | None:
    """What breaks a type of contract version 4's fields (spark_bad_v4's rules and the
    typed read's, in words), or None."""
    for name, kinds in TUPLE_FIELDS.items():
        entries = op.get(name)
        if entries is None:
            continue
        if not isinstance(entries, list):
            return f"field {name!r} must be a list"
        for entry in entries:
            fits = isinstance(entry, list) and len(entry) == len(kinds) and all(
                isinstance(item, str) if kind == "s" else _int_problem(name, item) is None
                for kind, item in zip(kinds, entry, strict=True))
            if not fits:
                return (f"field {name!r} holds {json.dumps(entry)[:40]}, not "
                        f"[{', '.join('text' if k == 's' else 'int' for k in kinds)}]")
    if op.get("inputs") is not None and op.get("sends") is not None \
            and len(op["inputs"]) != len(op["sends"]):
        return "field 'inputs' is not aligned with 'sends' (another length)"
    if op.get("abort") is not None and not isinstance(op["abort"], bool):
        return "field 'abort' must be true or false"
    if op.get("isolation") is not None and op["isolation"] not in ISOLATIONS:
        return f"isolation {op['isolation']!r} is none of {', '.join(ISOLATIONS)}"
    offsets = op.get("offsets")
    if offsets is not None:
        if not isinstance(offsets, list):
            return "field 'offsets' must be a list of ints or nulls"
        for item in offsets:
            if item is not None and (problem := _int_problem("offsets", item)):
                return problem
    opens = op.get("open_txn_offsets")
    if opens is not None:
        if not isinstance(opens, list):
            return "field 'open_txn_offsets' must be a list of ints"
        for item in opens:
            if problem := _int_problem("open_txn_offsets", item):
                return problem
    if op.get("position") is not None and (problem := _object_of_ints("position",
                                                                       op["position"])):
        return problem
    for name, value in (("commit_offsets", op.get("commit_offsets")),
                        *((f"group_offsets.{g}", v) for g, v in
                          (op.get("group_offsets") or {}).items()
                          if isinstance(op.get("group_offsets"), dict))):
        if value is None:
            continue
        if not isinstance(value, dict):
            return f"field {name!r} must be an object of ints"
        for key, item in value.items():
            if problem := _int_problem(f"{name}.{key}", item):
                return problem
    if op.get("group_offsets") is not None and not isinstance(op["group_offsets"], dict):
        return "field 'group_offsets' must be an object of objects of ints"
    lso = op.get("last_stable_offset")
    if lso is not None:
        if op["f"] == "poll" and (problem := _object_of_ints("last_stable_offset", lso)):
            return problem
        if op["f"] in INT_LSO_KINDS and (problem := _int_problem("last_stable_offset", lso)):
            return problem
    return None


def _impossible_value(op: dict) -> str | None:
    """A value no cluster can report (spark_impossible's rules, in words), or None;
    the line's types are already known to be right."""
    def negative(name: str, values) -> str | None:
        bad = next((v for v in values if v is not None and v < 0), None)
        return None if bad is None else f"field {name!r} holds {bad}, a negative offset"

    records = op.get("records") or []
    at = 0 if op["f"] == "replica" else 1
    hwm = op.get("high_watermark")
    hwms = (list(hwm.values()) if op["f"] == "poll" and isinstance(hwm, dict)
            else [hwm] if op["f"] in INT_HWM_KINDS else [])
    lso = op.get("last_stable_offset")
    lsos = (list(lso.values()) if op["f"] == "poll" and isinstance(lso, dict)
            else [lso] if op["f"] in INT_LSO_KINDS else [])
    found = (negative("offset", [op.get("offset")])
             or negative("log_end_offset", [op.get("log_end_offset")])
             or negative("records", [r[at] for r in records])
             or negative("seek", list((op.get("seek") or {}).values()))
             or negative("high_watermark", hwms)
             or negative("offsets", op.get("offsets") or [])
             or negative("inputs", [entry[2] for entry in op.get("inputs") or []])
             or negative("commit_offsets", list((op.get("commit_offsets") or {}).values()))
             or negative("position", list((op.get("position") or {}).values()))
             or negative("open_txn_offsets", op.get("open_txn_offsets") or [])
             or negative("group_offsets", [o for g in (op.get("group_offsets") or {}).values()
                                           for o in g.values()])
             or negative("last_stable_offset", lsos))
    if found:
        return found
    if op.get("min_isr") is not None and op["min_isr"] < MIN_ISR_LOWEST:
        return f"field 'min_isr' holds {op['min_isr']}, below {MIN_ISR_LOWEST}"
    if op.get("elr_feature") is not None and op["elr_feature"] < FEATURE_LEVEL_LOWEST:
        return f"field 'elr_feature' holds {op['elr_feature']}, below {FEATURE_LEVEL_LOWEST}"
    for name in BROKER_ID_FIELDS:
        value = op.get(name)
        ids = value if isinstance(value, list) else [value]
        bad = next((b for b in ids if b is not None and b < _lowest_id(name)), None)
        if bad is not None:
            return f"field {name!r} holds broker id {bad}, below {_lowest_id(name)}"
    return None


def _detail_problem(op: dict) -> str | None:
    """What a fault line of a kind with a documented detail lacks (spark_bad_detail's
    rules, in words), or None."""
    keys = FAULT_DETAILS.get(op.get("fault")) if op["f"] == "fault" else None
    if keys is None:
        return None
    kind, detail = op["fault"], op.get("detail")
    if not isinstance(detail, dict):
        return f"a {kind} line must carry its detail ({', '.join(k for k, _ in keys)})"
    for key, of in keys:
        value = detail.get(key)
        if of is DetailType.TEXT_OR_NULL:
            fits = value is None or isinstance(value, str)
        elif of is DetailType.TEXT:
            fits = isinstance(value, str)
        elif of is DetailType.BOOL:
            fits = isinstance(value, bool)
        elif of is DetailType.TEXT_LIST:
            fits = isinstance(value, list) and all(isinstance(n, str) for n in value)
        else:
            fits = _int_problem(key, value) is None
        if not fits:
            said = json.dumps(value)[:40]
            return f"a {kind} line's detail.{key} must be a {of.value}, not {said}"
        low = DETAIL_LOWEST.get((kind, key))
        if low is not None and value < low:
            return f"a {kind} line's detail.{key} holds {value}, below {low}"
    return None


def read_line(path: Path, number: int) -> tuple[str, bool]:
    """Line `number` (1-based, blank lines counted) of a file, and whether every
    line after it is blank."""
    text, rest_blank = "", True
    # a byte that is not UTF-8 stays visible (a lone surrogate) for describe to name
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as lines:
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
