"""Generate deploy/crds/ from the models in api.registry: `python -m api.crdgen [--check] [--out DIR]`.

The pydantic JSON schema is rewritten into a Kubernetes structural schema: $refs inlined, Optional[X]
collapsed to X (an unset field is simply absent), `const` turned into `enum`, titles and propertyNames dropped
(Kubernetes rejects propertyNames; map keys are checked by CEL rules instead), and numeric exclusive bounds
turned into OpenAPI v3.0 booleans. x-kubernetes-* keys come from the models' json_schema_extra.
--check compares with the files on disk and exits 1 with a unified diff when they are stale.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path
from typing import Any

import yaml

from osprov.api.registry import ALL_KINDS, CLUSTER_KINDS, InventoryKindInfo, KindInfo, PrinterColumn

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "deploy" / "crds"
_DROPPED_KEYS = {"title", "propertyNames", "$defs", "discriminator"}

Schema = dict[str, Any]


class SchemaError(ValueError):
    """The model uses a construct that has no structural-schema equivalent."""


def _resolve(node: Schema, defs: dict[str, Schema], where: str) -> Schema | None:
    """The node a $ref, a nullable anyOf or a one-element allOf stands for (None: a plain node)."""
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        return {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    if "anyOf" in node:
        branches = [b for b in node["anyOf"] if b.get("type") != "null"]
        if len(branches) != 1:
            raise SchemaError(f"{where}: a union of several types cannot be a structural schema")
        return {**branches[0], **{k: v for k, v in node.items() if k != "anyOf"}}
    if "allOf" in node and len(node["allOf"]) == 1:
        return {**node["allOf"][0], **{k: v for k, v in node.items() if k != "allOf"}}
    return None


def _structural_key(out: Schema, key: str, value: Any, defs: dict[str, Schema], where: str) -> None:
    if key in _DROPPED_KEYS or (key == "default" and value is None):
        return
    if key == "const":
        out["enum"] = [value]
    elif key in ("exclusiveMinimum", "exclusiveMaximum") and not isinstance(value, bool):
        out["minimum" if key == "exclusiveMinimum" else "maximum"] = value
        out[key] = True
    elif key == "properties":
        out[key] = {name: _structural(sub, defs, f"{where}.{name}") for name, sub in value.items()}
    elif key == "items":
        out[key] = _structural(value, defs, f"{where}[]")
    elif key == "additionalProperties":
        if isinstance(value, dict):
            out[key] = _structural(value, defs, f"{where}{{}}")
        # `false` (extra="forbid") is the pruning Kubernetes does anyway, and is not structural.
    else:
        out[key] = value


def _structural(node: Schema, defs: dict[str, Schema], where: str) -> Schema:
    resolved = _resolve(node, defs, where)
    if resolved is not None:
        return _structural(resolved, defs, where)
    out: Schema = {}
    for key, value in node.items():
        _structural_key(out, key, value, defs, where)
    if "type" not in out and "enum" in out:
        out["type"] = "string"
    if "type" not in out:
        raise SchemaError(f"{where}: no type")
    return _ordered(out)


_KEY_ORDER = ["description", "type", "format", "enum", "default"]


def _ordered(schema: Schema) -> Schema:
    """Stable, readable key order: description and type first, then the rest alphabetically."""
    head = [k for k in _KEY_ORDER if k in schema]
    tail = sorted(k for k in schema if k not in _KEY_ORDER)
    return {k: schema[k] for k in head + tail}


def model_schema(model: type[Any]) -> Schema:
    raw = model.model_json_schema(by_alias=True, mode="validation")
    return _structural(raw, raw.get("$defs", {}), model.__name__)


def crd_for(info: KindInfo) -> dict[str, Any]:
    spec = model_schema(info.spec_model)
    status = model_schema(info.status_model)
    root: Schema = {
        "description": f"{info.kind} ({info.api_version}), reconciled by osprov as a Temporal workflow.",
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
        "required": ["spec"],
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": info.crd_name,
            # Uninstalling a release must not cascade-delete every resource of the kind (seed 001).
            "annotations": {"helm.sh/resource-policy": "keep"},
            "labels": {"app.kubernetes.io/part-of": "osprov"},
        },
        "spec": {
            "group": info.group,
            "scope": "Namespaced",
            "names": {
                "kind": info.kind,
                "listKind": f"{info.kind}List",
                "plural": info.plural,
                "singular": info.singular,
                "shortNames": list(info.short_names),
                "categories": list(info.categories),
            },
            "versions": [
                {
                    "name": info.version,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": _columns(info.printer_columns),
                    "schema": {"openAPIV3Schema": root},
                }
            ],
        },
    }


def _columns(columns: tuple[PrinterColumn, ...]) -> list[dict[str, Any]]:
    return [
        {
            "name": c.name,
            "type": c.type,
            "jsonPath": c.json_path,
            **({"description": c.description} if c.description else {}),
            **({"priority": c.priority} if c.priority else {}),
        }
        for c in columns
    ]


# The verbs the worker's ClusterRole grants on a published inventory kind: the Helm chart derives its rules
# from this annotation (deploy/helm/osprov/templates/rbac.yaml), deploy/rbac.yaml spells them out.
WORKER_VERBS_ANNOTATION = "region.osh.openstack.org/worker-verbs"


def crd_for_cluster_kind(info: InventoryKindInfo) -> dict[str, Any]:
    """A cluster-scoped region.osh.openstack.org kind: a spec and no status (osprov writes the whole object)."""
    root: Schema = {
        "description": info.description,
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": model_schema(info.spec_model),
        },
        "required": ["spec"],
    }
    annotations = {"helm.sh/resource-policy": "keep"}
    if info.published:
        annotations[WORKER_VERBS_ANNOTATION] = ",".join(info.worker_verbs)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": info.crd_name,
            "annotations": annotations,
            "labels": {"app.kubernetes.io/part-of": "osprov"},
        },
        "spec": {
            "group": info.group,
            "scope": "Cluster",
            "names": {
                "kind": info.kind,
                "listKind": f"{info.kind}List",
                "plural": info.plural,
                "singular": info.singular,
                "shortNames": list(info.short_names),
                "categories": list(info.categories),
            },
            "versions": [
                {
                    "name": info.version,
                    "served": True,
                    "storage": True,
                    "additionalPrinterColumns": _columns(info.printer_columns),
                    "schema": {"openAPIV3Schema": root},
                }
            ],
        },
    }


class _NoAliasDumper(yaml.SafeDumper):
    """Write shared sub-schemas out in full: anchors and aliases make a CRD hard to read and review."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def render(info: KindInfo | InventoryKindInfo) -> str:
    header = "# Generated by `python -m api.crdgen` from api/ — do not edit by hand.\n"
    crd = crd_for_cluster_kind(info) if isinstance(info, InventoryKindInfo) else crd_for(info)
    body = yaml.dump(crd, Dumper=_NoAliasDumper, sort_keys=False, allow_unicode=True, width=120)
    return header + body


