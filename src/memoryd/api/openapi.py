"""Rules every request follows that the generated OpenAPI document would not state by itself.

Each field's own limits come from its type (patterns, lengths, items: ``memoryd.models``);
what holds for every value of every route is added here, from the same definitions the
server checks with (:mod:`memoryd.operations.arguments`):

* every integer fits in 64 bits (``minimum``/``maximum`` where a field sets none);
* no text may hold NUL (U+0000): said in the document's description, since a ``pattern`` on
  every string would drown the ones that say something.
"""

from __future__ import annotations

from typing import Any

from memoryd.operations.arguments import INT_MAX, INT_MIN

RULES = (
    "\n\nEvery request: text is valid Unicode without NUL (U+0000); integers fit in 64 bits; "
    "dates are ISO 8601 strings (2024-05-17T09:30:00Z; without an offset, UTC); a JSON body "
    "is strict JSON (unique keys, no NaN, nested at most 64 levels). A 422 names the field "
    "and the rule, never the value."
)


def bound_integers(node: Any) -> None:
    """Give every integer schema in ``node`` the 64-bit range where it states no bound."""
    if isinstance(node, list):
        for item in node:
            bound_integers(item)
        return
    if not isinstance(node, dict):
        return
    if node.get("type") == "integer":
        if "minimum" not in node and "exclusiveMinimum" not in node:
            node["minimum"] = INT_MIN
        if "maximum" not in node and "exclusiveMaximum" not in node:
            node["maximum"] = INT_MAX
    for value in node.values():
        bound_integers(value)
