"""A subset of the Kubernetes CEL libraries (strings, lists) on top of celpy's standard functions.

Method calls `x.f(a)` reach celpy functions as f(x, a). Only what CRD authors commonly use is provided;
anything else fails to evaluate and is reported as a rule evaluation error.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from celpy import celtypes


def _str(value: Any) -> celtypes.StringType:
    return celtypes.StringType(value)


def _int(value: int) -> celtypes.IntType:
    return celtypes.IntType(value)


def _index_of(target: Any, item: Any, start: Any = 0) -> celtypes.IntType:
    if isinstance(target, str):
        return _int(str(target).find(str(item), int(start)))
    items = list(target)
    return _int(items.index(item) if item in items else -1)


def _last_index_of(target: Any, item: Any) -> celtypes.IntType:
    if isinstance(target, str):
        return _int(str(target).rfind(str(item)))
    items = list(target)
    return _int(len(items) - 1 - items[::-1].index(item) if item in items else -1)


def _split(text: Any, sep: Any, limit: Any = -1) -> celtypes.ListType:
    parts = str(text).split(str(sep), int(limit) - 1) if int(limit) > 0 else str(text).split(str(sep))
    return celtypes.ListType([_str(p) for p in parts])


def _replace(text: Any, old: Any, new: Any, limit: Any = -1) -> celtypes.StringType:
    return _str(str(text).replace(str(old), str(new), int(limit)))


def _substring(text: Any, start: Any, end: Any = None) -> celtypes.StringType:
    return _str(str(text)[int(start) : None if end is None else int(end)])


def _join(items: Any, sep: Any = "") -> celtypes.StringType:
    return _str(str(sep).join(str(i) for i in items))


def _is_sorted(items: Any) -> celtypes.BoolType:
    values = list(items)
    return celtypes.BoolType(all(a <= b for a, b in itertools.pairwise(values)))


def _sum(items: Any) -> Any:
    values = list(items)
    total = values[0] if values else _int(0)
    for value in values[1:]:
        total = total + value
    return total


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "lowerAscii": lambda s: _str(str(s).lower()),
    "upperAscii": lambda s: _str(str(s).upper()),
    "trim": lambda s: _str(str(s).strip()),
    "charAt": lambda s, i: _str(str(s)[int(i)] if int(i) < len(str(s)) else ""),
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "split": _split,
    "replace": _replace,
    "substring": _substring,
    "join": _join,
    "isSorted": _is_sorted,
    "sum": _sum,
    "min": lambda items: min(list(items)),
    "max": lambda items: max(list(items)),
}
