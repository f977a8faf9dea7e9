"""Decoding and validation of a write, in kube-apiserver's order.

`decode` is what the request decoder does: unknown fields are dropped (a 400 with
fieldValidation=Strict, a warning otherwise); built-in kinds are decoded as typed objects (a wrong type is
a 400, times are normalised); custom resources get their schema defaults and keep their ObjectMeta only
as far as it decodes. `validate` is the kind's validation after the strategy prepared the object: schema
and CEL for custom resources, the strategy's rules for everyone. Both are pure functions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import cel, schema, typed
from .builtin_schemas import OBJECT_META
from .errors import Cause, bad_request
from .meta import OBJECT_META_FIELDS
from .resources import CRD_KEY, ResourceType, type_from_crd


@dataclass
class Decoded:
    body: dict[str, Any]
    warnings: list[str] = field(default_factory=list)  # unknown fields (fieldValidation=Warn)


def decode(rtype: ResourceType, version: str, body: dict[str, Any], strict_fields: bool) -> Decoded:
    vinfo = rtype.version(version)
    type_schema = vinfo.schema if vinfo is not None else None
    meta = body.get("metadata")
    body = {
        **body,
        "metadata": {k: v for k, v in (meta if isinstance(meta, dict) else {}).items() if v is not None},
    }
    warnings: list[str] = []
    if type_schema is not None:
        pruned = schema.prune(body, type_schema, root=True)
        unknown = removed_paths(body, pruned)
        unknown += [f"metadata.{k}" for k in body["metadata"] if k not in OBJECT_META_FIELDS]
        if unknown and strict_fields:
            fields = ", ".join(f'unknown field "{p}"' for p in unknown)
            raise typed.cannot_handle(rtype.kind, version, f"strict decoding error: {fields}")
        warnings = [f'unknown field "{p}"' for p in unknown]
        body = pruned
    body["metadata"] = {k: v for k, v in body["metadata"].items() if k in OBJECT_META_FIELDS}
    if rtype.builtin and type_schema is not None:
        body = typed.decode_body(body, type_schema, rtype.kind, version)
    else:
        body["metadata"] = typed.drop_malformed_meta(body["metadata"], OBJECT_META)
        if type_schema is not None:
            body = schema.apply_defaults(body, type_schema)
    return Decoded(body, warnings)


def validate(
    rtype: ResourceType, version: str, body: dict[str, Any], old: dict[str, Any] | None
) -> list[Cause]:
    causes = rtype.strategy.validate(body, old)
    vinfo = rtype.version(version)
    if not rtype.builtin and vinfo is not None and vinfo.schema is not None:
        causes += schema.validate(body, vinfo.schema)
        if not causes:
            old_self = _cel_root(old) if old is not None else None
            causes += cel.evaluate(_cel_root(body), old_self, vinfo.schema)
    if rtype.key == CRD_KEY and not causes:
        type_from_crd(body)  # raises 422 on a CRD the emulator could not serve
    return causes


def _cel_root(obj: dict[str, Any]) -> dict[str, Any]:
    """Root-level rules see only metadata.name and generateName, as upstream."""
    root = dict(obj)
    root["metadata"] = {k: v for k, v in (obj.get("metadata") or {}).items() if k in ("name", "generateName")}
    return root


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


def check_kind(rtype: ResourceType, version: str, body: Any) -> dict[str, Any]:
    """The body is an object of the addressed kind and version (absent apiVersion/kind are fine)."""
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    expected = rtype.api_version(version)
    if body.get("apiVersion") and body["apiVersion"] != expected:
        raise bad_request(
            f"the API version in the data ({body['apiVersion']}) does not match the expected API version ({expected})"
        )
    if body.get("kind") and body["kind"] != rtype.kind:
        raise bad_request(
            f"the kind in the data ({body['kind']}) does not match the expected kind ({rtype.kind})"
        )
    return body
