"""deploy/rbac.yaml as data, and API calls checked against it both ways.

A call is what the emulator's audit log records (verb, group, resource, subresource, name, the caller's
user agent). `denied` lists calls no rule of the caller's Role allows; `unused` lists what a Role grants
that no call used. The worker's calls are the same for every osprov kind (one generic code path per
activity, the plural taken from the resource), so a grant on a kind counts as used when the same verb on
the same subresource was used on any osprov kind; test_manifests.py checks that every kind is granted
alike, so a run that exercises some kinds speaks for all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from osprov.api.registry import ALL_KINDS

REPO = Path(__file__).resolve().parents[2]
OSPROV_RESOURCES = {(k.group, k.plural) for k in ALL_KINDS}
ANY_KIND = "<osprov kind>"


@dataclass(frozen=True)
class Call:
    role: str
    verb: str
    group: str
    resource: str  # "users" or "users/status"
    name: str = ""


@dataclass(frozen=True)
class Grant:
    role: str
    verb: str
    group: str
    resource: str
    names: tuple[str, ...] = ()  # resourceNames; empty: any


def rbac() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((REPO / "deploy" / "rbac.yaml").read_text()) if d]


def roles() -> dict[str, list[dict[str, Any]]]:
    return {d["metadata"]["name"]: d["rules"] for d in rbac() if d["kind"] == "Role"}


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
    """A worker call on an osprov kind, with the kind left out (see the module docstring)."""
    plural, _, sub = resource.partition("/")
    if role == "osprov-worker" and (group, plural) in OSPROV_RESOURCES:
        return role, verb, "", ANY_KIND + (f"/{sub}" if sub else "")
    return role, verb, group, resource


def unused(calls: list[Call]) -> list[Grant]:
    def used(g: Grant) -> bool:
        shape = _shape(g.role, g.verb, g.group, g.resource)
        return any(
            _shape(c.role, c.verb, c.group, c.resource) == shape and (not g.names or c.name in g.names)
            for c in calls
        )

    return sorted((g for g in grants() if not used(g)), key=str)
