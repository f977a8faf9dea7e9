"""Per-kind knowledge of Keystone objects, as pure functions (k-orc's "actuators").

For an object key (api/ownership.py) and a claimant's desired state: which other objects it depends on
(`parents`: field -> key), how it is found exactly (`lookup`), which fields create it, and which fields a
claimant manages (compared for drift and for conflicts). No I/O: the object workflow runs the calls.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api import keystone_io as io
    from osprov.api.ownership import Desired, ObjectKey


def domain_key(name: str) -> ObjectKey:
    return ObjectKey(kind="domain", name=name)


def parents(key: ObjectKey, desired: Desired | None) -> dict[str, ObjectKey]:
    """The objects whose IDs this one needs, by the field that takes each ID."""
    refs = dict(desired.refs) if desired else {}
    if key.kind in ("project", "group", "user") or (key.kind == "role" and key.domain):
        assert key.domain is not None
        refs["domain_id"] = domain_key(key.domain)
    elif key.kind == "endpoint":
        refs["service_id"] = ObjectKey(kind="service", name=key.name, type=key.type)
    elif key.kind == "grant":
        assert key.role is not None and key.subject is not None
        refs["role_id"] = key.role
        refs[f"{key.subject.kind}_id"] = key.subject
        if key.scope is not None:
            refs[f"{key.scope.kind}_id"] = key.scope
    return refs


def identity_fields(key: ObjectKey, ids: dict[str, str]) -> dict[str, str]:
    """The fields that identify the object in Keystone (its lookup filters and create fields)."""
    if key.kind == "endpoint":
        assert key.region is not None and key.interface is not None
        return {"service_id": ids["service_id"], "region_id": key.region, "interface": key.interface}
    fields = {"name": key.name}
    if key.kind == "service":
        assert key.type is not None
        fields["type"] = key.type
    if "domain_id" in ids and key.kind != "grant":
        fields["domain_id"] = ids["domain_id"]
    return fields


def lookup(key: ObjectKey, ids: dict[str, str]) -> io.Find:
    """The exact lookup (Keystone filters, post-filtered for equality by the activity)."""
    kind = key.kind
    assert kind != "grant"
    filters = identity_fields(key, ids)
    name = filters.pop("name", None)
    return io.Find(kind=kind, name=name, filters=filters)


def grant(key: ObjectKey, ids: dict[str, str]) -> io.Grant:
    return io.Grant(
        role_id=ids["role_id"],
        user_id=ids.get("user_id"),
        group_id=ids.get("group_id"),
        project_id=ids.get("project_id"),
        domain_id=ids.get("domain_id"),
        system="all" if key.scope is None else None,
    )


def managed(desired: Desired, ids: dict[str, str]) -> dict[str, Any]:
    """The fields a claimant manages: the ones it sets, references resolved to IDs."""
    fields = {k: v for k, v in desired.fields.items() if v is not None}
    fields.update({f: ids[f] for f in desired.refs if f in ids})
    return fields


def drift(current: dict[str, Any], wanted: dict[str, Any]) -> dict[str, Any]:
    """The managed fields whose value in Keystone differs from the wanted one."""
    return {k: v for k, v in wanted.items() if current.get(k) != v}


def disagreement(first: Desired, other: Desired) -> list[str]:
    """Fields two claimants both set to different values (a conflict; unset fields never conflict)."""
    fields = sorted(
        k for k, v in other.fields.items() if v is not None and first.fields.get(k) not in (None, v)
    )
    fields += sorted(k for k, v in other.refs.items() if k in first.refs and first.refs[k] != v)
    if first.password and other.password and first.password != other.password:
        fields.append("passwordSecret")
    return fields
