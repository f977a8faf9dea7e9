"""The fault tooling produces real failure states in the real services."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from typing import Any

import pytest

from devenv.config import PORTS
from devenv.faults.cloud_state import (
    cinder_reset_status,
    nova_reset_state,
    octavia_force_provisioning_status,
)
from devenv.faults.proxy import Fault, FaultProxy
from devenv.openstack.catalog import FLAVORS, IMAGE_NAMES, VIP_SUBNET, VOLUME_TYPE
from devenv.testing import StackEnv, eventually


def _name(prefix: str) -> str:
    return f"fault-{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.mark.fullstack
def test_nova_reset_state_puts_server_in_error(admin_conn: Any) -> None:
    conn = admin_conn
    image = conn.image.find_image(IMAGE_NAMES[0], ignore_missing=False)
    flavor = conn.compute.find_flavor(next(iter(FLAVORS)), ignore_missing=False)
    server = conn.compute.create_server(
        name=_name("srv"), image_id=image.id, flavor_id=flavor.id, networks="none"
    )
    try:
        eventually(lambda: conn.compute.get_server(server.id).status == "ACTIVE", 90, "server ACTIVE")
        nova_reset_state(conn, server.id)
        assert conn.compute.get_server(server.id).status == "ERROR"
    finally:
        conn.compute.delete_server(server.id, ignore_missing=True)
    eventually(lambda: conn.compute.find_server(server.id) is None, 90, "server deleted")


@pytest.mark.fullstack
def test_cinder_reset_status_puts_volume_in_error(admin_conn: Any) -> None:
    conn = admin_conn
    volume = conn.block_storage.create_volume(name=_name("vol"), size=1, volume_type=VOLUME_TYPE)
    try:
        eventually(lambda: conn.block_storage.get_volume(volume.id).status == "available", 60, "available")
        cinder_reset_status(conn, volume.id)
        assert conn.block_storage.get_volume(volume.id).status == "error"
    finally:
        conn.block_storage.delete_volume(volume.id, ignore_missing=True)
    eventually(lambda: conn.block_storage.find_volume(volume.id) is None, 60, "volume deleted")


@pytest.mark.fullstack
def test_octavia_status_forced_in_database(admin_conn: Any) -> None:
    conn = admin_conn
    subnet = conn.network.find_subnet(VIP_SUBNET, ignore_missing=False)
    lb = conn.load_balancer.create_load_balancer(name=_name("lb"), vip_subnet_id=subnet.id)
    try:
        eventually(
            lambda: conn.load_balancer.get_load_balancer(lb.id).provisioning_status == "ACTIVE",
            60,
            "LB ACTIVE",
        )
        octavia_force_provisioning_status(lb.id, "ERROR")
        assert conn.load_balancer.get_load_balancer(lb.id).provisioning_status == "ERROR"
        octavia_force_provisioning_status(lb.id, "PENDING_UPDATE")
        assert conn.load_balancer.get_load_balancer(lb.id).provisioning_status == "PENDING_UPDATE"
        octavia_force_provisioning_status(lb.id, "ACTIVE")  # Octavia refuses to delete a PENDING_* LB
    finally:
        conn.load_balancer.delete_load_balancer(lb.id, cascade=True, ignore_missing=True)
    eventually(lambda: conn.load_balancer.find_load_balancer(lb.id) is None, 60, "LB deleted")


def _get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@pytest.mark.stack
def test_fault_proxy_in_front_of_keystone(identity_stack: StackEnv) -> None:
    with FaultProxy("127.0.0.1", PORTS.keystone) as proxy:
        url = f"{proxy.url}/v3"
        status, body = _get(url)
        assert status == 200 and json.loads(body)["version"]["id"].startswith("v3")

        proxy.set_fault(Fault.HTTP_503)
        assert _get(url)[0] == 503

        proxy.set_fault(Fault.GARBAGE)
        status, body = _get(url)
        with pytest.raises(json.JSONDecodeError):
            json.loads(body)

        proxy.set_fault(Fault.RESET)
        with pytest.raises((ConnectionError, urllib.error.URLError)):
            _get(url)

        proxy.set_fault(Fault.CLOSE)
        with pytest.raises((ConnectionError, urllib.error.URLError, OSError)):
            _get(url)

        proxy.set_fault(Fault.HANG)
        with pytest.raises((TimeoutError, urllib.error.URLError)):
            _get(url, timeout=1.0)

        with (
            proxy.holding(("GET",)),  # forwarded, never answered
            pytest.raises((TimeoutError, urllib.error.URLError)),
        ):
            _get(url, timeout=1.0)
        assert _get(url)[0] == 200  # released when the block ends
        proxy.set_fault(Fault.HOLD_ANSWER, hold_methods=("POST",))  # other methods pass
        assert _get(url)[0] == 200

        proxy.set_fault(Fault.PASS)
        assert _get(url)[0] == 200
