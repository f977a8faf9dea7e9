"""Neutron security-group activities: each makes one idempotent Networking call scoped to the group's project.

Workflows call these by name (api/security_group_io.py holds the names, the models and the rule key both sides
compare by). A group of an Identity is handled with that Identity's application credential; one with a
spec.project the tenancy mapping allows, with the controller's credentials re-scoped to that project. Neutron
lets an admin token list every project's groups and its name filter is not an exact match (MySQL's collation
folds case), so every lookup filters by the token's project and re-checks the exact name here: osprov only
ever touches the group it created, secgroup-{uid} in that project.
"""

from __future__ import annotations

from typing import Any, TypeVar

import openstack.connection
import openstack.exceptions
import structlog
from temporalio.exceptions import ApplicationError

from osprov.activities import siblings
from osprov.activities.cloud import openstack_errors
from osprov.activities.contract import implements
from osprov.activities.errors import conflict, not_found
from osprov.activities.project_scope import ProjectMissing, describe, scoped
from osprov.api import security_group_io as io
from osprov.api.errors import CONFLICT

log = structlog.get_logger("osprov.activities.security_group")

SERVICE = "Neutron"
T = TypeVar("T")
# The names Neutron shows for the protocols a spec names (the key holds numbers: Neutron's duplicate test).
_PROTOCOL_NAMES = {"6": "tcp", "17": "udp", "1": "icmp", "58": "ipv6-icmp"}


def _key(raw: dict[str, Any]) -> io.RuleKey:
    return io.rule_key(
        direction=str(raw.get("direction") or ""),
        ethertype=str(raw.get("ethertype") or ""),
        protocol=None if raw.get("protocol") is None else str(raw["protocol"]),
        port_range_min=raw.get("port_range_min"),
        port_range_max=raw.get("port_range_max"),
        remote_ip_prefix=raw.get("remote_ip_prefix"),
        remote_group_id=raw.get("remote_group_id"),
    )


def _to_rule(raw: Any) -> io.Rule:
    body = raw if isinstance(raw, dict) else raw.to_dict()
    return io.Rule(id=str(body["id"]), key=_key(body))


def _to_group(resource: Any) -> io.Group:
    rules = sorted((_to_rule(r) for r in resource.security_group_rules or []), key=lambda r: r.id)
    return io.Group(
        id=str(resource.id),
        name=str(resource.name or ""),
        description=str(resource.description or ""),
        rules=rules,
    )


def _find_exact(conn: openstack.connection.Connection, name: str) -> list[io.Group]:
    project = conn.current_project_id
    found = conn.network.security_groups(name=name, project_id=project)
    matches = [g for g in found if g.name == name and g.project_id == project]
    return sorted((_to_group(g) for g in matches), key=lambda g: g.id)


def _by_id(conn: openstack.connection.Connection, group_id: str) -> list[io.Group]:
    """The project's group with this ID (none if absent or another project's: an admin token sees all)."""
    try:
        group = conn.network.get_security_group(group_id)
    except openstack.exceptions.NotFoundException:
        return []
    return [_to_group(group)] if group.project_id == conn.current_project_id else []


@implements(io.FIND_GROUP)
def find_security_group(req: io.FindGroup) -> io.GroupLookup:
    """Every group of the project named exactly `name` (or the one with `id`), with its rules;
    project_found=False if the project does not exist."""
    what = req.id or req.name
    with openstack_errors(f"find security group {what} in {describe(req.scope)}", service=SERVICE):
        try:
            groups = scoped(
                req.scope, lambda conn: _by_id(conn, req.id) if req.id else _find_exact(conn, req.name)
            )
        except ProjectMissing:
            return io.GroupLookup(project_found=False)
        return io.GroupLookup(project_found=True, groups=groups)


def _create(conn: openstack.connection.Connection, req: io.CreateGroup) -> io.Group:
    existing = _find_exact(conn, req.name)
    if existing:  # a retried create after a crash: adopt what the first attempt made (G2 judges several)
        return existing[0]
    created = conn.network.create_security_group(name=req.name, description=req.description)
    log.info("neutron security group created", security_group_id=created.id, name=req.name)
    return _to_group(created)


@implements(io.CREATE_GROUP)
def create_security_group(req: io.CreateGroup) -> io.Group:
    """Create-if-absent: an existing exact-name group is returned instead of creating a second one."""
    with openstack_errors(f"create security group {req.name} in {describe(req.scope)}", service=SERVICE):
        try:
            return scoped(req.scope, lambda conn: _create(conn, req))
        except ProjectMissing:
            raise not_found(f"{describe(req.scope)} does not exist in Keystone") from None


@implements(io.UPDATE_GROUP)
def update_security_group(req: io.UpdateGroup) -> io.Group:
    """Set the group's description (in place; the ID and rules stay)."""
    with openstack_errors(f"update security group {req.id}", service=SERVICE):
        try:
            return scoped(
                req.scope,
                lambda conn: _to_group(
                    conn.network.update_security_group(req.id, description=req.description)
                ),
            )
        except ProjectMissing:
            raise not_found(f"{describe(req.scope)} does not exist in Keystone") from None


