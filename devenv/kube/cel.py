"""`x-kubernetes-validations` CEL rules, evaluated with cel-python (celpy).

Transition rules (those that reference `oldSelf`) run only on update and only where the old value
correlates (object properties, map values, items of `x-kubernetes-list-type: map` lists), as upstream.
"""

from __future__ import annotations

import os
import re
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

from .errors import Cause
from .schema import join_path, type_name

_OLD_SELF = re.compile(r"\boldSelf\b")
_MISSING = object()


@lru_cache(maxsize=1)
def _env() -> Any:
    import celpy  # imported lazily: only CRDs with rules pay for the CEL parser

    _install_cached_parser()
    return celpy.Environment()


def _install_cached_parser() -> None:
    """Build celpy's Lark parser with Lark's on-disk cache: building the LALR tables takes ~0.3 s,
    loading them ~0.01 s, and the emulator must start in under a second."""
    import lark
    import lark.parsers
    from celpy.celparser import CELParser

    if CELParser.CEL_PARSER is not None:
        return
    import celpy

    version = getattr(celpy, "__version__", "0")
    cache = (
        Path(tempfile.gettempdir()) / f"osprov-celpy-{version}-lark-{lark.__version__}-{os.getuid()}.cache"
    )
    grammar = (Path(celpy.__file__).parent / "cel.lark").read_text()
    # Same options as celpy.celparser.CELParser.__init__, plus the cache.
    CELParser.CEL_PARSER = lark.Lark(
        grammar,
        parser="lalr",
        start="expr",
        debug=True,
        g_regex_flags=re.M,
        lexer_callbacks={"IDENT": CELParser.ambiguous_literals},
        propagate_positions=True,
        maybe_placeholders=False,
        priority="invert",
        tree_class=lark.Tree,
        cache=str(cache),
    )


@lru_cache(maxsize=4096)
def _program(expr: str) -> Any:
    from .cel_ext import FUNCTIONS

    env = _env()
    return env.program(env.compile(expr), functions=FUNCTIONS)


def _to_cel(value: Any) -> Any:
    import celpy

    return celpy.json_to_cel(value)


# apiserver/pkg/cel/escaping.go: a declared property whose name is a CEL keyword, or holds "__", ".", "-" or
# "/", is reached in a rule by its escaped name (`self.__import__`, `self.foo__dash__bar`). Map keys (maps
# declared by additionalProperties) are data, not properties, and keep their names.
CEL_RESERVED = frozenset(
    [
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ]
)


def escape_property(name: str) -> str:
    if name in CEL_RESERVED:
        return f"__{name}__"
    for raw, escaped in (("__", "__underscores__"), (".", "__dot__"), ("-", "__dash__"), ("/", "__slash__")):
        name = name.replace(raw, escaped)
    return name


def _escaped(value: Any, schema: dict[str, Any]) -> Any:
    """`value` with its declared properties renamed as a rule sees them."""
    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in props:
                out[escape_property(key)] = (
                    _escaped(item, props[key]) if isinstance(props[key], dict) else item
                )
            elif isinstance(additional, dict):
                out[key] = _escaped(item, additional)
            else:
                out[key] = item
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_escaped(item, schema["items"]) for item in value]
    return value


def _rules(schema: dict[str, Any]) -> list[dict[str, Any]]:
    rules = schema.get("x-kubernetes-validations") if isinstance(schema, dict) else None
    return rules if isinstance(rules, list) else []


