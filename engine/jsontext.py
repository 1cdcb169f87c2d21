"""JSON text from outside (log lines, typed args, request bodies) read with limits that
keep odd input an error with a reason: nesting depth, and text that is not text (lone
UTF-16 surrogates, which `json` accepts as `\\ud800` escapes but no database stores)."""
from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 400

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


class UnreadableJSON(ValueError):
    """Valid JSON that is refused anyway; the message says why."""


def depth(value: Any) -> int:
    """How deeply lists and objects nest in `value` (a scalar is 0), without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in item if isinstance(child, (list, dict)))
    return deepest


def parse_json(text: str | bytes, max_depth: int = MAX_DEPTH) -> Any:
    """`json.loads`, refusing (UnreadableJSON) nesting deeper than `max_depth` and lone
    surrogates; JSONDecodeError as json raises it for text that is not JSON."""
    try:
        value = json.loads(text)
    except RecursionError:
        # json's C scanner gives up at the interpreter's recursion limit (about 1,000).
        raise UnreadableJSON(f"lists and objects nest deeper than {max_depth} levels") from None
    if depth(value) > max_depth:
        raise UnreadableJSON(f"lists and objects nest deeper than {max_depth} levels")
    if _SURROGATE_ESCAPE.search(text if isinstance(text, str) else text.decode("utf-8", "replace")):
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise UnreadableJSON("a string holds a lone UTF-16 surrogate (a \\ud800-\\udfff escape), which is not text") from None
    return value
