"""Neutron activities of the Network kind: each makes one idempotent networking call in the resource's project.

Workflows call these by name (api/network_io.py holds the names and the models). A Network of an Identity is
handled with that Identity's application credential; one with a spec.project the tenancy mapping allows,
with the controller's credentials re-scoped to it (activities/cloud.py). Only a provider network's create
and read use the controller's own credentials (Neutron lets only an admin set or see a segment), and only
after the workflow checked the operator allowed it.

Every list is filtered to the scope's project and re-checked by exact name here: a re-scoped admin token
sees every project's objects, and Neutron's name filter is not relied on to be exact.
"""

from __future__ import annotations

from typing import Any, TypeVar

import openstack.connection
import openstack.exceptions
import structlog

from osprov.activities import cloud
from osprov.activities.cloud import openstack_errors
from osprov.activities.contract import implements
from osprov.activities.errors import conflict, consistency, not_found
from osprov.activities.project_scope import ProjectMissing, describe, scoped
from osprov.api import network_io as io

log = structlog.get_logger("osprov.activities.network")

SERVICE = "Neutron"
T = TypeVar("T")


def _network(r: Any) -> io.NetworkView:
    seg = getattr(r, "provider_segmentation_id", None)
    return io.NetworkView(
        id=str(r.id),
        name=str(r.name or ""),
        status=str(r.status or ""),
        network_type=getattr(r, "provider_network_type", None) or None,
        physical_network=getattr(r, "provider_physical_network", None) or None,
        segmentation_id=int(seg) if seg is not None else None,
    )


def _subnet(r: Any) -> io.SubnetView:
    return io.SubnetView(id=str(r.id), name=str(r.name or ""), network_id=str(r.network_id), cidr=str(r.cidr))


def _interfaces(conn: openstack.connection.Connection, router_id: str) -> list[str]:
    subnets = {
        str(ip["subnet_id"])
        for p in conn.network.ports(device_id=router_id)
        if p.device_id == router_id and str(p.device_owner or "").startswith(io.ROUTER_INTERFACE_OWNER)
        for ip in (p.fixed_ips or [])
    }
    return sorted(subnets)


def _router(conn: openstack.connection.Connection, r: Any) -> io.RouterView:
    gateway = r.external_gateway_info or {}
    return io.RouterView(
        id=str(r.id),
        name=str(r.name or ""),
        external_network_id=gateway.get("network_id") or None,
        interface_subnets=_interfaces(conn, str(r.id)),
    )


def _exact(found: Any, name: str, project_id: str) -> list[Any]:
    """Neutron's name filter is not trusted to be exact, and an admin token lists every project's objects."""
    return sorted((r for r in found if r.name == name and r.project_id == project_id), key=lambda r: r.id)


def _find_networks(conn: openstack.connection.Connection, name: str, project_id: str) -> list[Any]:
    return _exact(conn.network.networks(name=name, project_id=project_id), name, project_id)


def _foreign_ports(
    conn: openstack.connection.Connection, network_id: str, routers: list[io.RouterView]
) -> int:
    ours = {r.id for r in routers}
    count = 0
    for p in conn.network.ports(network_id=network_id):
        if p.network_id != network_id or p.device_owner in io.NEUTRON_OWNED_PORTS:
            continue
        if str(p.device_owner or "").startswith(io.ROUTER_INTERFACE_OWNER) and p.device_id in ours:
            continue
        count += 1
    return count


def _lookup(conn: openstack.connection.Connection, req: io.FindNetwork) -> io.NetworkLookup:
    project_id = str(conn.current_project_id)
    names = req.names
    if req.admin:  # only the controller's credentials see a provider network's segment
        raw_networks = _find_networks(cloud.admin_connection(), names.network, req.project_id or project_id)
    else:
        raw_networks = _find_networks(conn, names.network, project_id)
    networks = [_network(r) for r in raw_networks]
    subnets = [
        _subnet(r)
        for r in _exact(
            conn.network.subnets(name=names.subnet, project_id=project_id), names.subnet, project_id
        )
    ]
    routers = [
        _router(conn, r)
        for r in _exact(
            conn.network.routers(name=names.router, project_id=project_id), names.router, project_id
        )
    ]
    foreign = _foreign_ports(conn, networks[0].id, routers) if len(networks) == 1 else 0
    for n in networks:
        if n.status == io.ERROR_STATUS:
            log.warning("neutron network in an error state", network_id=n.id, name=n.name)
    return io.NetworkLookup(
        project_found=True,
        project_id=project_id,
        networks=networks,
        subnets=subnets,
        routers=routers,
        foreign_ports=foreign,
    )