def _children(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for key, sub in (schema.get("properties") or {}).items():
        out.append((f".properties.{key}", sub))
    if isinstance(schema.get("additionalProperties"), dict):
        out.append((".additionalProperties", schema["additionalProperties"]))
    if isinstance(schema.get("items"), dict):
        out.append((".items", schema["items"]))
    return out


def compile_errors(schema: dict[str, Any], path: str = "") -> list[tuple[str, str]]:
    """(schema path, message) for every rule or messageExpression that does not compile."""
    errors: list[tuple[str, str]] = []
    for i, rule in enumerate(_rules(schema)):
        for key in ("rule", "messageExpression"):
            expr = rule.get(key)
            if key == "rule" and not expr:
                errors.append((f"{path}.x-kubernetes-validations[{i}].rule", "rule must be set"))
            if expr:
                try:
                    _program(expr)
                except Exception as exc:  # celpy raises its own parse errors
                    errors.append(
                        (f"{path}.x-kubernetes-validations[{i}].{key}", f"compilation failed: {exc}")
                    )
    for sub_path, sub in _children(schema):
        if isinstance(sub, dict):
            errors.extend(compile_errors(sub, path + sub_path))
    return errors


def _run(expr: str, activation: dict[str, Any]) -> Any:
    try:
        return _program(expr).evaluate(activation)
    except Exception as exc:
        return exc


def _message(rule: dict[str, Any], activation: dict[str, Any]) -> str:
    expr = rule.get("messageExpression")
    if expr:
        result = _run(expr, activation)
        if isinstance(result, str) and result.strip():
            return str(result)
    if rule.get("message"):
        return str(rule["message"])
    return f"failed rule: {rule.get('rule', '')}"


def evaluate(value: Any, old: Any, schema: dict[str, Any], path: tuple[str, ...] = ()) -> list[Cause]:
    """All rule failures for `value` (and `old` on update; pass _MISSING-like None for create)."""
    causes: list[Cause] = []
    _walk(value, old if old is not None else _MISSING, schema, path, causes)
    return causes


def _walk(value: Any, old: Any, schema: dict[str, Any], path: tuple[str, ...], causes: list[Cause]) -> None:
    if not isinstance(schema, dict) or value is None:
        return
    rules = _rules(schema)
    if rules:
        _check_rules(
            _escaped(value, schema),
            _escaped(old, schema) if old is not _MISSING else old,
            rules,
            path,
            causes,
        )
    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        for key, item in value.items():
            sub = props.get(key) if key in props else additional if isinstance(additional, dict) else None
            if isinstance(sub, dict):
                old_item = old.get(key, _MISSING) if isinstance(old, dict) else _MISSING
                _walk(item, old_item, sub, (*path, key), causes)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        items = schema["items"]
        map_keys = schema.get("x-kubernetes-list-map-keys") or []
        old_by_key: dict[str, Any] = {}
        if schema.get("x-kubernetes-list-type") == "map" and isinstance(old, list):
            old_by_key = {repr([o.get(k) for k in map_keys]): o for o in old if isinstance(o, dict)}
        for i, item in enumerate(value):
            old_item = _MISSING
            if old_by_key and isinstance(item, dict):
                old_item = old_by_key.get(repr([item.get(k) for k in map_keys]), _MISSING)
            _walk(item, old_item, items, (*path, f"[{i}]"), causes)


def _check_rules(
    value: Any, old: Any, rules: list[dict[str, Any]], path: tuple[str, ...], causes: list[Cause]
) -> None:
    self_cel = _to_cel(value)
    old_cel = None if old is _MISSING else _to_cel(old)
    for rule in rules:
        expr = rule.get("rule") or ""
        is_transition = bool(_OLD_SELF.search(expr))
        if is_transition and old_cel is None:
            continue  # transition rules do not apply on create or to new, uncorrelated values
        activation = {"self": self_cel}
        if is_transition:
            activation["oldSelf"] = old_cel
        field = join_path(path)
        if rule.get("fieldPath"):
            field = field + str(rule["fieldPath"]) if field else str(rule["fieldPath"]).lstrip(".")
        result = _run(expr, activation)
        if isinstance(result, bool) or (type(result).__name__ == "BoolType"):
            if bool(result):
                continue
            reason = rule.get("reason") or "FieldValueInvalid"
            text = _message(rule, activation)
            if reason == "FieldValueInvalid":
                text = f'Invalid value: "{type_name(value)}": {text}'
            elif reason == "FieldValueForbidden":
                text = f"Forbidden: {text}"
            elif reason == "FieldValueRequired":
                text = f"Required value: {text}"
            elif reason == "FieldValueDuplicate":
                text = f"Duplicate value: {text}"
            causes.append(Cause(reason, text, field))
        else:
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    f'Invalid value: "{type_name(value)}": rule evaluation error: {expr}: {result}',
                    field,
                )
            )
