"""Every service of the local stack, driven through openstacksdk as osprov's activities will."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from openstack.exceptions import ConflictException

from devenv.faults.cloud_state import nova_instance_actions
from devenv.faults.slow_driver import slow_spawn
from devenv.openstack.catalog import FLAVORS, IMAGE_NAMES, PUBLIC_NETWORK, VIP_SUBNET, VOLUME_TYPE
from devenv.testing import eventually

pytestmark = pytest.mark.fullstack


def _name(prefix: str) -> str:
    return f"smoke-{prefix}-{uuid.uuid4().hex[:8]}"


def test_identity_project_create_and_delete(admin_conn: Any) -> None:
    project = admin_conn.identity.create_project(name=_name("project"), domain_id="default")
    assert admin_conn.identity.find_project(project.id) is not None
    admin_conn.identity.delete_project(project)
    assert admin_conn.identity.find_project(project.id) is None


def _volume_status(conn: Any, volume_id: str) -> str:
    return str(conn.block_storage.get_volume(volume_id).status)


def _server(conn: Any, server_id: str) -> Any:
    return conn.compute.get_server(server_id)


def test_compute_volume_and_rebuild(admin_conn: Any) -> None:
    conn = admin_conn
    image_a, image_b = (conn.image.find_image(n, ignore_missing=False) for n in IMAGE_NAMES)
    flavor = conn.compute.find_flavor(next(iter(FLAVORS)), ignore_missing=False)

    volume = conn.block_storage.create_volume(name=_name("vol"), size=1, volume_type=VOLUME_TYPE)
    server = conn.compute.create_server(
        name=_name("srv"), image_id=image_a.id, flavor_id=flavor.id, networks="none"
    )
    try:
        eventually(lambda: _volume_status(conn, volume.id) == "available", 60, "volume available")
        active = eventually(
            lambda: (s := _server(conn, server.id)).status == "ACTIVE" and s, 90, "server ACTIVE"
        )
        assert active.launched_at

        # Rebuild with the slowed fake driver: the task_state window must be observable.
        seen: set[str] = set()

        def settled() -> Any:
            s = _server(conn, server.id)
            if s.task_state:
                seen.add(s.task_state)
            return s.status == "ACTIVE" and s.task_state is None and "rebuild_spawning" in seen and s

        with slow_spawn(4.0):
            conn.compute.rebuild_server(server, image=image_b.id)
            seen.add(
                eventually(lambda: _server(conn, server.id).task_state, 30, "a task_state", interval=0.1)
            )
            # Another action while the rebuild holds task_state is a real 409 from Nova.
            with pytest.raises(ConflictException):
                conn.compute.reboot_server(server, "SOFT")
            rebuilt = eventually(settled, 90, "rebuild to settle", interval=0.1)
        assert rebuilt.image.id == image_b.id
        assert {"rebuilding", "rebuild_spawning"} <= seen, seen
        actions = [a["action"] for a in nova_instance_actions(conn, server.id)]
        assert actions.count("rebuild") == 1, actions

        conn.compute.create_volume_attachment(server, volume_id=volume.id)
        eventually(lambda: _volume_status(conn, volume.id) == "in-use", 60, "volume in-use")
        conn.compute.delete_volume_attachment(server, volume.id)
        eventually(lambda: _volume_status(conn, volume.id) == "available", 60, "volume detached")
    finally:
        conn.compute.delete_server(server.id, ignore_missing=True)
        conn.compute.wait_for_delete(_server(conn, server.id), wait=90) if conn.compute.find_server(
            server.id
        ) else None
        conn.block_storage.delete_volume(volume.id, ignore_missing=True)
    eventually(lambda: conn.block_storage.find_volume(volume.id) is None, 60, "volume deleted")


def _lb_active(conn: Any, lb_id: str) -> bool:
    lb = conn.load_balancer.get_load_balancer(lb_id)
    assert lb.provisioning_status != "ERROR"
    return bool(lb.provisioning_status == "ACTIVE")


def test_load_balancer_tree_then_cascade_delete(admin_conn: Any) -> None:
    conn = admin_conn
    subnet = conn.network.find_subnet(VIP_SUBNET, ignore_missing=False)
    lb = conn.load_balancer.create_load_balancer(name=_name("lb"), vip_subnet_id=subnet.id)
    try:
        eventually(lambda: _lb_active(conn, lb.id), 60, "LB ACTIVE")
        # The VIP is a real Neutron port on the VIP subnet, routed to `public`: a floating IP attaches.
        vip_port = conn.network.get_port(lb.vip_port_id)
        assert vip_port.fixed_ips[0]["ip_address"] == lb.vip_address
        public = conn.network.find_network(PUBLIC_NETWORK, ignore_missing=False)
        fip = conn.network.create_ip(floating_network_id=public.id, port_id=vip_port.id)
        assert fip.fixed_ip_address == lb.vip_address
        conn.network.delete_ip(fip)
        listener = conn.load_balancer.create_listener(
            name=_name("listener"), load_balancer_id=lb.id, protocol="HTTP", protocol_port=80
        )
        eventually(lambda: _lb_active(conn, lb.id), 60, "LB ACTIVE after listener")
        pool = conn.load_balancer.create_pool(
            name=_name("pool"), listener_id=listener.id, protocol="HTTP", lb_algorithm="ROUND_ROBIN"
        )
        eventually(lambda: _lb_active(conn, lb.id), 60, "LB ACTIVE after pool")
        member = conn.load_balancer.create_member(
            pool, address="10.20.0.10", protocol_port=8080, subnet_id=subnet.id
        )
        eventually(lambda: _lb_active(conn, lb.id), 60, "LB ACTIVE after member")
        monitor = conn.load_balancer.create_health_monitor(
            pool_id=pool.id, type="HTTP", delay=5, timeout=3, max_retries=3
        )
        eventually(lambda: _lb_active(conn, lb.id), 60, "LB ACTIVE after health monitor")

        assert conn.load_balancer.get_listener(listener.id).provisioning_status == "ACTIVE"
        assert conn.load_balancer.get_pool(pool.id).provisioning_status == "ACTIVE"
        assert conn.load_balancer.get_member(member, pool).provisioning_status == "ACTIVE"
        assert conn.load_balancer.get_health_monitor(monitor.id).provisioning_status == "ACTIVE"
    finally:
        conn.load_balancer.delete_load_balancer(lb.id, cascade=True, ignore_missing=True)
    eventually(lambda: conn.load_balancer.find_load_balancer(lb.id) is None, 60, "LB cascade-deleted")
    assert conn.network.find_port(lb.vip_port_id) is None
