"""Structural OpenAPI v3 schema handling for custom resources: pruning, defaulting and validation.

Order as in the real apiserver: prune unknown fields, apply defaults, validate the schema, then evaluate
`x-kubernetes-validations` (CEL). Error texts follow kube-openapi's so tests and users see familiar messages.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from .errors import Cause
from .regex import compile_re2

PRESERVE = "x-kubernetes-preserve-unknown-fields"
INT_OR_STRING = "x-kubernetes-int-or-string"
EMBEDDED = "x-kubernetes-embedded-resource"


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def show(value: Any) -> str:
    """How apimachinery prints a value inside "Invalid value: …"."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # Go's %q: quotes, with \n and friends escaped
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if value is None:
        return '"null"'
    return f'"{type_name(value)}"'


def join_path(path: tuple[str, ...]) -> str:
    out = ""
    for seg in path:
        if seg.startswith("["):
            out += seg
        else:
            out = f"{out}.{seg}" if out else seg
    return out


# ---------------------------------------------------------------------------------------------- pruning
def prune(value: Any, schema: dict[str, Any], root: bool = False) -> Any:
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        keep_unknown = bool(schema.get(PRESERVE)) or additional is True
        out: dict[str, Any] = {}
        for key, item in value.items():
            if (root and key in ("apiVersion", "kind", "metadata")) or (
                schema.get(EMBEDDED) and key in ("apiVersion", "kind", "metadata")
            ):
                out[key] = item
            elif key in props:
                out[key] = prune(item, props[key])
            elif isinstance(additional, dict):
                out[key] = prune(item, additional)
            elif keep_unknown:
                out[key] = item
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [prune(item, schema["items"]) for item in value]
    return value


# -------------------------------------------------------------------------------------------- defaulting
def apply_defaults(value: Any, schema: dict[str, Any]) -> Any:
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties") or {}
        out = dict(value)
        for key, sub in props.items():
            if key in out and out[key] is None and not sub.get("nullable") and "default" in sub:
                del out[key]  # null on a non-nullable field with a default is defaulted, as upstream
            if key not in out and isinstance(sub, dict) and "default" in sub:
                out[key] = copy.deepcopy(sub["default"])
            if key in out:
                out[key] = apply_defaults(out[key], sub)
        additional = schema.get("additionalProperties")
        if isinstance(additional, dict):
            for key in out:
                if key not in props:
                    out[key] = apply_defaults(out[key], additional)
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [apply_defaults(item, schema["items"]) for item in value]
    return value


# -------------------------------------------------------------------------------------------- validation
# float64 integers JSON can carry exactly (kube-openapi's IsFloat64AJSONInteger): an integer beyond int64
# is decoded as a float64 by the apiserver, and then is no longer an "integer".
_MAX_JSON_INTEGER_FLOAT = 2**53 - 1


def patterns(schema: Any, path: str = "") -> list[tuple[str, str]]:
    """(path, pattern) of every `pattern` in a schema, for checking them when a CRD is created."""
    found: list[tuple[str, str]] = []
    if isinstance(schema, dict):
        if isinstance(schema.get("pattern"), str):
            found.append((f"{path}.pattern", schema["pattern"]))
        for key, sub in (schema.get("properties") or {}).items():
            found += patterns(sub, f"{path}.properties[{key}]")
        for key in ("items", "additionalProperties", "not"):
            found += patterns(schema.get(key), f"{path}.{key}")
        for key in ("allOf", "anyOf", "oneOf"):
            for i, sub in enumerate(schema.get(key) or []):
                found += patterns(sub, f"{path}.{key}[{i}]")
    return found


def _type_ok(value: Any, schema: dict[str, Any]) -> bool:
    expected = schema.get("type")
    if schema.get(INT_OR_STRING):
        return isinstance(value, (int, str)) and not isinstance(value, bool)
    if value is None:
        return bool(schema.get("nullable")) or not expected
    if not expected:
        return True
    actual = type_name(value)
    if expected == "number":
        return actual in ("integer", "number")
    if expected == "integer" and isinstance(value, float):
        return value.is_integer() and abs(value) <= _MAX_JSON_INTEGER_FLOAT
    return actual == expected


def validate(value: Any, schema: dict[str, Any], path: tuple[str, ...] = ()) -> list[Cause]:
    causes: list[Cause] = []
    _validate(value, schema, path, causes)
    return causes


