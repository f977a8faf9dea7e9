"""metadata.managedFields, as kube-apiserver's field manager keeps them.

Every write records who owns which fields: an Update (create, PUT, merge/JSON/strategic patch) gives its
manager the fields it added or changed and takes them from the others; an Apply (server-side apply) makes
the applied configuration's field set the applier's, fails with 409 when it changes a field another
manager owns (unless force=true, which takes it), and removes the fields the applier stopped applying
that nobody else owns. Entries are keyed by (manager, operation, apiVersion for Update, subresource).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .builtin_schemas import OBJECT_META, STRING
from .errors import ApiError
from .fieldpaths import Path, compare, field_set, merge, path_string, remove
from .meta import now
from .resources import ResourceType

# ObjectMeta fields the manager never tracks (the apiserver strips them, or sets them itself).
_TRACKED_META = {"labels", "annotations", "finalizers", "ownerReferences"}


@dataclass
class Entry:
    manager: str
    operation: str  # Apply | Update
    api_version: str
    subresource: str
    fields: set[Path]
    time: str = ""

    @property
    def ident(self) -> tuple[str, str, str, str]:
        # Appliers are one manager whatever version they applied with (BuildManagerIdentifier).
        return (
            self.manager,
            self.operation,
            "" if self.operation == "Apply" else self.api_version,
            self.subresource,
        )

    def shown(self) -> str:
        """How conflict messages name a manager (printManager)."""
        name = json.dumps(self.manager)
        if self.subresource:
            name += f" with subresource {json.dumps(self.subresource)}"
        return f"{name} using {self.api_version}" if self.operation == "Update" else name


def ssa_schema(rtype: ResourceType, version: str) -> dict[str, Any]:
    """The type's schema with ObjectMeta in place (CRD schemas say little about metadata)."""
    vinfo = rtype.version(version) or rtype.versions[0]
    schema = dict(vinfo.schema or {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    schema["properties"] = {
        **(schema.get("properties") or {}),
        "apiVersion": STRING,
        "kind": STRING,
        "metadata": OBJECT_META,
    }
    return schema


def _tracked(path: Path, subresource: str, status_split: bool) -> bool:
    if not path:
        return False
    top = path[0]
    if top in ("f:apiVersion", "f:kind"):
        return False
    if top == "f:metadata":
        return len(path) > 1 and path[1][2:] in _TRACKED_META and subresource != "status"
    if subresource == "status":
        return top == "f:status"
    return not (status_split and top == "f:status")


def _filter(paths: set[Path], subresource: str, status_split: bool) -> set[Path]:
    return {p for p in paths if _tracked(p, subresource, status_split)}


# ---------------------------------------------------------------------------------------- encoding
def to_fields_v1(paths: set[Path]) -> dict[str, Any]:
    """The FieldsV1 tree; "." marks a path owned itself when things below it are owned too."""
    tree: dict[str, Any] = {}
    for path in paths:
        node = tree
        for pe in path:
            node = node.setdefault(pe, {})
    return _sorted_tree(tree, paths, ())


def _sorted_tree(node: dict[str, Any], paths: set[Path], prefix: Path) -> dict[str, Any]:
    out: dict[str, Any] = {".": {}} if node and prefix in paths else {}
    for key in sorted(node):
        out[key] = _sorted_tree(node[key], paths, (*prefix, key))
    return out


def from_fields_v1(tree: Any, prefix: Path = ()) -> set[Path]:
    out: set[Path] = set()
    if not isinstance(tree, dict):
        return out
    for key, sub in tree.items():
        if key == ".":
            out.add(prefix)
            continue
        path = (*prefix, key)
        if isinstance(sub, dict) and sub:
            out |= from_fields_v1(sub, path)
        else:
            out.add(path)
    return out


def decode(raw: Any) -> list[Entry]:
    """metadata.managedFields → entries; malformed entries are dropped (the apiserver resets them)."""
    entries: list[Entry] = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict) or item.get("operation") not in ("Apply", "Update"):
            continue
        if not isinstance(item.get("manager"), str) or item.get("fieldsType", "FieldsV1") != "FieldsV1":
            continue
        entries.append(
            Entry(
                item["manager"],
                item["operation"],
                str(item.get("apiVersion") or ""),
                str(item.get("subresource") or ""),
                from_fields_v1(item.get("fieldsV1") or {}),
                str(item.get("time") or ""),
            )
        )
    return entries


def encode(entries: list[Entry]) -> list[dict[str, Any]]:
    ordered = sorted(
        (e for e in entries if e.fields),
        key=lambda e: (e.operation, e.time, e.manager, e.api_version, e.subresource),
    )
    out = []
    for e in ordered:
        item: dict[str, Any] = {"manager": e.manager, "operation": e.operation, "apiVersion": e.api_version}
        if e.time:
            item["time"] = e.time
        item["fieldsType"] = "FieldsV1"
        item["fieldsV1"] = to_fields_v1(e.fields)
        if e.subresource:
            item["subresource"] = e.subresource
        out.append(item)
    return out


# ------------------------------------------------------------------------------------------ updates
@dataclass
class Change:
    """Who is writing: the manager, the subresource, and the type's schema and status split."""

    manager: str
    subresource: str
    api_version: str
    schema: dict[str, Any]
    status_split: bool

    def entry(self, entries: list[Entry], operation: str) -> Entry:
        ident = Entry(self.manager, operation, self.api_version, self.subresource, set()).ident
        for e in entries:
            if e.ident == ident:
                return e
        fresh = Entry(self.manager, operation, self.api_version, self.subresource, set())
        entries.append(fresh)
        return fresh


def _tracked_part(obj: dict[str, Any] | None, change: Change) -> dict[str, Any]:
    """What a write may own, to compare only that (a status write compares the status alone)."""
    if not obj:
        return {}
    if change.subresource == "status":
        return {"status": obj["status"]} if "status" in obj else {}
    part = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    if change.status_split:
        part.pop("status", None)
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k in _TRACKED_META}
    if meta:
        part["metadata"] = meta
    return part


