"""Strategic merge patch for built-in kinds (what `kubectl apply`, `edit` and `patch` send for them),
driven by the `x-kubernetes-patch-strategy` / `x-kubernetes-patch-merge-key` of their schemas.

Supported: maps merge key by key (null deletes); lists with strategy `merge` merge by their merge key
(primitive lists: union); `$patch: replace|delete` on maps and list items, `$retainKeys`,
`$setElementOrder/<list>` and `$deleteFromPrimitiveList/<list>`. Lists without a merge strategy are
replaced, as upstream.
"""

from __future__ import annotations

import copy
from typing import Any

from .errors import ApiError

Schema = dict[str, Any]
_ORDER = "$setElementOrder/"
_DELETE_PRIMITIVES = "$deleteFromPrimitiveList/"


def _invalid(message: str) -> ApiError:
    return ApiError(
        422, "Invalid", f"the server rejected our request due to an error in our request: {message}"
    )


def _child(schema: Schema, key: str) -> Schema:
    props = schema.get("properties") or {}
    if key in props:
        return props[key]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, dict) else {}


def strategic_merge(original: Any, patch: Any, schema: Schema) -> Any:
    if not isinstance(patch, dict):
        raise _invalid("a strategic merge patch must be a JSON object")
    return _merge_map(original if isinstance(original, dict) else {}, patch, schema)


def _merge_map(original: dict[str, Any], patch: dict[str, Any], schema: Schema) -> Any:
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    if directive is not None:
        raise _invalid(f"Unknown patch type: {directive}")
    out = dict(original)
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key.startswith(_ORDER):
            orders[key[len(_ORDER) :]] = value if isinstance(value, list) else []
        elif key.startswith(_DELETE_PRIMITIVES):
            field = key[len(_DELETE_PRIMITIVES) :]
            drop = value if isinstance(value, list) else []
            if isinstance(out.get(field), list):
                out[field] = [v for v in out[field] if v not in drop]
        elif key == "$retainKeys":
            continue
        elif value is None:
            out.pop(key, None)
        else:
            merged = _merge_value(out.get(key), value, _child(schema, key))
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
    for field, order in orders.items():
        if isinstance(out.get(field), list):
            out[field] = _reorder(out[field], order, _child(schema, field))
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        out = {k: v for k, v in out.items() if k in retain}
    return out


def _merge_value(original: Any, patch: Any, schema: Schema) -> Any:
    if isinstance(patch, dict):
        return _merge_map(original if isinstance(original, dict) else {}, patch, schema)
    if isinstance(patch, list) and "merge" in str(schema.get("x-kubernetes-patch-strategy", "")).split(","):
        return _merge_list(original if isinstance(original, list) else [], patch, schema)
    return copy.deepcopy(patch)


def _merge_list(original: list[Any], patch: list[Any], schema: Schema) -> list[Any]:
    key = schema.get("x-kubernetes-patch-merge-key")
    if not key:
        return original + [v for v in patch if v not in original]  # a primitive list: union
    items = schema.get("items") or {}
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [copy.deepcopy(p) for p in patch if not (isinstance(p, dict) and p.get("$patch") == "replace")]
    out = list(original)
    for element in patch:
        if not isinstance(element, dict) or key not in element:
            raise _invalid(f"map: {element} does not contain declared merge key: {key}")
        index = next(
            (i for i, o in enumerate(out) if isinstance(o, dict) and o.get(key) == element[key]), None
        )
        if element.get("$patch") == "delete":
            out = [o for o in out if not (isinstance(o, dict) and o.get(key) == element[key])]
        elif index is None:
            out.append(_merge_map({}, element, items))
        else:
            out[index] = _merge_map(out[index], element, items)
    return out


def _reorder(items: list[Any], order: list[Any], schema: Schema) -> list[Any]:
    """$setElementOrder: the listed elements in that order; others (not in the patch) keep their place
    relative to the end."""
    key = schema.get("x-kubernetes-patch-merge-key")

    def ident(item: Any) -> Any:
        return item.get(key) if key and isinstance(item, dict) else item

    wanted = [ident(o) for o in order]
    ranked = [i for i in items if ident(i) in wanted]
    ranked.sort(key=lambda i: wanted.index(ident(i)))
    return ranked + [i for i in items if ident(i) not in wanted]
