"""Field sets of objects, as structured-merge-diff (server-side apply) computes them.

A path is a tuple of FieldsV1 keys: `f:name` (a field or map entry), `k:{"name":"x"}` (an item of an
`x-kubernetes-list-type: map` list, keys sorted), `v:"x"` (an item of a set). The schema decides what is
a leaf: scalars, atomic lists/maps (`x-kubernetes-list-type: atomic` — the default for CRD lists —,
`x-kubernetes-map-type: atomic`), and empty maps/lists. Values without a schema (preserved unknown
fields) are "deduced": maps are granular, lists atomic.

- `field_set(value)`: ToFieldSet — what a manager owns when it applies `value`.
- `compare(old, new)`: Compare — added/removed/modified paths (modified only for leaves).
- `merge(live, config)`: Merge — config wins on leaves; lists merged by key, in SMD's order.
- `remove(value, paths)`: RemoveItems.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

Path = tuple[str, ...]
Schema = dict[str, Any]

PRESERVE = "x-kubernetes-preserve-unknown-fields"


class FieldPathError(ValueError):
    """A list item that cannot be keyed (a missing key field, a null or non-object item)."""


def _child(schema: Schema, key: str) -> tuple[Schema, bool]:
    """(schema of `key`, whether it is a declared field rather than a map entry)."""
    props = schema.get("properties") or {}
    if key in props:
        return props[key], True
    extra = schema.get("additionalProperties")
    return (extra if isinstance(extra, dict) else {}), False


def _list_type(schema: Schema) -> str:
    return str(schema.get("x-kubernetes-list-type") or "atomic")


def _atomic_map(schema: Schema) -> bool:
    return schema.get("x-kubernetes-map-type") == "atomic"


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def item_key(schema: Schema, item: Any) -> str:
    """The path element of a list item (k: for map lists, v: for sets)."""
    if _list_type(schema) == "set":
        return "v:" + _dump(item)
    if not isinstance(item, dict):
        raise FieldPathError("associative list with keys may not have non-map elements")
    keys: dict[str, Any] = {}
    item_schema = schema.get("items") or {}
    for name in schema.get("x-kubernetes-list-map-keys") or []:
        if name in item:
            keys[name] = item[name]
        elif "default" in ((item_schema.get("properties") or {}).get(name) or {}):
            keys[name] = item_schema["properties"][name]["default"]
        else:
            raise FieldPathError(
                f'associative list with keys has an element that omits key field "{name}" '
                "(and doesn't have default value)"
            )
    return "k:" + _dump(keys)


def _keyed(schema: Schema, items: list[Any]) -> tuple[list[str], dict[str, Any]]:
    """Path elements in order (repeats ignored, like SMD) and the item of each."""
    order: list[str] = []
    seen: dict[str, Any] = {}
    for item in items:
        pe = item_key(schema, item)
        if pe not in seen:
            seen[pe] = item
            order.append(pe)
    return order, seen


def _is_granular_list(schema: Schema, value: Any) -> bool:
    return isinstance(value, list) and bool(value) and _list_type(schema) != "atomic"


def _is_granular_map(schema: Schema, value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and not _atomic_map(schema)


# ------------------------------------------------------------------------------------------ field set
def field_set(value: Any, schema: Schema, path: Path = ()) -> set[Path]:
    out: set[Path] = set()
    _to_set(value, schema, path, out)
    return out


def _to_set(value: Any, schema: Schema, path: Path, out: set[Path]) -> None:
    if isinstance(value, list):
        if _list_type(schema) == "atomic":
            out.add(path)
            return
        items = schema.get("items") or {}
        for item in value:
            sub = (*path, item_key(schema, item))
            _to_set(item, items, sub, out)
            out.add(sub)
    elif isinstance(value, dict):
        if _atomic_map(schema):
            out.add(path)
            return
        for key, item in value.items():
            sub_schema, declared = _child(schema, key)
            sub = (*path, "f:" + key)
            _to_set(item, sub_schema, sub, out)
            if not declared or item is None or item == {}:
                out.add(sub)
    else:
        out.add(path)


# -------------------------------------------------------------------------------------------- compare
@dataclass
class Comparison:
    added: set[Path] = field(default_factory=set)
    removed: set[Path] = field(default_factory=set)
    modified: set[Path] = field(default_factory=set)


_ABSENT = object()


def compare(old: Any, new: Any, schema: Schema) -> Comparison:
    result = Comparison()
    _compare(old, new, schema, (), result)
    return result


def _compare(old: Any, new: Any, schema: Schema, path: Path, out: Comparison) -> None:
    granular = _is_granular_list(schema, old) or _is_granular_list(schema, new)
    granular_map = _is_granular_map(schema, old) or _is_granular_map(schema, new)
    if (isinstance(old, list) or isinstance(new, list)) and granular:
        items = schema.get("items") or {}
        old_order, old_items = _keyed(schema, old if isinstance(old, list) else [])
        new_order, new_items = _keyed(schema, new if isinstance(new, list) else [])
        for pe in dict.fromkeys(old_order + new_order):
            _visit(old_items.get(pe, _ABSENT), new_items.get(pe, _ABSENT), items, (*path, pe), out)
    elif (isinstance(old, dict) or isinstance(new, dict)) and granular_map:
        old_map = old if isinstance(old, dict) else {}
        new_map = new if isinstance(new, dict) else {}
        for key in dict.fromkeys([*old_map, *new_map]):
            sub_schema, _ = _child(schema, key)
            _visit(old_map.get(key, _ABSENT), new_map.get(key, _ABSENT), sub_schema, (*path, "f:" + key), out)
    elif path:
        # A leaf (scalar, atomic or empty list/map).
        if old is _ABSENT:
            out.added.add(path)
        elif new is _ABSENT:
            out.removed.add(path)
        elif old != new:
            out.modified.add(path)


def _visit(old: Any, new: Any, schema: Schema, path: Path, out: Comparison) -> None:
    if old is _ABSENT and new is _ABSENT:
        return
    leaf = not (
        _is_granular_list(schema, old)
        or _is_granular_list(schema, new)
        or _is_granular_map(schema, old)
        or _is_granular_map(schema, new)
    )
    if leaf:
        _compare(old, new, schema, path, out)
        return
    _compare(old, new, schema, path, out)
    if old is _ABSENT:
        out.added.add(path)  # a node present on one side only (SMD's postItemHook)
    elif new is _ABSENT:
        out.removed.add(path)


# ---------------------------------------------------------------------------------------------- merge
def merge(live: Any, config: Any, schema: Schema) -> Any:
    if (
        isinstance(config, list)
        and isinstance(live, list)
        and _list_type(schema) != "atomic"
        and (live or config)
    ):
        return _merge_lists(live, config, schema)
    if isinstance(config, dict) and isinstance(live, dict) and not _atomic_map(schema):
        out = dict(live)
        for key, value in config.items():
            sub_schema, _ = _child(schema, key)
            out[key] = merge(live[key], value, sub_schema) if key in live else value
        return out
    return config


def _merge_lists(live: list[Any], config: list[Any], schema: Schema) -> list[Any]:
    """SMD's mergingWalker.visitListItems: shared items follow the config's order, live-only items keep
    their place relative to them, config-only items come where the config has them."""
    items = schema.get("items") or {}
    lhs_order, lhs = _keyed(schema, live)
    rhs_order, rhs = _keyed(schema, config)
    shared = [pe for pe in rhs_order if pe in lhs]
    next_shared = shared.pop(0) if shared else None
    out: list[Any] = []
    li = ri = 0
    while li < len(lhs_order) or ri < len(rhs_order):
        if li < len(lhs_order) and ri < len(rhs_order):
            pe = lhs_order[li]
            if pe == rhs_order[ri]:
                out.append(merge(lhs[pe], rhs[pe], items))
                li, ri = li + 1, ri + 1
                next_shared = shared.pop(0) if shared else None
                continue
            if pe in rhs and next_shared is not None and next_shared != pe:
                li += 1  # a shared item, but not the one due in this round
                continue
        if li < len(lhs_order) and lhs_order[li] not in rhs:
            out.append(lhs[lhs_order[li]])
            li += 1
            continue
        if ri < len(rhs_order):
            pe = rhs_order[ri]
            out.append(merge(lhs[pe], rhs[pe], items) if pe in lhs else rhs[pe])
            ri += 1
            if next_shared == pe:
                next_shared = shared.pop(0) if shared else None
        else:
            li += 1
    return out


# --------------------------------------------------------------------------------------------- remove
def remove(value: Any, paths: set[Path], schema: Schema) -> Any:
    """Drop every member of `paths` (and what is below it) from `value`."""
    if not paths:
        return value
    return _remove(value, schema, (), paths, {p[:i] for p in paths for i in range(len(p))})


def _remove(value: Any, schema: Schema, path: Path, paths: set[Path], prefixes: set[Path]) -> Any:
    if isinstance(value, dict) and not _atomic_map(schema):
        out = {}
        for key, item in value.items():
            sub = (*path, "f:" + key)
            if sub in paths:
                continue
            out[key] = (
                _remove(item, _child(schema, key)[0], sub, paths, prefixes) if sub in prefixes else item
            )
        return out
    if isinstance(value, list) and _list_type(schema) != "atomic":
        items = schema.get("items") or {}
        kept = []
        for item in value:
            sub = (*path, item_key(schema, item))
            if sub in paths:
                continue
            kept.append(_remove(item, items, sub, paths, prefixes) if sub in prefixes else item)
        return kept
    return value


def path_string(path: Path) -> str:
    """fieldpath.Path.String(): .spec.ports[port=80,protocol="TCP"].name, .metadata.finalizers[="x"]."""
    out = ""
    for pe in path:
        kind, rest = pe[0], pe[2:]
        if kind == "f":
            out += "." + rest
        elif kind == "k":
            keys = json.loads(rest)
            out += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in keys.items()) + "]"
        elif kind == "v":
            out += f"[={rest}]"
        else:
            out += f"[{rest}]"
    return out