def track_update(
    old: dict[str, Any] | None, new: dict[str, Any], base: Any, change: Change
) -> list[dict[str, Any]]:
    """managedFields after an Update: the writer owns what it added or modified."""
    entries = decode(base)
    diff = compare(_tracked_part(old, change), _tracked_part(new, change), change.schema)
    changed = _filter(diff.added | diff.modified, change.subresource, change.status_split)
    removed = _filter(diff.removed, change.subresource, change.status_split)
    if not changed and not removed and isinstance(base, list) and len(entries) == len(base):
        return base  # nobody's ownership changes: keep the entries (and their times) as they are
    mine = change.entry(entries, "Update")
    for e in entries:
        if e is not mine:
            e.fields -= changed | removed
    if changed or removed:
        mine.fields = (mine.fields - removed) | changed
        mine.time = now()
        mine.api_version = change.api_version
    return encode(entries)


def conflict_error(conflicts: list[tuple[Entry, Path]]) -> ApiError:
    causes = [
        {"reason": "FieldManagerConflict", "message": f"conflict with {e.shown()}", "field": path_string(p)}
        for e, p in conflicts
    ]
    if len(conflicts) == 1:
        entry, path = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {entry.shown()}: {path_string(path)}"
    else:
        by_manager: dict[str, list[str]] = {}
        for entry, path in conflicts:
            by_manager.setdefault(entry.shown(), []).append(path_string(path))
        lines = []
        for shown in sorted(by_manager):
            lines.append(f"conflicts with {shown}:")
            lines += [f"- {p}" for p in by_manager[shown]]
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return ApiError(409, "Conflict", message, {"causes": causes})


def apply(
    live: dict[str, Any], config: dict[str, Any], change: Change, force: bool
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Server-side apply of `config` onto `live` ({} when creating): (new object, new managedFields)."""
    entries = decode(live.get("metadata", {}).get("managedFields"))
    if live and not entries:
        # Objects written before any field tracking: everything belongs to "before-first-apply".
        owned = _filter(compare({}, live, change.schema).added, "", change.status_split)
        entries.append(Entry("before-first-apply", "Update", change.api_version, "", owned, now()))
    merged = merge(live, config, change.schema)
    mine = change.entry(entries, "Apply")
    last = set(mine.fields)
    mine.fields = _filter(field_set(config, change.schema), change.subresource, change.status_split)
    owned_by_anyone = set().union(*(e.fields for e in entries))
    dropped = {p for p in last - owned_by_anyone}
    merged = remove(merged, dropped, change.schema)
    diff = compare(live, merged, change.schema)
    touched = diff.modified | diff.added
    conflicts = [(e, p) for e in entries if e is not mine for p in sorted(e.fields & touched)]
    if conflicts and not force:
        raise conflict_error(conflicts)
    for e in entries:
        if e is not mine:
            e.fields -= touched | diff.removed
    if merged != live or not mine.time:
        mine.time = now()
    mine.api_version = change.api_version
    return merged, encode(entries)