def _create_rule(conn: openstack.connection.Connection, req: io.CreateRule) -> io.Rule:
    key = req.key
    protocol = None if key.protocol is None else _PROTOCOL_NAMES.get(key.protocol, key.protocol)
    try:
        made = conn.network.create_security_group_rule(
            security_group_id=req.group_id,
            direction=key.direction,
            ethertype=key.ethertype,
            protocol=protocol,
            port_range_min=key.port_range_min,
            port_range_max=key.port_range_max,
            remote_ip_prefix=key.remote_ip_prefix,
            remote_group_id=key.remote_group_id,
        )
    except openstack.exceptions.ConflictException:
        # SecurityGroupRuleExists: the rule is there (an earlier attempt made it, or someone else): adopt it.
        group = conn.network.get_security_group(req.group_id)
        same = [r for r in _to_group(group).rules if r.key == key]
        if same:
            log.info(
                "neutron security group rule exists: adopted",
                rule_id=same[0].id,
                security_group_id=req.group_id,
            )
            return same[0]
        raise conflict(
            f"Neutron refused rule {key.describe()} as a conflict but holds no such rule in group "
            f"{req.group_id} — retrying"
        ) from None
    log.info("neutron security group rule created", rule_id=made.id, security_group_id=req.group_id)
    return _to_rule(made)


@implements(io.CREATE_RULE)
def create_security_group_rule(req: io.CreateRule) -> io.Rule:
    """Create the rule, or adopt the identical one Neutron already holds (409)."""
    with openstack_errors(f"add a rule to security group {req.group_id}", service=SERVICE):
        try:
            return scoped(req.scope, lambda conn: _create_rule(conn, req))
        except ProjectMissing:
            raise not_found(f"{describe(req.scope)} does not exist in Keystone") from None


def _delete_rule(conn: openstack.connection.Connection, req: io.DeleteRule) -> bool:
    try:
        rule = conn.network.get_security_group_rule(req.rule_id)
    except openstack.exceptions.NotFoundException:
        return False
    if rule.security_group_id != req.group_id:  # never a rule of another group
        raise conflict(f"rule {req.rule_id} is not a rule of security group {req.group_id}")
    conn.network.delete_security_group_rule(req.rule_id, ignore_missing=True)
    return True


@implements(io.DELETE_RULE)
def delete_security_group_rule(req: io.DeleteRule) -> bool:
    """Delete one rule of the group: True if deleted now, False if it was already gone."""
    with openstack_errors(f"remove rule {req.rule_id} from security group {req.group_id}", service=SERVICE):
        try:
            return scoped(req.scope, lambda conn: _delete_rule(conn, req))
        except ProjectMissing:
            return False


def _delete_group(conn: openstack.connection.Connection, group_id: str) -> io.DeleteResult:
    try:
        conn.network.delete_security_group(group_id, ignore_missing=False)
    except openstack.exceptions.NotFoundException:
        return io.DeleteResult(outcome="absent")
    except openstack.exceptions.ConflictException as exc:  # SecurityGroupInUse: ports name it
        log.info("neutron security group in use", security_group_id=group_id, detail=str(exc.details)[:300])
        return io.DeleteResult(outcome="in_use")
    return io.DeleteResult(outcome="deleted")


@implements(io.DELETE_GROUP)
def delete_security_group(req: io.DeleteGroup) -> io.DeleteResult:
    """Delete by ID: deleted, absent (already gone, or no project), or in_use (Neutron's 409)."""
    with openstack_errors(f"delete security group {req.id}", service=SERVICE):
        try:
            return scoped(req.scope, lambda conn: _delete_group(conn, req.id))
        except ProjectMissing:
            return io.DeleteResult(outcome="absent")


# --- remote groups: other SecurityGroup resources of the namespace ---------------------------------------


def _resolve(conn: openstack.connection.Connection, req: io.ResolveGroups) -> io.Resolved:
    ids: dict[str, str] = {}
    missing: dict[str, str] = {}
    for name in req.names:
        try:
            uid = siblings.sibling_uid(
                "SecurityGroup",
                req.namespace,
                name,
                project=req.scope.project,
                domain=req.scope.domain,
                credential=req.scope.credential,
            )
        except ApplicationError as err:
            if err.type != CONFLICT:
                raise
            missing[name] = (
                "lives in another project (a rule names only groups of its own Identity or project)"
            )
            continue
        if uid is None:
            missing[name] = f"does not exist in namespace {req.namespace}"
            continue
        groups = _find_exact(conn, io.security_group_name(uid))
        if len(groups) != 1:
            missing[name] = "has no Neutron security group yet" if not groups else "has duplicate groups"
            continue
        ids[name] = groups[0].id
    return io.Resolved(ids=ids, missing=missing)


@implements(io.RESOLVE_GROUPS)
def resolve_security_groups(req: io.ResolveGroups) -> io.Resolved:
    """The Neutron group IDs of the named SecurityGroup resources (same namespace, same project)."""
    with openstack_errors(f"find the security groups of {', '.join(req.names)}", service=SERVICE):
        try:
            return scoped(req.scope, lambda conn: _resolve(conn, req))
        except ProjectMissing:
            raise not_found(f"{describe(req.scope)} does not exist in Keystone") from None


ACTIVITIES = [
    find_security_group,
    resolve_security_groups,
    create_security_group,
    update_security_group,
    create_security_group_rule,
    delete_security_group_rule,
    delete_security_group,
]