def _validate(value: Any, schema: dict[str, Any], path: tuple[str, ...], causes: list[Cause]) -> None:
    if not isinstance(schema, dict):
        return
    field = join_path(path)
    where = field or "body"
    if not _type_ok(value, schema):
        shown = f'"{type_name(value)}"'  # upstream prints the JSON type name, not the value
        expected = "integer or string" if schema.get(INT_OR_STRING) else schema.get("type")
        causes.append(
            Cause(
                "FieldValueTypeInvalid",
                f"Invalid value: {shown}: {where} in body must be of type {expected}: {shown}",
                field,
            )
        )
        return
    if value is None:
        return
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(show(v) for v in schema["enum"])
        causes.append(
            Cause(
                "FieldValueNotSupported",
                f"Unsupported value: {show(value)}: supported values: {allowed}",
                field,
            )
        )
    if isinstance(value, str):
        _validate_string(value, schema, where, field, causes)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        _validate_number(value, schema, where, field, causes)
    elif isinstance(value, list):
        _validate_array(value, schema, path, causes)
    elif isinstance(value, dict):
        _validate_object(value, schema, path, causes)
    for sub in schema.get("allOf") or []:
        _validate(value, sub, path, causes)
    any_of = schema.get("anyOf")
    if any_of and not any(not validate(value, sub, path) for sub in any_of):
        causes.append(
            Cause(
                "FieldValueInvalid",
                f"Invalid value: {show(value)}: {where} in body must match at least one schema in anyOf",
                field,
            )
        )
    one_of = schema.get("oneOf")
    if one_of and sum(1 for sub in one_of if not validate(value, sub, path)) != 1:
        causes.append(
            Cause(
                "FieldValueInvalid",
                f"Invalid value: {show(value)}: {where} in body must match exactly one schema in oneOf",
                field,
            )
        )
    not_schema = schema.get("not")
    if isinstance(not_schema, dict) and not validate(value, not_schema, path):
        causes.append(
            Cause(
                "FieldValueInvalid",
                f"Invalid value: {show(value)}: {where} in body must not match the schema in not",
                field,
            )
        )


def _validate_string(value: str, schema: dict[str, Any], where: str, field: str, causes: list[Cause]) -> None:
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        causes.append(
            Cause("FieldValueTooLong", f"Too long: may not be more than {schema['maxLength']} bytes", field)
        )
    if "minLength" in schema and len(value) < schema["minLength"]:
        causes.append(
            Cause(
                "FieldValueInvalid",
                f"Invalid value: {show(value)}: {where} in body should be at least {schema['minLength']} chars long",
                field,
            )
        )
    if "pattern" in schema and not compile_re2(schema["pattern"]).search(value):
        causes.append(
            Cause(
                "FieldValueInvalid",
                f"Invalid value: {show(value)}: {where} in body should match '{schema['pattern']}'",
                field,
            )
        )


def _validate_number(
    value: float, schema: dict[str, Any], where: str, field: str, causes: list[Cause]
) -> None:
    if "minimum" in schema:
        low = schema["minimum"]
        if value < low or (schema.get("exclusiveMinimum") and value == low):
            rel = "greater than" if schema.get("exclusiveMinimum") else "greater than or equal to"
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    f"Invalid value: {show(value)}: {where} in body should be {rel} {low}",
                    field,
                )
            )
    if "maximum" in schema:
        high = schema["maximum"]
        if value > high or (schema.get("exclusiveMaximum") and value == high):
            rel = "less than" if schema.get("exclusiveMaximum") else "less than or equal to"
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    f"Invalid value: {show(value)}: {where} in body should be {rel} {high}",
                    field,
                )
            )


def _validate_array(
    value: list[Any], schema: dict[str, Any], path: tuple[str, ...], causes: list[Cause]
) -> None:
    field = join_path(path)
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        causes.append(
            Cause(
                "FieldValueTooMany",
                f"Too many: {len(value)}: must have at most {schema['maxItems']} items",
                field,
            )
        )
    if "minItems" in schema and len(value) < schema["minItems"]:
        causes.append(
            Cause(
                "FieldValueInvalid",
                f"Invalid value: {len(value)}: {field or 'body'} in body should have at least {schema['minItems']} items",
                field,
            )
        )
    items = schema.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(value):
            _validate(item, items, (*path, f"[{i}]"), causes)
    list_type = schema.get("x-kubernetes-list-type")
    if list_type in ("set", "map"):
        keys = schema.get("x-kubernetes-list-map-keys") or []
        seen: set[str] = set()
        for i, item in enumerate(value):
            ident = (
                repr([item.get(k) for k in keys])
                if list_type == "map" and isinstance(item, dict)
                else repr(item)
            )
            if ident in seen:
                causes.append(Cause("FieldValueDuplicate", f"Duplicate value: {show(item)}", f"{field}[{i}]"))
            seen.add(ident)


def _validate_object(
    value: dict[str, Any], schema: dict[str, Any], path: tuple[str, ...], causes: list[Cause]
) -> None:
    for req in schema.get("required") or []:
        if req not in value:
            causes.append(Cause("FieldValueRequired", "Required value", join_path((*path, req))))
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        causes.append(
            Cause(
                "FieldValueTooMany",
                f"Too many: {len(value)}: must have at most {schema['maxProperties']} items",
                join_path(path),
            )
        )
    if "minProperties" in schema and len(value) < schema["minProperties"]:
        causes.append(
            Cause(
                "FieldValueInvalid",
                f"Invalid value: {len(value)}: {join_path(path) or 'body'} in body should have at least {schema['minProperties']} properties",
                join_path(path),
            )
        )
    props: dict[str, Any] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    for key, item in value.items():
        if not path and key in ("apiVersion", "kind", "metadata"):
            continue  # ObjectMeta is validated by the store, not by the CRD schema
        if key in props:
            _validate(item, props[key], (*path, key), causes)
        elif isinstance(additional, dict):
            _validate(item, additional, (*path, key), causes)
