"""deploy/rbac.yaml as data, and API calls checked against it both ways.

A call is what the emulator's audit log records (verb, group, resource, subresource, name, the caller's
user agent). A grant is a rule of a Role or ClusterRole bound to osprov's own ServiceAccounts, keyed by the
ServiceAccount (`role`: osprov-bridge or osprov-worker); roles bound to nobody of osprov (the users' reader
role) grant osprov nothing. `denied` lists calls no grant of the caller allows; `unused` lists what is
granted that no call used (`only` narrows it to some grants: the identity run cannot use the region
inventory's, the inventory run speaks only for those). The worker's calls are the same for every osprov
kind (one generic code path per activity, the plural taken from the resource), so a grant on a kind counts
as used when the same verb on the same subresource was used on any osprov kind; test_manifests.py checks
that every kind is granted alike, so a run that exercises some kinds speaks for all of them. The same holds
for the published inventory kinds (Flavor, VolumeClass, Image: one publish/withdraw path).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from osprov.api.registry import ALL_KINDS, CLUSTER_KINDS

REPO = Path(__file__).resolve().parents[2]
OSPROV_RESOURCES = {(k.group, k.plural) for k in ALL_KINDS}
INVENTORY_RESOURCES = {(k.group, k.plural) for k in CLUSTER_KINDS}
PUBLISHED_RESOURCES = {(k.group, k.plural) for k in CLUSTER_KINDS if k.published}
ANY_KIND = "<osprov kind>"
ANY_PUBLISHED = "<published inventory kind>"


@dataclass(frozen=True)
class Call:
    role: str
    verb: str
    group: str
    resource: str  # "users" or "users/status"
    name: str = ""


@dataclass(frozen=True)
class Grant:
    role: str  # the ServiceAccount it is granted to
    verb: str
    group: str
    resource: str
    names: tuple[str, ...] = ()  # resourceNames; empty: any

    @property
    def inventory(self) -> bool:
        return (self.group, self.resource.partition("/")[0]) in INVENTORY_RESOURCES


def rbac() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((REPO / "deploy" / "rbac.yaml").read_text()) if d]


def roles() -> dict[str, list[dict[str, Any]]]:
    """Rules by the osprov ServiceAccount they are bound to (Roles and ClusterRoles alike)."""
    docs = rbac()
    rules = {
        (d["kind"], d["metadata"]["name"]): d["rules"] for d in docs if d["kind"] in ("Role", "ClusterRole")
    }
    bound: dict[str, list[dict[str, Any]]] = {}
    for d in docs:
        if d["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        for subject in d["subjects"]:
            if subject["kind"] == "ServiceAccount" and subject["name"].startswith("osprov-"):
                bound.setdefault(subject["name"], []).extend(
                    rules[(d["roleRef"]["kind"], d["roleRef"]["name"])]
                )
    return bound


def grants() -> set[Grant]:
    return {
        Grant(role, verb, group, resource, tuple(rule.get("resourceNames") or ()))
        for role, rules in roles().items()
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def call_of(line: dict[str, Any]) -> Call:
    """An audit line as a call by the Role its user agent names (osprov-bridge…, else the worker)."""
    role = "osprov-bridge" if line["user_agent"].startswith("osprov-bridge") else "osprov-worker"
    resource = line["resource"] + (f"/{line['subresource']}" if line["subresource"] else "")
    return Call(role, line["verb"], line["group"], resource, line.get("name") or "")


def allows(grant: Grant, call: Call) -> bool:
    return (grant.role, grant.verb, grant.group, grant.resource) == (
        call.role,
        call.verb,
        call.group,
        call.resource,
    ) and (not grant.names or call.name in grant.names)


def denied(calls: list[Call]) -> list[Call]:
    every = grants()
    return sorted({c for c in calls if not any(allows(g, c) for g in every)}, key=str)


def _shape(role: str, verb: str, group: str, resource: str) -> tuple[str, str, str, str]:
    """A worker call on an osprov kind, or on a published inventory kind, with the kind left out (see the
    module docstring: the inventory's calls too are one code path for every kind, the plural a parameter)."""
    plural, _, sub = resource.partition("/")
    if role == "osprov-worker" and (group, plural) in OSPROV_RESOURCES:
        return role, verb, "", ANY_KIND + (f"/{sub}" if sub else "")
    if role == "osprov-worker" and (group, plural) in PUBLISHED_RESOURCES:
        return role, verb, group, ANY_PUBLISHED
    return role, verb, group, resource


def unused(calls: list[Call], only: Callable[[Grant], bool] = lambda _: True) -> list[Grant]:
    def used(g: Grant) -> bool:
        shape = _shape(g.role, g.verb, g.group, g.resource)
        return any(
            _shape(c.role, c.verb, c.group, c.resource) == shape and (not g.names or c.name in g.names)
            for c in calls
        )

    return sorted((g for g in grants() if only(g) and not used(g)), key=str)