@implements(io.FIND_NETWORK)
def find_network(req: io.FindNetwork) -> io.NetworkLookup:
    """The project's network, subnet and router named exactly as asked (sorted by ID), and the foreign port
    count of the network; project_found=False if the project does not exist."""
    with openstack_errors(f"find network {req.names.network} in {describe(req.scope)}", service=SERVICE):
        try:
            return scoped(req.scope, lambda conn: _lookup(conn, req))
        except ProjectMissing:
            return io.NetworkLookup(project_found=False)


def _one(found: list[Any], name: str) -> Any | None:
    if len(found) > 1:
        raise consistency(f"{len(found)} Neutron objects are named {name}; refusing to create or adopt any")
    return found[0] if found else None


def _create_network(conn: openstack.connection.Connection, req: io.CreateNetwork) -> io.NetworkView:
    project_id = req.project_id or str(conn.current_project_id)
    if req.segment is None:
        existing = _one(_find_networks(conn, req.name, project_id), req.name)
        if existing is not None:  # a retried create after a crash: adopt what the first attempt made
            return _network(existing)
        made = conn.network.create_network(name=req.name, description=req.description)
    else:
        # Admin power, for the project: the workflow checked the operator's mapping allows it, and the VLAN
        # ID is the allocator's (durable in its history before this call).
        admin = cloud.admin_connection()
        existing = _one(_find_networks(admin, req.name, project_id), req.name)
        if existing is not None:
            return _network(existing)
        made = admin.network.create_network(
            name=req.name,
            description=req.description,
            project_id=project_id,
            provider_network_type="vlan",
            provider_physical_network=req.segment.physical_network,
            provider_segmentation_id=req.segment.segmentation_id,
        )
    log.info("neutron network created", network_id=made.id, name=req.name, segment=req.segment)
    return _network(made)


@implements(io.CREATE_NETWORK)
def create_network(req: io.CreateNetwork) -> io.NetworkView:
    """Create-if-absent by exact name in the project."""
    with openstack_errors(f"create network {req.name} in {describe(req.scope)}", service=SERVICE):
        try:
            return scoped(req.scope, lambda conn: _create_network(conn, req))
        except ProjectMissing:
            raise not_found(f"{describe(req.scope)} does not exist in Keystone") from None
        except openstack.exceptions.ConflictException:
            # 409 on a provider network: the segment is taken on the physical network (by a network osprov
            # did not make: the allocator never hands one ID out twice).
            raise conflict(
                f"Neutron refused network {req.name}: its VLAN segment is already in use on the physical "
                "network by another network — retrying"
            ) from None


def _create_subnet(conn: openstack.connection.Connection, req: io.CreateSubnet) -> io.SubnetView:
    project_id = str(conn.current_project_id)
    found = _exact(conn.network.subnets(name=req.name, project_id=project_id), req.name, project_id)
    existing = _one(found, req.name)
    if existing is not None:
        return _subnet(existing)
    made = conn.network.create_subnet(
        name=req.name,
        network_id=req.network_id,
        cidr=req.cidr,
        ip_version=req.ip_version,
        is_dhcp_enabled=req.enable_dhcp,
        description=req.description,
    )
    log.info("neutron subnet created", subnet_id=made.id, name=req.name)
    return _subnet(made)


@implements(io.CREATE_SUBNET)
def create_subnet(req: io.CreateSubnet) -> io.SubnetView:
    """Create-if-absent by exact name in the project."""
    with openstack_errors(f"create subnet {req.name} in {describe(req.scope)}", service=SERVICE):
        try:
            return scoped(req.scope, lambda conn: _create_subnet(conn, req))
        except ProjectMissing:
            raise not_found(f"{describe(req.scope)} does not exist in Keystone") from None


