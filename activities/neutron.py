"""Neutron activities for the load balancer's public IP: a floating IP on the Octavia VIP port.

One idempotent call each, in the resource's project. The external network the floating IP comes from is
worker configuration: OSPROV_FLOATING_NETWORK (name or ID); unset, the cloud's only external network.
"""

from __future__ import annotations

import os
from typing import Any

import openstack.connection
import openstack.exceptions

from osprov.activities import cloud
from osprov.activities.cloud import openstack_errors
from osprov.activities.contract import implements
from osprov.activities.errors import invalid
from osprov.api import octavia_io as io

SERVICE = "Neutron"
FLOATING_NETWORK_ENV = "OSPROV_FLOATING_NETWORK"


def _conn(scope: io.Scope) -> openstack.connection.Connection:
    return cloud.scoped_connection(scope.project, scope.domain, scope.credential)


def _view(r: Any) -> io.FloatingIpView:
    return io.FloatingIpView(id=r.id, address=r.floating_ip_address or "", port_id=r.port_id or None)


def _on_port(conn: openstack.connection.Connection, port_id: str) -> list[io.FloatingIpView]:
    found = [_view(r) for r in conn.network.ips(port_id=port_id) if r.port_id == port_id]
    return sorted(found, key=lambda v: v.id)


def _external_network_id(conn: openstack.connection.Connection) -> str:
    wanted = os.environ.get(FLOATING_NETWORK_ENV, "").strip()
    if wanted:
        net = conn.network.find_network(wanted, ignore_missing=True)
        if net is None:
            raise invalid(f"the floating IP network {wanted!r} ({FLOATING_NETWORK_ENV}) does not exist")
        return str(net.id)
    external = sorted(conn.network.networks(is_router_external=True), key=lambda n: n.id)
    if len(external) != 1:
        raise invalid(
            f"the cloud has {len(external)} external networks: set {FLOATING_NETWORK_ENV} on the worker "
            "to the one public IPs come from"
        )
    return str(external[0].id)


@implements(io.FIND_FLOATING_IPS)
def find_floating_ips(req: io.FindFloatingIps) -> list[io.FloatingIpView]:
    """Floating IPs associated with the port, sorted by ID."""
    with openstack_errors(f"find floating IPs of port {req.port_id}", service=SERVICE):
        return _on_port(_conn(req.scope), req.port_id)


@implements(io.CREATE_FLOATING_IP)
def create_floating_ip(req: io.CreateFloatingIp) -> io.FloatingIpView:
    """Create-if-absent: a floating IP already on the port is returned instead of allocating another."""
    with openstack_errors(f"create floating IP on port {req.port_id}", service=SERVICE):
        conn = _conn(req.scope)
        existing = _on_port(conn, req.port_id)
        if existing:
            return existing[0]
        created = conn.network.create_ip(floating_network_id=_external_network_id(conn), port_id=req.port_id)
        return _view(created)


@implements(io.DELETE_FLOATING_IP)
def delete_floating_ip(req: io.DeleteFloatingIp) -> bool:
    """Delete by ID: True if deleted now, False if it was already gone (404 = success)."""
    with openstack_errors(f"delete floating IP {req.id}", service=SERVICE):
        conn = _conn(req.scope)
        try:
            conn.network.delete_ip(req.id, ignore_missing=False)
        except openstack.exceptions.NotFoundException:
            return False
        return True


ACTIVITIES: list[Any] = [find_floating_ips, create_floating_ip, delete_floating_ip]
