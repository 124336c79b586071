"""Rules every request follows that the generated OpenAPI document would not state by itself.

Each field's own limits come from its type (patterns, lengths, items: ``memoryd.models``);
what holds for every value of every route is added here, from the same definitions the
server checks with (:mod:`memoryd.operations.arguments`):

* every number lies within the 64-bit integer range (``minimum``/``maximum`` where a field
  sets none), in free-form JSON (metadata, message parts) too: such a value is a
  ``JsonValue``;
* no text may hold NUL (U+0000): said in the document's description, since a ``pattern`` on
  every string would drown the ones that say something.
"""

from __future__ import annotations

from typing import Any

from memoryd.operations.arguments import FLOAT_LIMIT, INT_MAX, INT_MIN

JSON_VALUE = "JsonValue"
_JSON_REF = {"$ref": f"#/components/schemas/{JSON_VALUE}"}
RULES = (
    "\n\nEvery request: text is valid Unicode without NUL (U+0000); numbers are finite and "
    "within the 64-bit integer range (±2^63), in free-form JSON too; "
    "dates are ISO 8601 strings (2024-05-17T09:30:00Z; without an offset, UTC); a JSON body "
    "is strict JSON (unique keys, no NaN, nested at most 64 levels). A 422 names the field "
    "and the rule, never the value."
)


def json_value_schema() -> dict[str, Any]:
    """Any JSON value whose numbers lie within the 64-bit integer range."""
    return {"description": "Any JSON value; its numbers lie within the 64-bit integer range.",
            "anyOf": [{"type": "string"}, {"type": "boolean"}, {"type": "null"},
                      {"type": "integer", "minimum": INT_MIN, "maximum": INT_MAX},
                      {"type": "number", "minimum": -FLOAT_LIMIT, "maximum": FLOAT_LIMIT},
                      {"type": "array", "items": _JSON_REF},
                      {"type": "object", "additionalProperties": _JSON_REF}]}


def bound_numbers(node: Any) -> None:
    """Give every number schema in ``node`` the 64-bit range where it states no bound, and
    every free-form object (``additionalProperties: true``) JsonValue members."""
    if isinstance(node, list):
        for item in node:
            bound_numbers(item)
        return
    if not isinstance(node, dict):
        return
    low, high = (INT_MIN, INT_MAX) if node.get("type") == "integer" else (-FLOAT_LIMIT,
                                                                          FLOAT_LIMIT)
    if node.get("type") in ("integer", "number"):
        if "minimum" not in node and "exclusiveMinimum" not in node:
            node["minimum"] = low
        if "maximum" not in node and "exclusiveMaximum" not in node:
            node["maximum"] = high
    free = node.get("type") == "object" and "additionalProperties" not in node
    if node.get("additionalProperties") is True or free:  # any member (extra="ignore" too)
        node["additionalProperties"] = dict(_JSON_REF)
    for value in node.values():
        bound_numbers(value)


def add_rules(schema: dict[str, Any]) -> None:
    """Bound every number of the document and add the JsonValue component."""
    bound_numbers(schema)
    schema.setdefault("components", {}).setdefault("schemas", {})[JSON_VALUE] = (
        json_value_schema())
