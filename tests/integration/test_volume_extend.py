"""Volume extend (issue 19) on the real local stack: a larger spec.size grows the Cinder volume in place.

Evidence comes from the real services: Cinder's size and status; cinder-api's request log for how many
extends (os-extend actions) it was sent, also when the worker is killed -9 just before and just after the
call; Nova's instance action extend_volume and its block device mapping's size for the attached server,
which Cinder's online extend notifies (the volume-extended external event).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openstack.connection
import pytest

from devenv.faults.cloud_state import cinder_volume_actions, nova_bdm_volume_size
from devenv.faults.proxy import Fault, FaultProxy
from devenv.openstack.catalog import IMAGE_NAMES
from devenv.testing import StackEnv
from tests.integration.test_server_rebuild import network, project
from tests.integration.test_volume import cinder_proxy
from tests.support.osprov import Osprov, clouds_env, endpoint_override, ensure_crd, run_osprov
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.stack, pytest.mark.fullstack]
__all__ = ["cinder_proxy", "network", "project"]  # fixtures shared with the Server and Volume modules

AVAILABLE = "Available"


@pytest.fixture(scope="module")
def osprov(
    full_stack: StackEnv, tmp_path_factory: pytest.TempPathFactory, cinder_proxy: FaultProxy
) -> Iterator[Osprov]:
    ensure_crd(full_stack, "Volume")
    ensure_crd(full_stack, "Server")
    tmp = tmp_path_factory.mktemp("extend")
    cinder = endpoint_override("block_storage", f"{cinder_proxy.url}/v3/%(project_id)s", "3")
    yield from run_osprov(full_stack, tmp, extra_env=clouds_env(full_stack, tmp, cinder))


def volume_spec(project: str, size: int = 1) -> dict[str, Any]:
    return {"project": {"name": project, "domain": "Default"}, "size": size, "deletionPolicy": "delete"}


def grown_to(osprov: Osprov, name: str, size: int, generation: int, timeout_s: float = 120) -> dict[str, Any]:
    """Wait until the Volume's status reports `size` GiB, Provisioned, for `generation`."""

    def reported() -> dict[str, Any] | None:
        obj = osprov.get("Volume", name) or {}
        st = obj.get("status") or {}
        cond: dict[str, Any] = next((c for c in st.get("conditions") or [] if c.get("type") == AVAILABLE), {})
        done = st.get("size") == size and cond.get("reason") == "Provisioned"
        return obj if done and cond.get("observedGeneration") == generation else None

    return wait_for(reported, f"{name}: status reports {size} GiB", timeout_s)


def extend_events(admin: openstack.connection.Connection, server_id: str) -> list[Any]:
    """The events of Nova's extend_volume instance actions on the server (recorded by the external event)."""
    events: list[Any] = []
    for action in admin.compute.server_actions(server_id):
        if action.action == "extend_volume":
            detail = admin.compute.get_server_action(action.request_id, server_id)
            events.extend(detail.events or [])
    return events


def test_attached_volume_grows_online_and_nova_sees_the_new_size(
    osprov: Osprov, admin: openstack.connection.Connection, project: str, network: str
) -> None:
    osprov.apply("Volume", "disk", volume_spec(project))
    volume_id = osprov.wait_ready("Volume", "disk", timeout_s=90, ctype=AVAILABLE)["status"]["volumeID"]
    image = admin.image.find_image(IMAGE_NAMES[0], ignore_missing=False).id
    server = {
        "project": {"name": project, "domain": "Default"},
        "flavor": "m1.tiny",
        "imageID": image,
        "deletionPolicy": "delete",
        "networks": [{"networkID": network}],
        "volumes": [{"volume": "disk"}],
    }
    osprov.apply("Server", "host", server)
    server_id = osprov.wait_ready("Server", "host", timeout_s=120, ctype=AVAILABLE)["status"]["serverID"]
    wait_for(lambda: admin.block_storage.get_volume(volume_id).status == "in-use", "attached", 60)
    assert nova_bdm_volume_size(server_id, volume_id) == 1

    osprov.apply("Volume", "disk", volume_spec(project, size=2))
    obj = grown_to(osprov, "disk", 2, generation=2)
    vol = admin.block_storage.get_volume(volume_id)
    assert obj["status"]["volumeID"] == volume_id and (vol.size, vol.status) == (2, "in-use")
    # Nova handled Cinder's volume-extended event: the instance action, and the new size in its BDM.
    events = wait_for(
        lambda: [e for e in extend_events(admin, server_id) if e.get("finish_time")],
        "Nova finished the extend_volume action",
        60,
    )
    assert [e["event"] for e in events] == ["compute_extend_volume"]
    assert events[0]["result"] == "Success"
    assert nova_bdm_volume_size(server_id, volume_id) == 2
    assert cinder_volume_actions(volume_id) == [202]  # one os-extend, accepted


def test_worker_killed_before_and_after_the_extend_call_sends_exactly_one(
    osprov: Osprov, admin: openstack.connection.Connection, project: str, cinder_proxy: FaultProxy
) -> None:
    osprov.apply("Volume", "grow", volume_spec(project))
    volume_id = osprov.wait_ready("Volume", "grow", timeout_s=90, ctype=AVAILABLE)["status"]["volumeID"]
    # (size, fault): HOLD_REQUEST keeps the extend from Cinder (killed after the worker sent it, before
    # Cinder got it); HOLD_ANSWER lets Cinder accept it but the worker never hears (killed after).
    boundaries = [(2, Fault.HOLD_REQUEST), (3, Fault.HOLD_ANSWER)]
    for generation, (size, fault) in enumerate(boundaries, start=2):
        held = cinder_proxy.requests_held
        with cinder_proxy.holding(("POST",), fault):
            osprov.apply("Volume", "grow", volume_spec(project, size=size))

            def at_boundary(size: int = size, held: int = held, fault: Fault = fault) -> bool:
                if fault is Fault.HOLD_REQUEST:  # the worker sent it; the proxy kept it from Cinder
                    return cinder_proxy.requests_held > held
                return len(cinder_volume_actions(volume_id)) == size - 1  # Cinder got it

            wait_for(at_boundary, f"the extend to {size} GiB at its boundary", 60, interval_s=0.05)
            osprov.worker.kill()
        # The window under test: no result recorded; Cinder got nothing (before) or exactly the one (after).
        assert cinder_volume_actions(volume_id) == [202] * (
            size - 2 if fault is Fault.HOLD_REQUEST else size - 1
        )
        assert ((osprov.get("Volume", "grow") or {}).get("status") or {}).get("size") == size - 1
        osprov.worker.start()
        grown_to(osprov, "grow", size, generation, timeout_s=150)
        assert admin.block_storage.get_volume(volume_id).size == size
        assert cinder_volume_actions(volume_id) == [202] * (size - 1), f"generation {generation}"
