"""Label selectors and the field selectors the apiserver supports for every resource."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import bad_request

_SET_EXPR = re.compile(r"^\s*(!?)([A-Za-z0-9._/-]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!exists"
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "=":
            return present and value == self.values[0]
        if self.op == "!=":
            return not present or value != self.values[0]
        if self.op == "in":
            return present and value in self.values
        if self.op == "notin":
            return not present or value not in self.values
        if self.op == "exists":
            return present
        return not present


def _split_top(selector: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts, depth, current = [], 0, ""
    for ch in selector:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def parse_labels(selector: str) -> list[Requirement]:
    out: list[Requirement] = []
    for part in _split_top(selector or ""):
        set_match = _SET_EXPR.match(part)
        if set_match:
            values = tuple(v.strip() for v in set_match.group(4).split(",") if v.strip())
            out.append(Requirement(set_match.group(2), set_match.group(3), values))
        elif "!=" in part:
            key, value = part.split("!=", 1)
            out.append(Requirement(key.strip(), "!=", (value.strip(),)))
        elif "==" in part or "=" in part:
            key, value = part.split("==", 1) if "==" in part else part.split("=", 1)
            out.append(Requirement(key.strip(), "=", (value.strip(),)))
        elif part.startswith("!"):
            out.append(Requirement(part[1:].strip(), "!exists"))
        elif re.fullmatch(r"[A-Za-z0-9._/-]+", part):
            out.append(Requirement(part, "exists"))
        else:
            raise bad_request(f"unable to parse requirement: {part!r}")
    return out


FieldGetter = Callable[[dict[str, Any]], str]


def _meta_field(name: str) -> FieldGetter:
    return lambda obj: str((obj.get("metadata") or {}).get(name) or "")


_FIELDS: dict[str, FieldGetter] = {
    "metadata.name": _meta_field("name"),
    "metadata.namespace": _meta_field("namespace"),
}


def _split_escaped(text: str, sep: str) -> list[str]:
    """Split on `sep` where it is not escaped with a backslash (fields.ParseSelector)."""
    parts, current, i = [], "", 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            current += text[i : i + 2]
            i += 2
        elif text.startswith(sep, i):
            parts.append(current)
            current, i = "", i + len(sep)
        else:
            current += text[i]
            i += 1
    parts.append(current)
    return parts


def _unescape(value: str) -> str:
    out, i = "", 0
    while i < len(value):
        if value[i] == "\\" and i + 1 < len(value):
            if value[i + 1] not in "\\,=":
                raise bad_request(f"invalid field selector: invalid escape sequence: \\{value[i + 1]}")
            out += value[i + 1]
            i += 2
        else:
            out += value[i]
            i += 1
    return out


def parse_fields(
    selector: str, extra: dict[str, FieldGetter] | None = None
) -> list[tuple[FieldGetter, str, str]]:
    """[(getter, op, value)]; like the apiserver, metadata.name/namespace plus the type's own fields."""
    known = {**_FIELDS, **(extra or {})}
    out: list[tuple[FieldGetter, str, str]] = []
    for part in _split_escaped(selector or "", ","):
        if not part.strip():
            continue
        for op, spelling in (("!=", "!="), ("=", "=="), ("=", "=")):
            pieces = _split_escaped(part, spelling)
            if len(pieces) > 1:
                key, value, found_op = pieces[0], spelling.join(pieces[1:]), op
                break
        else:
            raise bad_request(f"invalid field selector: {part!r}")
        key = key.strip()
        if key not in known:
            raise bad_request(f"field label not supported: {key}")
        out.append((known[key], found_op, _unescape(value.strip())))
    return out


@dataclass(frozen=True)
class Selector:
    labels: tuple[Requirement, ...] = ()
    fields: tuple[tuple[FieldGetter, str, str], ...] = ()

    @property
    def empty(self) -> bool:
        return not self.labels and not self.fields

    def matches(self, obj: dict[str, Any]) -> bool:
        meta = obj.get("metadata") or {}
        obj_labels = meta.get("labels") or {}
        if not all(r.matches(obj_labels) for r in self.labels):
            return False
        return all((getter(obj) == value) == (op == "=") for getter, op, value in self.fields)


def selector_from_query(
    label_selector: str, field_selector: str, extra_fields: dict[str, FieldGetter] | None = None
) -> Selector:
    return Selector(tuple(parse_labels(label_selector)), tuple(parse_fields(field_selector, extra_fields)))
