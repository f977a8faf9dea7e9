"""Typed decoding of built-in kinds, as kube-apiserver's Go decoder does it: a value of the wrong JSON type
is a 400 ("cannot be handled as a Secret: json: cannot unmarshal …"), int32 fields overflow, and
metav1.Time / metav1.MicroTime strings are parsed and re-encoded (UTC, "Z"; MicroTime needs exactly six
fractional digits, like Go's layout "2006-01-02T15:04:05.000000Z07:00").

For custom resources the apiserver decodes ObjectMeta leniently instead: malformed metadata fields are
dropped (`drop_malformed_meta`).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from .errors import ApiError, bad_request

_GO_JSON_TYPE = {bool: "bool", int: "number", float: "number", str: "string", list: "array", dict: "object"}
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})")
TIME_LAYOUT = "2006-01-02T15:04:05Z07:00"
MICRO_LAYOUT = "2006-01-02T15:04:05.000000Z07:00"


class TypeMismatch(Exception):
    pass


def parse_time(value: str, micro: bool) -> datetime:
    """Go's time.Parse with RFC3339 (fraction optional) or RFC3339Micro (exactly six digits)."""
    match = _RFC3339.fullmatch(value)
    fraction = match.group(7) if match else None
    if match is None or (micro and (fraction is None or len(fraction) != 7)):
        layout = MICRO_LAYOUT if micro else TIME_LAYOUT
        raise TypeMismatch(f'parsing time "{value}" as "{layout}": cannot parse "{value}" as "{layout}"')
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    zone = match.group(8)
    tz = UTC
    if zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        tz = timezone(sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
    micros = int((fraction or ".0")[1:7].ljust(6, "0"))
    try:
        return datetime(year, month, day, hour, minute, second, micros, tzinfo=tz)
    except ValueError as exc:
        raise TypeMismatch(f'parsing time "{value}": {exc}') from None


def format_time(moment: datetime, micro: bool) -> str:
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def _go_type(schema: dict[str, Any]) -> str:
    if schema.get("x-kubernetes-int-or-string"):
        return "intstr.IntOrString"
    kind = schema.get("type")
    if kind == "integer":
        return str(schema.get("format", "int64"))
    if kind == "array":
        return "[]" + _go_type(schema.get("items") or {})
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return "map[string]" + _go_type(schema["additionalProperties"])
    if schema.get("format") == "date-time":
        return "v1.MicroTime" if schema.get("x-emulator-time") == "micro" else "v1.Time"
    return {"string": "string", "boolean": "bool", "number": "float64"}.get(str(kind), "struct")


def _mismatch(value: Any, schema: dict[str, Any], path: str) -> TypeMismatch:
    shown = _GO_JSON_TYPE.get(type(value), "value")
    if isinstance(value, int) and not isinstance(value, bool):
        shown = f"number {value}"
    return TypeMismatch(
        f"json: cannot unmarshal {shown} into Go struct field {path or '.'} of type {_go_type(schema)}"
    )


def decode(value: Any, schema: dict[str, Any], path: str = "") -> Any:
    """Check `value` against a built-in kind's schema; returns it with times normalised."""
    if value is None or not isinstance(schema, dict) or not schema:
        return value
    if schema.get("x-kubernetes-int-or-string"):
        if not isinstance(value, (int, str)) or isinstance(value, bool):
            raise _mismatch(value, schema, path)
        return value
    kind = schema.get("type")
    if kind == "string":
        if not isinstance(value, str):
            raise _mismatch(value, schema, path)
        if schema.get("format") == "date-time":
            micro = schema.get("x-emulator-time") == "micro"
            return format_time(parse_time(value, micro), micro)
        return value
    if kind == "integer":
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise _mismatch(value, schema, path)
        low, high = _INT_RANGES[str(schema.get("format", "int64"))]
        if not low <= value <= high:
            raise _mismatch(value, schema, path)
        return value
    if kind == "boolean":
        if not isinstance(value, bool):
            raise _mismatch(value, schema, path)
        return value
    if kind == "array":
        if not isinstance(value, list):
            raise _mismatch(value, schema, path)
        items = schema.get("items") or {}
        return [decode(item, items, path) for item in value]
    if kind == "object":
        if not isinstance(value, dict):
            raise _mismatch(value, schema, path)
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        out = {}
        for key, item in value.items():
            sub = props.get(key, extra if isinstance(extra, dict) else {})
            out[key] = decode(item, sub, f"{path}.{key}")
        return out
    return value


def decode_body(body: dict[str, Any], schema: dict[str, Any], kind: str, version: str) -> dict[str, Any]:
    try:
        decoded: dict[str, Any] = decode(body, schema)
    except TypeMismatch as exc:
        raise cannot_handle(kind, version, str(exc)) from None
    return decoded


def cannot_handle(kind: str, version: str, why: str) -> ApiError:
    return bad_request(f'{kind} in version "{version}" cannot be handled as a {kind}: {why}')


_META_SHAPES: dict[str, type] = {
    "name": str,
    "generateName": str,
    "namespace": str,
    "uid": str,
    "resourceVersion": str,
    "selfLink": str,
    "creationTimestamp": str,
    "deletionTimestamp": str,
    "managedFields": list,  # its entries are checked by the field manager
}


def drop_malformed_meta(meta: dict[str, Any], meta_schema: dict[str, Any]) -> dict[str, Any]:
    """What the custom resource handler does with ObjectMeta: fields that do not decode are dropped.
    (Server-set fields are only shape-checked: the store replaces them anyway.)"""
    props = meta_schema.get("properties") or {}
    kept = {}
    for key, value in meta.items():
        shape = _META_SHAPES.get(key)
        if shape is not None:
            if isinstance(value, shape):
                kept[key] = value
            continue
        try:
            kept[key] = decode(value, props.get(key, {}), f".metadata.{key}")
        except TypeMismatch:
            continue
    return kept
