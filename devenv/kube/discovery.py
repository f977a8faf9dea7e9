"""Legacy discovery documents (kubectl falls back to them when aggregated discovery is not offered)."""

from __future__ import annotations

import hashlib
from typing import Any

from .registry import Registry as Store
from .resources import ResourceType

SERVER_VERSION = {
    "major": "1",
    "minor": "36",
    "gitVersion": "v1.36.0-osprov-emulator",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.24",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def _storage_hash(rtype: ResourceType) -> str:
    return hashlib.sha256(f"{rtype.group}/{rtype.storage_version}/{rtype.kind}".encode()).hexdigest()[:11]


def api_versions(host: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}],
    }


def _groups(store: Store) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for rtype in store.served_types():
        if not rtype.group:
            continue
        versions = groups.setdefault(rtype.group, [])
        for v in rtype.versions:
            if v.served and v.name not in versions:
                versions.append(v.name)
    return groups


def _group_doc(group: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(store: Store) -> dict[str, Any]:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group_doc(g, vs) for g, vs in sorted(_groups(store).items()) if vs],
    }


def api_group(store: Store, group: str) -> dict[str, Any] | None:
    versions = _groups(store).get(group)
    if not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_doc(group, versions)}


def resource_list(store: Store, group: str, version: str) -> dict[str, Any] | None:
    resources: list[dict[str, Any]] = []
    for rtype in store.served_types():
        vinfo = rtype.version(version)
        if rtype.group != group or vinfo is None:
            continue
        entry: dict[str, Any] = {
            "name": rtype.plural,
            "singularName": rtype.singular,
            "namespaced": rtype.namespaced,
            "kind": rtype.kind,
            "verbs": list(rtype.verbs),
            "storageVersionHash": _storage_hash(rtype),
        }
        if rtype.short_names:
            entry["shortNames"] = rtype.short_names
        if rtype.categories:
            entry["categories"] = rtype.categories
        resources.append(entry)
        if vinfo.status_subresource:
            resources.append(
                {
                    "name": f"{rtype.plural}/status",
                    "singularName": "",
                    "namespaced": rtype.namespaced,
                    "kind": rtype.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
    if not resources:
        return None
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }
