"""Server resize on the real local stack: CR → bridge → Temporal → worker → real Nova (docs/resize.md).

Nova's instance actions are the oracle: every accepted resize and confirmResize is one, so "exactly once" is
asserted there, also when the worker is killed -9 with the resize's or the confirm's answer held (the call
landed in Nova, its result could not be recorded).
"""

from __future__ import annotations

from typing import Any

import openstack.connection
import pytest

from devenv.faults.cloud_state import nova_instance_actions
from devenv.faults.proxy import FaultProxy
from tests.integration.test_server_rebuild import (
    attachments,
    images,
    network,
    nova_proxy,
    nova_server,
    osprov,
    project,
    server_spec,
    status,
    volume_spec,
)
from tests.support.osprov import Osprov
from tests.support.waiting import wait_for

__all__ = ["images", "network", "nova_proxy", "osprov", "project"]  # fixtures

pytestmark = [pytest.mark.stack, pytest.mark.fullstack]


def counts(admin: openstack.connection.Connection, server_id: str) -> tuple[int, int]:
    """(resize, confirmResize) instance actions Nova recorded for the server."""
    names = [a["action"] for a in nova_instance_actions(admin, server_id)]
    return names.count("resize"), names.count("confirmResize")


def resize_marker(osprov: Osprov, name: str) -> dict[str, Any]:
    return status(osprov, name).get("resize") or {}


def confirmed(osprov: Osprov, name: str, flavor: str, generation: int) -> None:
    wait_for(
        lambda: (
            resize_marker(osprov, name).get("state") == "Confirmed"
            and resize_marker(osprov, name).get("targetFlavor") == flavor
        ),
        f"{name}: resize to {flavor} confirmed",
        150,
    )
    osprov.wait_ready("Server", name, timeout_s=120, generation=generation, ctype="Available")


def test_resize_tiny_to_small_keeps_id_port_and_volume_with_one_resize_and_one_confirm(
    osprov: Osprov,
    admin: openstack.connection.Connection,
    project: str,
    images: tuple[str, str],
    network: str,
) -> None:
    osprov.apply("Volume", "rs-disk", volume_spec(project))
    volume_id = osprov.wait_ready("Volume", "rs-disk", timeout_s=90, ctype="Available")["status"]["volumeID"]
    tiny = server_spec(project, images[0], network) | {"volumes": [{"volume": "rs-disk"}]}
    osprov.apply("Server", "grow", tiny)
    obj = osprov.wait_ready("Server", "grow", timeout_s=120, ctype="Available")
    server_id = obj["status"]["serverID"]
    assert obj["status"]["flavor"] == "m1.tiny"
    before = nova_server(admin, server_id)
    [port] = admin.network.ports(device_id=server_id)
    assert [a["volumeId"] for a in attachments(admin, server_id)] == [volume_id]
    osprov.apply("Server", "grow", tiny | {"flavor": "m1.small"})
    confirmed(osprov, "grow", "m1.small", 2)
    after = nova_server(admin, server_id)
    assert after["id"] == server_id and after["status"] == "ACTIVE"
    assert after["flavor"]["original_name"] == "m1.small"
    assert after["addresses"] == before["addresses"] and after["addresses"]
    assert [(p.id, p.fixed_ips) for p in admin.network.ports(device_id=server_id)] == [
        (port.id, port.fixed_ips)
    ]
    assert [a["volumeId"] for a in attachments(admin, server_id)] == [volume_id]
    st = status(osprov, "grow")
    assert st["flavor"] == "m1.small" and st["serverID"] == server_id
    assert counts(admin, server_id) == (1, 1)


def test_worker_killed_after_the_resize_post_and_after_the_confirm_post_resizes_and_confirms_once(
    osprov: Osprov,
    admin: openstack.connection.Connection,
    project: str,
    images: tuple[str, str],
    network: str,
    nova_proxy: FaultProxy,
) -> None:
    spec = server_spec(project, images[0], network)
    osprov.apply("Server", "rs-crash", spec)
    server_id = osprov.wait_ready("Server", "rs-crash", timeout_s=120, ctype="Available")["status"][
        "serverID"
    ]
    # 1: Nova accepted the resize, its answer is held: the worker dies before it can record the result.
    with nova_proxy.holding(("POST",), containing=b'"resize"'):
        osprov.apply("Server", "rs-crash", spec | {"flavor": "m1.small"})
        wait_for(lambda: counts(admin, server_id)[0] == 1, "resize accepted by Nova", 60, interval_s=0.05)
        osprov.worker.kill()
    assert resize_marker(osprov, "rs-crash").get("state") == "Initiated"  # the window held open
    osprov.worker.start()
    confirmed(osprov, "rs-crash", "m1.small", 2)
    assert counts(admin, server_id) == (1, 1)
    # 2: back to m1.tiny; this time the confirm's answer is held when the worker dies.
    with nova_proxy.holding(("POST",), containing=b'"confirmResize"'):
        osprov.apply("Server", "rs-crash", spec)
        wait_for(lambda: counts(admin, server_id)[1] == 2, "confirm accepted by Nova", 90, interval_s=0.05)
        osprov.worker.kill()
    assert resize_marker(osprov, "rs-crash").get("state") != "Confirmed"  # killed inside the window
    osprov.worker.start()
    confirmed(osprov, "rs-crash", "m1.tiny", 3)
    after = nova_server(admin, server_id)
    assert after["flavor"]["original_name"] == "m1.tiny" and after["status"] == "ACTIVE"
    assert counts(admin, server_id) == (2, 2)
