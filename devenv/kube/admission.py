"""Admission of a write: Secret rules, then for custom resources prune → default → schema → CEL.

Pure functions of (type, new body, old object); the store decides what to do with the result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import cel, schema
from .errors import Cause, bad_request
from .meta import secret_data
from .resources import CRD_GROUP, ResourceType, type_from_crd


@dataclass
class Admitted:
    body: dict[str, Any]
    causes: list[Cause] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # unknown fields (fieldValidation=Warn)


def admit(
    rtype: ResourceType, version: str, body: dict[str, Any], old: dict[str, Any] | None, strict_fields: bool
) -> Admitted:
    result = Admitted(body)
    if rtype.key == "secrets":
        result.causes += _secret_rules(body, old)
    vinfo = rtype.version(version)
    if not rtype.builtin and vinfo is not None and vinfo.schema is not None:
        pruned = schema.prune(body, vinfo.schema, root=True)
        unknown = removed_paths(body, pruned)
        if unknown and strict_fields:
            fields = ", ".join(f'unknown field "{p}"' for p in unknown)
            kind = rtype.kind
            raise bad_request(
                f'{kind} in version "{version}" cannot be handled as a {kind}: strict decoding error: {fields}'
            )
        result.warnings = [f'unknown field "{p}"' for p in unknown]
        result.body = schema.apply_defaults(pruned, vinfo.schema)
        result.causes += schema.validate(result.body, vinfo.schema)
        if not result.causes:
            old_self = _cel_root(old) if old is not None else None
            result.causes += cel.evaluate(_cel_root(result.body), old_self, vinfo.schema)
    if rtype.key == f"customresourcedefinitions.{CRD_GROUP}" and not result.causes:
        type_from_crd(result.body)  # raises 422 on a CRD the emulator could not serve
    return result


def _cel_root(obj: dict[str, Any]) -> dict[str, Any]:
    """Root-level rules see only metadata.name and generateName, as upstream."""
    root = dict(obj)
    root["metadata"] = {k: v for k, v in (obj.get("metadata") or {}).items() if k in ("name", "generateName")}
    return root


def _secret_rules(body: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    causes = secret_data(body)
    if old is not None and body.get("type") != old.get("type"):
        causes.append(
            Cause("FieldValueInvalid", f'Invalid value: "{body.get("type")}": field is immutable', "type")
        )
    if old is not None and old.get("immutable") and body.get("data") != old.get("data"):
        causes.append(
            Cause("FieldValueForbidden", "Forbidden: field is immutable when `immutable` is set", "data")
        )
    return causes


def removed_paths(original: Any, pruned: Any, path: str = "") -> list[str]:
    """Dotted paths present in `original` but pruned away."""
    if isinstance(original, dict) and isinstance(pruned, dict):
        out: list[str] = []
        for key, value in original.items():
            sub = f"{path}.{key}" if path else key
            if key not in pruned:
                out.append(sub)
            else:
                out += removed_paths(value, pruned[key], sub)
        return out
    if isinstance(original, list) and isinstance(pruned, list):
        return [
            p
            for i, (a, b) in enumerate(zip(original, pruned, strict=False))
            for p in removed_paths(a, b, f"{path}[{i}]")
        ]
    return []
