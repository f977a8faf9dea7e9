"""The resource types the emulator serves: built-ins (Namespace, Secret, CRD) and those defined by CRDs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import Cause, invalid
from .meta import now
from .strategy import CUSTOM_RESOURCE, Strategy

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
CRD_GROUP = "apiextensions.k8s.io"
CRD_KEY = f"customresourcedefinitions.{CRD_GROUP}"
FieldGetter = Callable[[dict[str, Any]], str]


@dataclass
class PrinterColumn:
    name: str
    type: str
    json_path: str
    description: str = ""
    priority: int = 0
    format: str = ""


@dataclass
class VersionInfo:
    name: str
    served: bool
    storage: bool
    schema: dict[str, Any] | None = None  # openAPIV3Schema
    status_subresource: bool = False
    printer_columns: list[PrinterColumn] = field(default_factory=list)


@dataclass
class ResourceType:
    group: str  # "" for core
    plural: str
    singular: str
    kind: str
    namespaced: bool
    versions: list[VersionInfo]
    short_names: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    builtin: bool = False
    list_kind: str = ""
    verbs: tuple[str, ...] = ALL_VERBS
    strategy: Strategy = CUSTOM_RESOURCE
    # Field selectors beyond metadata.name/namespace: label -> value of the stored object.
    fields: dict[str, FieldGetter] = field(default_factory=dict)
    # A second API for objects stored under another type (events.k8s.io/v1 Events are core/v1 Events):
    # the storage type's key and the conversions between the two shapes.
    storage_key: str = ""
    to_storage: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    from_storage: Callable[[dict[str, Any], str], dict[str, Any]] | None = None

    @property
    def key(self) -> str:
        """Type key: one per group+plural whatever the version (no conversion between versions)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def store_key(self) -> str:
        """Where its objects live (the key, except for a second view of another type's objects)."""
        return self.storage_key or self.key

    def version(self, name: str) -> VersionInfo | None:
        for v in self.versions:
            if v.name == name and v.served:
                return v
        return None

    def api_version(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version

    @property
    def storage_version(self) -> str:
        for v in self.versions:
            if v.storage:
                return v.name
        return self.versions[0].name


def _columns(raw: list[dict[str, Any]]) -> list[PrinterColumn]:
    return [
        PrinterColumn(
            name=c["name"],
            type=c.get("type", "string"),
            json_path=c.get("jsonPath", ""),
            description=c.get("description", ""),
            priority=int(c.get("priority", 0)),
            format=c.get("format", ""),
        )
        for c in raw
    ]


def type_from_crd(crd: dict[str, Any]) -> ResourceType:
    """Validate a CRD enough to serve it (422 like the real apiextensions validation) and describe it."""
    name = crd.get("metadata", {}).get("name", "")
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    causes: list[Cause] = []
    group = spec.get("group", "")
    plural = names.get("plural", "")
    kind = names.get("kind", "")
    if not group:
        causes.append(Cause("FieldValueRequired", "Required value", "spec.group"))
    if not plural:
        causes.append(Cause("FieldValueRequired", "Required value", "spec.names.plural"))
    if not kind:
        causes.append(Cause("FieldValueRequired", "Required value", "spec.names.kind"))
    if plural and group and name != f"{plural}.{group}":
        causes.append(
            Cause(
                "FieldValueInvalid",
                f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group',
                "metadata.name",
            )
        )
    scope = spec.get("scope", "")
    if scope not in ("Namespaced", "Cluster"):
        causes.append(
            Cause(
                "FieldValueNotSupported",
                f'Unsupported value: "{scope}": supported values: "Cluster", "Namespaced"',
                "spec.scope",
            )
        )
    raw_versions = spec.get("versions") or []
    if not raw_versions:
        causes.append(Cause("FieldValueRequired", "Required value", "spec.versions"))
    elif sum(1 for v in raw_versions if v.get("storage")) != 1:
        causes.append(
            Cause(
                "FieldValueInvalid",
                "Invalid value: must have exactly one version marked as storage version",
                "spec.versions",
            )
        )
    versions: list[VersionInfo] = []
    for i, v in enumerate(raw_versions):
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        if schema is None:
            causes.append(
                Cause(
                    "FieldValueRequired",
                    "Required value: schemas are required",
                    f"spec.versions[{i}].schema.openAPIV3Schema",
                )
            )
        subresources = v.get("subresources") or {}
        versions.append(
            VersionInfo(
                name=v.get("name", ""),
                served=bool(v.get("served", True)),
                storage=bool(v.get("storage", False)),
                schema=schema,
                status_subresource="status" in subresources,
                printer_columns=_columns(v.get("additionalPrinterColumns") or []),
            )
        )
    if not causes:
        # Compile every pattern and CEL rule now: a CRD with one that does not compile is rejected.
        from .cel import compile_errors
        from .regex import PatternError, compile_re2
        from .schema import patterns

        for i, v in enumerate(versions):
            for path, pattern in patterns(v.schema or {}):
                try:
                    compile_re2(pattern)
                except PatternError as exc:
                    causes.append(
                        Cause(
                            "FieldValueInvalid",
                            f'Invalid value: "{pattern}": must be a valid regular expression, but isn\'t: {exc}',
                            f"spec.versions[{i}].schema.openAPIV3Schema{path}",
                        )
                    )
        for i, v in enumerate(versions):
            for path, msg in compile_errors(v.schema or {}):
                causes.append(
                    Cause(
                        "FieldValueInvalid",
                        f"Invalid value: {msg}",
                        f"spec.versions[{i}].schema.openAPIV3Schema{path}",
                    )
                )
    if causes:
        raise invalid("CustomResourceDefinition", CRD_GROUP, name, causes)
    return ResourceType(
        group=group,
        plural=plural,
        singular=names.get("singular") or kind.lower(),
        kind=kind,
        namespaced=scope == "Namespaced",
        versions=versions,
        short_names=list(names.get("shortNames") or []),
        categories=list(names.get("categories") or []),
        builtin=False,
        list_kind=names.get("listKind") or f"{kind}List",
    )


def crd_status(crd: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, Any]:
    spec = crd.get("spec") or {}
    stored = [v["name"] for v in spec.get("versions") or [] if v.get("storage")]
    if old and old.get("acceptedNames") == spec.get("names"):
        # Names unchanged: keep the conditions (and their transition times), extend storedVersions.
        merged = list(old.get("storedVersions") or [])
        return {**old, "storedVersions": merged + [v for v in stored if v not in merged]}
    timestamp = now()
    return {
        "acceptedNames": dict(spec.get("names") or {}),
        "conditions": [
            {
                "type": "NamesAccepted",
                "status": "True",
                "reason": "NoConflicts",
                "message": "no conflicts found",
                "lastTransitionTime": timestamp,
            },
            {
                "type": "Established",
                "status": "True",
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
                "lastTransitionTime": timestamp,
            },
        ],
        "storedVersions": stored,
    }