def file_name(info: KindInfo | InventoryKindInfo) -> str:
    return f"{info.crd_name}.yaml"


def rendered_files() -> dict[str, str]:
    kinds: tuple[KindInfo | InventoryKindInfo, ...] = (*ALL_KINDS, *CLUSTER_KINDS)
    return {file_name(info): render(info) for info in kinds}


def stale_report(out: Path) -> list[str]:
    """Differences between the generated CRDs and `out`, as unified diffs and notes; empty when fresh."""
    problems: list[str] = []
    wanted = rendered_files()
    for name, text in wanted.items():
        path = out / name
        current = path.read_text() if path.exists() else ""
        if current != text:
            diff = difflib.unified_diff(
                current.splitlines(keepends=True),
                text.splitlines(keepends=True),
                f"{path} (on disk)",
                f"{path} (generated)",
            )
            problems.append("".join(diff) if current else f"{path}: missing\n")
    for path in sorted(out.glob("*.yaml")) if out.exists() else []:
        if path.name not in wanted:
            problems.append(f"{path}: not generated by any kind in api.registry (remove it)\n")
    return problems


def write(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in rendered_files().items():
        path = out / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m api.crdgen", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the CRDs on disk are stale")
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})"
    )
    args = parser.parse_args(argv)
    if args.check:
        problems = stale_report(args.out)
        if problems:
            sys.stdout.write("".join(problems))
            sys.stdout.write(
                f"\nCRDs in {args.out} are stale: run `python -m api.crdgen` and commit the result.\n"
            )
            return 1
        print(f"CRDs in {args.out} are up to date ({len(ALL_KINDS) + len(CLUSTER_KINDS)} kinds).")
        return 0
    for path in write(args.out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
