"""Test helpers: check a CRD schema is structural, evaluate its CEL rules with cel-python, check its OpenAPI
value keywords the way kube-apiserver does.

The evaluator walks an object alongside its schema the way the API server does: a rule runs on every node
that is present, `self` bound to the node and, for transition rules, `oldSelf` to the same node of the old
object (list items of x-kubernetes-list-type=map lists are matched by key, as Kubernetes does). CEL gets the
Kubernetes string library subset the kube emulator provides (trim, split, ...).

`openapi_violations` checks lengths, counts, bounds and patterns; patterns are matched with RE2, the engine
kube-apiserver uses (Go's regexp), so "x\n" does not match ^x$ there.
"""

from __future__ import annotations

from typing import Any

import celpy
import re2

from devenv.kube.cel_ext import FUNCTIONS

_ENV = celpy.Environment()
Schema = dict[str, Any]


def structural_problems(schema: Schema, where: str = "") -> list[str]:
    """Violations of the Kubernetes structural-schema rules that a pydantic-derived schema could commit."""
    problems = []
    if "type" not in schema and not schema.get("x-kubernetes-int-or-string"):
        problems.append(f"{where}: no type")
    for key in ("$ref", "anyOf", "oneOf", "allOf", "not", "propertyNames", "$defs", "const", "title"):
        if key in schema:
            problems.append(f"{where}: {key} is not allowed")
    if "properties" in schema and "additionalProperties" in schema:
        problems.append(f"{where}: properties and additionalProperties are mutually exclusive")
    if isinstance(schema.get("exclusiveMinimum"), int | float) and not isinstance(
        schema.get("exclusiveMinimum"), bool
    ):
        problems.append(f"{where}: exclusiveMinimum must be a boolean in OpenAPI v3.0")
    for name, sub in schema.get("properties", {}).items():
        problems += structural_problems(sub, f"{where}.{name}")
    if isinstance(schema.get("additionalProperties"), dict):
        problems += structural_problems(schema["additionalProperties"], f"{where}{{}}")
    if "items" in schema:
        problems += structural_problems(schema["items"], f"{where}[]")
    for key in schema.get("x-kubernetes-list-map-keys", []):
        if (
            key not in schema["items"].get("required", [])
            and "default" not in schema["items"]["properties"][key]
        ):
            problems.append(f"{where}: list map key {key} must be required or defaulted")
    return problems


def all_rules(schema: Schema) -> list[str]:
    rules = [r["rule"] for r in schema.get("x-kubernetes-validations", [])]
    for sub in schema.get("properties", {}).values():
        rules += all_rules(sub)
    if isinstance(schema.get("additionalProperties"), dict):
        rules += all_rules(schema["additionalProperties"])
    if "items" in schema:
        rules += all_rules(schema["items"])
    return rules


def compile_rule(rule: str) -> Any:
    return _ENV.program(_ENV.compile(rule), functions=FUNCTIONS)


def _evaluate(rule: str, value: Any, old: Any) -> bool:
    activation = {"self": celpy.json_to_cel(value)}
    if "oldSelf" in rule:
        activation["oldSelf"] = celpy.json_to_cel(old)
    return bool(compile_rule(rule).evaluate(activation))


_MISSING = object()


def violations(schema: Schema, value: Any, old: Any = _MISSING, where: str = "") -> list[str]:
    """Messages of the CEL rules `value` breaks (transition rules only when `old` is given)."""
    messages = []
    for validation in schema.get("x-kubernetes-validations", []):
        if "oldSelf" in validation["rule"] and old is _MISSING:
            continue  # a transition rule only runs on an update of an existing value
        if not _evaluate(validation["rule"], value, old):
            messages.append(f"{where}: {validation.get('message', validation['rule'])}")
    if isinstance(value, dict):
        for name, sub in schema.get("properties", {}).items():
            if name in value:
                old_sub = old.get(name, _MISSING) if isinstance(old, dict) else _MISSING
                messages += violations(sub, value[name], old_sub, f"{where}.{name}")
        if isinstance(schema.get("additionalProperties"), dict):
            for name, sub_value in value.items():
                old_sub = old.get(name, _MISSING) if isinstance(old, dict) else _MISSING
                messages += violations(schema["additionalProperties"], sub_value, old_sub, f"{where}.{name}")
    if isinstance(value, list) and "items" in schema:
        keys = schema.get("x-kubernetes-list-map-keys")
        for index, item in enumerate(value):
            old_item: Any = _MISSING
            if keys and isinstance(old, list):
                old_item = next((o for o in old if all(o.get(k) == item.get(k) for k in keys)), _MISSING)
            messages += violations(schema["items"], item, old_item, f"{where}[{index}]")
    return messages


def openapi_violations(schema: Schema, value: Any, where: str = "") -> list[str]:
    """Value keywords `value` breaks: min/maxLength, pattern (RE2), min/maxItems, maxProperties, bounds,
    required, enum. (Types and pruning are the emulator's business; these are what the limits use.)"""
    found: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{where}: not one of {schema['enum']}")
    if isinstance(value, str):
        if len(value) > schema.get("maxLength", len(value)):
            found.append(f"{where}: longer than {schema['maxLength']}")
        if len(value) < schema.get("minLength", 0):
            found.append(f"{where}: shorter than {schema['minLength']}")
        if "pattern" in schema and re2.search(schema["pattern"], value) is None:
            found.append(f"{where}: does not match {schema['pattern']}")
    elif isinstance(value, bool):
        pass
    elif isinstance(value, int | float):
        if value > schema.get("maximum", value) or value < schema.get("minimum", value):
            found.append(f"{where}: outside [{schema.get('minimum')}, {schema.get('maximum')}]")
    elif isinstance(value, list):
        if len(value) > schema.get("maxItems", len(value)):
            found.append(f"{where}: more than {schema['maxItems']} items")
        for index, item in enumerate(value):
            found += openapi_violations(schema.get("items", {}), item, f"{where}[{index}]")
    elif isinstance(value, dict):
        if len(value) > schema.get("maxProperties", len(value)):
            found.append(f"{where}: more than {schema['maxProperties']} properties")
        found += [f"{where}.{name}: required" for name in schema.get("required", []) if name not in value]
        for name, item in value.items():
            sub = schema.get("properties", {}).get(name, schema.get("additionalProperties"))
            if isinstance(sub, dict):
                found += openapi_violations(sub, item, f"{where}.{name}")
    return found


def admission_violations(schema: Schema, value: Any, old: Any = _MISSING) -> list[str]:
    """Everything kube-apiserver would reject `value` for: OpenAPI keywords, then CEL rules."""
    return openapi_violations(schema, value) + violations(schema, value, old)