def _create_router(conn: openstack.connection.Connection, req: io.CreateRouter) -> io.RouterView:
    project_id = str(conn.current_project_id)
    found = _exact(conn.network.routers(name=req.name, project_id=project_id), req.name, project_id)
    existing = _one(found, req.name)
    if existing is None:
        existing = conn.network.create_router(
            name=req.name,
            description=req.description,
            external_gateway_info={"network_id": req.external_network_id},
        )
        log.info("neutron router created", router_id=existing.id, name=req.name)
    return _router(conn, existing)


@implements(io.CREATE_ROUTER)
def create_router(req: io.CreateRouter) -> io.RouterView:
    """Create-if-absent by exact name in the project, its gateway on the external network."""
    with openstack_errors(f"create router {req.name} in {describe(req.scope)}", service=SERVICE):
        try:
            return scoped(req.scope, lambda conn: _create_router(conn, req))
        except ProjectMissing:
            raise not_found(f"{describe(req.scope)} does not exist in Keystone") from None


def _add_interface(conn: openstack.connection.Connection, req: io.RouterInterface) -> io.RouterView:
    router = conn.network.get_router(req.router_id)
    if req.subnet_id not in _interfaces(conn, req.router_id):  # a retried add after a crash: already there
        try:
            conn.network.add_interface_to_router(router, subnet=req.subnet_id)
        except openstack.exceptions.BadRequestException as exc:
            # 400 "already has a port on subnet": raced with our own earlier, accepted attempt.
            if req.subnet_id not in _interfaces(conn, req.router_id):
                log.warning("neutron refused the router interface", detail=str(exc.details)[:300])
                raise conflict(
                    "Neutron refused to add the router's interface on the subnet (its gateway address "
                    "taken, or the subnet overlaps another on the router?) — retrying"
                ) from None
    return _router(conn, router)


@implements(io.ADD_ROUTER_INTERFACE)
def add_router_interface(req: io.RouterInterface) -> io.RouterView:
    """Add-if-absent: the router's interface on the subnet; returns the router read after it."""
    with openstack_errors(
        f"add an interface on subnet {req.subnet_id} to router {req.router_id}", service=SERVICE
    ):
        return scoped(req.scope, lambda conn: _add_interface(conn, req))


def _remove_interface(conn: openstack.connection.Connection, req: io.RouterInterface) -> bool:
    if req.subnet_id not in _interfaces(conn, req.router_id):
        return False
    try:
        conn.network.remove_interface_from_router(req.router_id, subnet=req.subnet_id)
    except openstack.exceptions.NotFoundException:
        return False
    return True


@implements(io.REMOVE_ROUTER_INTERFACE)
def remove_router_interface(req: io.RouterInterface) -> bool:
    """Remove-if-present; True if removed now."""
    with openstack_errors(
        f"remove router {req.router_id}'s interface on subnet {req.subnet_id}", service=SERVICE
    ):
        try:
            return scoped(req.scope, lambda conn: _remove_interface(conn, req))
        except ProjectMissing:
            return False


def _delete(conn: openstack.connection.Connection, req: io.DeleteObject) -> io.DeleteResult:
    deleters = {
        "network": conn.network.delete_network,
        "subnet": conn.network.delete_subnet,
        "router": conn.network.delete_router,
    }
    try:
        deleters[req.kind](req.id, ignore_missing=False)
    except openstack.exceptions.NotFoundException:
        return io.DeleteResult(outcome="absent")
    except openstack.exceptions.ConflictException as exc:
        # 409 InUse: ports appeared between the read and the delete; never forced.
        log.warning("neutron refused the delete", kind=req.kind, id=req.id, detail=str(exc.details)[:300])
        raise conflict(f"Neutron refused to delete the {req.kind}: it is still in use — retrying") from None
    return io.DeleteResult(outcome="deleted")


@implements(io.DELETE_OBJECT)
def delete_object(req: io.DeleteObject) -> io.DeleteResult:
    """Delete by ID: "deleted" (Neutron deletes synchronously) or "absent" (already gone, or no project)."""
    with openstack_errors(f"delete {req.kind} {req.id} in {describe(req.scope)}", service=SERVICE):
        try:
            return scoped(req.scope, lambda conn: _delete(conn, req))
        except ProjectMissing:
            return io.DeleteResult(outcome="absent")


ACTIVITIES: list[Any] = [
    find_network,
    create_network,
    create_subnet,
    create_router,
    add_router_interface,
    remove_router_interface,
    delete_object,
]
