"""Server and its image rebuild on the real local stack: CR → bridge → Temporal → worker → real Nova.

Evidence comes from Nova itself: os-instance-actions lists every *accepted* rebuild, so "exactly once"
is asserted there, also when the worker is killed -9 at each boundary of the protocol. The slowed fake
virt driver (devenv.faults.slow_driver) keeps a rebuild's task_state visible long enough to observe the
window and to hit it with faults.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import openstack.connection
import pytest
from temporalio.client import Client

from devenv.config import PORTS
from devenv.faults.cloud_state import nova_instance_actions, nova_reset_state
from devenv.faults.proxy import FaultProxy
from devenv.faults.slow_driver import slow_spawn
from devenv.openstack.catalog import IMAGE_NAMES
from devenv.testing import StackEnv
from osprov.api.operations import APPROVE
from tests.support.osprov import (
    Osprov,
    clouds_env,
    endpoint_override,
    ensure_crd,
    run_osprov,
)
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.stack, pytest.mark.fullstack]

CONTROLLER_USER = "admin"  # the user of the worker's clouds.yaml; a member (not admin) in the test project
SLOW = 6.0  # seconds a slowed spawn (create or rebuild) takes
ERROR_WINDOW = 30.0  # a slowed spawn: the test resets the server to ERROR during it


@pytest.fixture(scope="module")
def project(admin: openstack.connection.Connection) -> Iterator[str]:
    ident: Any = admin.identity
    proj = ident.create_project(name=f"srv-{uuid.uuid4().hex[:8]}", domain_id="default")
    user = ident.find_user(CONTROLLER_USER, domain_id="default", ignore_missing=False)
    ident.assign_project_role_to_user(proj.id, user, ident.find_role("member", ignore_missing=False))
    yield str(proj.name)
    for server in admin.compute.servers(all_projects=True, project_id=proj.id):
        admin.compute.delete_server(server.id, ignore_missing=True)


@pytest.fixture(scope="module")
def images(admin: openstack.connection.Connection) -> tuple[str, str]:
    a, b = (admin.image.find_image(n, ignore_missing=False).id for n in IMAGE_NAMES)
    return a, b


@pytest.fixture(scope="module")
def network(admin: openstack.connection.Connection, project: str) -> Iterator[str]:
    """A project network: the stack's Neutron binds ports (devenv/openstack/port_binding.py)."""
    ident: Any = admin.identity
    project_id = ident.find_project(project, domain_id="default", ignore_missing=False).id
    net = admin.network.create_network(name=f"{project}-net", project_id=project_id)
    admin.network.create_subnet(
        network_id=net.id, project_id=project_id, ip_version=4, cidr="10.78.0.0/24", name=f"{project}-sub"
    )
    yield str(net.id)
    for server in admin.compute.servers(all_projects=True, project_id=project_id):
        admin.compute.delete_server(server.id, ignore_missing=True)
    wait_for(
        lambda: (
            not [p for p in admin.network.ports(network_id=net.id) if p.device_owner.startswith("compute:")]
        ),
        "the project's servers released their ports",
        120,
    )
    admin.network.delete_network(net.id, ignore_missing=True)


@pytest.fixture(scope="module")
def nova_proxy() -> Iterator[FaultProxy]:
    """The worker reaches Nova through this proxy, so a test can hold a crash window open; it passes
    everything unless a test holds answers."""
    with FaultProxy("127.0.0.1", PORTS.nova) as proxy:
        yield proxy


@pytest.fixture(scope="module")
def osprov(
    full_stack: StackEnv, tmp_path_factory: pytest.TempPathFactory, nova_proxy: FaultProxy, network: str
) -> Iterator[Osprov]:
    """Set up after `network`, so torn down before it: the worker must be gone (its workflows terminated)
    before the network's cleanup deletes the servers. Otherwise their workflows see them gone and create
    them again, and their ports are never released (CI of 25f90de: 9 servers created again within 30 s of
    the cleanup, which then timed out)."""
    ensure_crd(full_stack, "Server")
    ensure_crd(full_stack, "Volume")
    tmp = tmp_path_factory.mktemp("server")
    nova = endpoint_override("compute", f"{nova_proxy.url}/v2.1", "2")  # the activities pin a microversion
    yield from run_osprov(full_stack, tmp, extra_env=clouds_env(full_stack, tmp, nova))


def server_spec(project: str, image: str, network: str | None = None) -> dict[str, Any]:
    return {
        "project": {"name": project, "domain": "Default"},
        "flavor": "m1.tiny",
        "imageID": image,
        "deletionPolicy": "delete",
    } | ({"networks": [{"networkID": network}]} if network else {})


def rebuilds(admin: openstack.connection.Connection, server_id: str) -> int:
    return sum(1 for a in nova_instance_actions(admin, server_id) if a["action"] == "rebuild")


def nova_server(admin: openstack.connection.Connection, server_id: str) -> dict[str, Any]:
    resp = admin.compute.get(f"/servers/{server_id}", microversion="2.60")
    resp.raise_for_status()
    return resp.json()["server"]  # type: ignore[no-any-return]


def compute_done(admin: openstack.connection.Connection, server_id: str) -> bool:
    """Every event of every action on the server has finished (nothing runs on the compute host)."""
    for action in nova_instance_actions(admin, server_id):
        resp = admin.compute.get(
            f"/servers/{server_id}/os-instance-actions/{action['request_id']}", microversion="2.60"
        )
        resp.raise_for_status()
        if any(not e.get("finish_time") for e in resp.json()["instanceAction"].get("events", [])):
            return False
    return True


def status(osprov: Osprov, name: str) -> dict[str, Any]:
    """The Server's status now ({} while it has none)."""
    return (osprov.get("Server", name) or {}).get("status") or {}


def marker(osprov: Osprov, name: str) -> dict[str, Any] | None:
    return status(osprov, name).get("rebuild")


def volume_spec(project: str) -> dict[str, Any]:
    return {"project": {"name": project, "domain": "Default"}, "size": 1, "deletionPolicy": "delete"}


def settled(osprov: Osprov, name: str, generation: int) -> dict[str, Any]:
    obj = osprov.wait_ready("Server", name, timeout_s=150, generation=generation, ctype="Available")
    wait_for(lambda: marker(osprov, name) is None, f"{name}: rebuild marker cleared", 60)
    return obj


def create(osprov: Osprov, name: str, spec: dict[str, Any]) -> str:
    osprov.apply("Server", name, spec)
    obj = osprov.wait_ready("Server", name, timeout_s=120, ctype="Available")
    return str(obj["status"]["serverID"])


def test_rebuild_happy_path_keeps_uuid_and_ip_and_is_accepted_once(
    osprov: Osprov,
    admin: openstack.connection.Connection,
    project: str,
    images: tuple[str, str],
    network: str,
) -> None:
    a, b = images
    server_id = create(osprov, "happy", server_spec(project, a, network))
    before = nova_server(admin, server_id)
    [port] = admin.network.ports(device_id=server_id)
    assert port.network_id == network and port.fixed_ips
    st = status(osprov, "happy")
    assert st["phase"] == "Running" and st["launchedAt"] and st["macAddress"] == port.mac_address
    with slow_spawn(SLOW):
        osprov.apply("Server", "happy", server_spec(project, b, network))
        # The accept is visible in Nova: the ref flipped together with a non-empty task_state.
        live = wait_for(
            lambda: (s := nova_server(admin, server_id))["OS-EXT-STS:task_state"] and s,
            "Nova shows the rebuild task",
            60,
        )
        assert live["image"]["id"] == b
        wait_for(
            lambda: (marker(osprov, "happy") or {}).get("state") == "Rebuilding", "marker Rebuilding", 90
        )
    settled(osprov, "happy", 2)
    after = nova_server(admin, server_id)
    assert after["id"] == server_id and after["image"]["id"] == b and after["status"] == "ACTIVE"
    # Same port, so the same fixed IP and MAC (Nova's view and Neutron's).
    assert after["addresses"] == before["addresses"] and after["addresses"]
    assert [(p.id, p.fixed_ips) for p in admin.network.ports(device_id=server_id)] == [
        (port.id, port.fixed_ips)
    ]
    assert status(osprov, "happy")["macAddress"] == port.mac_address
    assert rebuilds(admin, server_id) == 1


def test_worker_killed_at_each_boundary_accepts_exactly_one_rebuild(
    osprov: Osprov,
    admin: openstack.connection.Connection,
    project: str,
    images: tuple[str, str],
    network: str,
    nova_proxy: FaultProxy,
) -> None:
    a, b = images
    server_id = create(osprov, "crash", server_spec(project, a, network))
    boundaries = [
        # (image, what the kill waits for, Nova's answers held)
        (b, lambda: (marker(osprov, "crash") or {}).get("state") == "Initiated", ()),  # after arming
        # The POST was accepted and its answer held, so its result cannot have been recorded.
        (a, lambda: rebuilds(admin, server_id) == 2, ("POST",)),
        (b, lambda: (marker(osprov, "crash") or {}).get("state") == "Rebuilding", ()),  # during settlement
    ]
    for generation, (image, kill_when, held) in enumerate(boundaries, start=2):
        with slow_spawn(SLOW), nova_proxy.holding(held):
            osprov.apply("Server", "crash", server_spec(project, image, network))
            wait_for(kill_when, f"boundary of generation {generation}", 60, interval_s=0.05)
            osprov.worker.kill()
        if held:
            assert (marker(osprov, "crash") or {}).get("state") != "Rebuilding"  # the window held open
        osprov.worker.start()
        settled(osprov, "crash", generation)
        assert nova_server(admin, server_id)["image"]["id"] == image
        assert rebuilds(admin, server_id) == generation - 1, f"generation {generation}"


def test_worker_killed_right_after_create_makes_one_server(
    osprov: Osprov,
    admin: openstack.connection.Connection,
    project: str,
    images: tuple[str, str],
    network: str,
    nova_proxy: FaultProxy,
) -> None:
    with nova_proxy.holding(("POST",)):  # Nova accepts the create; the worker never hears back
        osprov.apply("Server", "once", server_spec(project, images[0], network))
        uid = (osprov.get("Server", "once") or {})["metadata"]["uid"]
        name = f"server-{uid}"
        wait_for(
            lambda: list(admin.compute.servers(all_projects=True, name=f"^{name}$")),
            "server created",
            60,
            interval_s=0.05,
        )
        osprov.worker.kill()
    assert "serverID" not in status(osprov, "once")  # killed inside the window
    osprov.worker.start()
    server_id = osprov.wait_ready("Server", "once", timeout_s=120, ctype="Available")["status"]["serverID"]
    assert [s.id for s in admin.compute.servers(all_projects=True, name=f"^{name}$")] == [server_id]


def test_409_from_a_locked_server_waits_then_submits_once(
    osprov: Osprov,
    admin: openstack.connection.Connection,
    project: str,
    images: tuple[str, str],
    network: str,
) -> None:
    a, b = images
    server_id = create(osprov, "locked", server_spec(project, a, network))
    # A lock held by the admin makes Nova answer 409 to the (non-admin) controller's rebuild.
    admin.compute.post(f"/servers/{server_id}/action", json={"lock": None}).raise_for_status()
    osprov.apply("Server", "locked", server_spec(project, b, network))
    wait_for(lambda: (marker(osprov, "locked") or {}).get("state") == "Initiated", "armed", 60)
    worker_log = osprov.worker.log_text
    wait_for(lambda: "reports a conflict" in worker_log() or "409" in worker_log(), "a 409 answered", 60)
    assert rebuilds(admin, server_id) == 0
    assert (osprov.condition("Server", "locked", "Available") or {}).get("reason") != "Errored"
    admin.compute.post(f"/servers/{server_id}/action", json={"unlock": None}).raise_for_status()
    settled(osprov, "locked", 2)
    assert rebuilds(admin, server_id) == 1


def parked_workflows(osprov: Osprov) -> list[str]:
    async def query() -> list[str]:
        client = await Client.connect(
            osprov.stack.temporal_address, namespace=osprov.stack.temporal_namespace
        )
        q = f"OsprovRebuild = 'Failed' AND OsprovNamespace = '{osprov.namespace}' AND ExecutionStatus = 'Running'"
        return [wf.id.rsplit("/", 1)[0] async for wf in client.list_workflows(q)]

    return asyncio.run(query())


def test_error_during_rebuild_parks_and_a_new_image_rearms(
    osprov: Osprov,
    admin: openstack.connection.Connection,
    project: str,
    images: tuple[str, str],
    network: str,
) -> None:
    a, b = images
    server_id = create(osprov, "errs", server_spec(project, a, network))
    with slow_spawn(ERROR_WINDOW):
        osprov.apply("Server", "errs", server_spec(project, b, network))
        wait_for(lambda: (marker(osprov, "errs") or {}).get("state") == "Rebuilding", "accepted", 60)
        # Reset while the compute host is in the (slowed) spawn: its next write, at the end of the
        # spawn, expects task_state rebuild_spawning and fails, so ERROR stays. (A reset earlier in
        # the rebuild is overwritten by the compute's next task_state step and shows REBUILD again.)
        wait_for(
            lambda: nova_server(admin, server_id)["OS-EXT-STS:task_state"] == "rebuild_spawning",
            "the rebuild is spawning",
            ERROR_WINDOW,
        )
        nova_reset_state(admin, server_id, "error")
        cond = wait_for(
            lambda: (c := osprov.condition("Server", "errs", "Available")) and c["reason"] == "Errored" and c,
            "parked",
            60,
        )
    assert cond and cond["status"] == "False" and "rebuild failed" in cond["message"]
    assert marker(osprov, "errs") == {"targetImageID": b, "state": "Failed"}
    # The operator's query for parked rebuilds (docs/operations.md) finds exactly this workflow.
    wait_for(
        lambda: parked_workflows(osprov) == [f"Server/{osprov.namespace}/errs"], "parked rebuild listed", 30
    )
    # The operator repairs the server once the compute host is done with it; still parked (P4a):
    # the marker is Failed until the image changes.
    wait_for(
        lambda: compute_done(admin, server_id),
        "the interrupted rebuild's compute work ended",
        ERROR_WINDOW + 60,
    )
    nova_reset_state(admin, server_id, "active")
    wait_for(lambda: nova_server(admin, server_id)["status"] == "ACTIVE", "reset to active", 30)
    assert (osprov.condition("Server", "errs", "Available") or {}).get("reason") == "Errored"
    assert rebuilds(admin, server_id) == 1
    # P3: a new image re-arms; P7e submits it once; it settles.
    osprov.apply("Server", "errs", server_spec(project, a, network))
    settled(osprov, "errs", 3)
    after = nova_server(admin, server_id)
    assert after["image"]["id"] == a and after["status"] == "ACTIVE"
    assert rebuilds(admin, server_id) == 2
    assert parked_workflows(osprov) == []


def test_delete_waits_until_nova_has_no_server(
    osprov: Osprov,
    admin: openstack.connection.Connection,
    project: str,
    images: tuple[str, str],
    network: str,
) -> None:
    server_id = create(osprov, "gone", server_spec(project, images[0], network))
    osprov.delete("Server", "gone")
    wait_for(lambda: osprov.get("Server", "gone") is None, "resource gone after its finalizer", 90)
    resp = admin.compute.get(f"/servers/{server_id}")
    assert resp.status_code == 404


def attachments(admin: openstack.connection.Connection, server_id: str) -> list[dict[str, Any]]:
    resp = admin.compute.get(f"/servers/{server_id}/os-volume_attachments")
    resp.raise_for_status()
    return list(resp.json()["volumeAttachments"])


def test_volume_attached_once_survives_a_rebuild_and_detaches_when_removed(
    osprov: Osprov,
    admin: openstack.connection.Connection,
    project: str,
    images: tuple[str, str],
    network: str,
) -> None:
    a, b = images
    vol_spec = volume_spec(project)
    osprov.apply("Volume", "disk", vol_spec)
    volume_id = osprov.wait_ready("Volume", "disk", timeout_s=90, ctype="Available")["status"]["volumeID"]
    with_disk = server_spec(project, a, network) | {"volumes": [{"volume": "disk"}]}
    osprov.apply("Server", "disk-srv", with_disk)
    obj = osprov.wait_ready("Server", "disk-srv", timeout_s=120, ctype="Available")
    server_id = obj["status"]["serverID"]
    [row] = obj["status"]["volumes"]
    [att] = attachments(admin, server_id)
    assert att["volumeId"] == volume_id and row == {"name": "disk", "device": att["device"]}
    osprov.apply("Server", "disk-srv", with_disk | {"imageID": b})
    settled(osprov, "disk-srv", 2)
    assert [x["volumeId"] for x in attachments(admin, server_id)] == [volume_id]  # one attachment, kept
    assert rebuilds(admin, server_id) == 1
    osprov.apply("Server", "disk-srv", server_spec(project, b, network) | {"volumes": []})  # a merge patch
    wait_for(lambda: not attachments(admin, server_id), "detached", 90)
    osprov.wait_ready("Server", "disk-srv", timeout_s=90, generation=3, ctype="Available")


def test_P7a_image_change_before_first_boot_waits_then_rebuilds_once(
    osprov: Osprov,
    admin: openstack.connection.Connection,
    project: str,
    images: tuple[str, str],
    network: str,
) -> None:
    a, b = images
    with slow_spawn(SLOW * 3):
        osprov.apply("Server", "late", server_spec(project, a, network))
        server_id = wait_for(lambda: status(osprov, "late").get("serverID"), "created", 120)
        osprov.apply("Server", "late", server_spec(project, b, network))
        # The workflow has seen generation 2 while Nova still builds: it waits (P7a), nothing is sent.
        wait_for(
            lambda: (osprov.condition("Server", "late", "Available") or {}).get("observedGeneration") == 2,
            "generation 2 observed",
            30,
        )
        assert nova_server(admin, server_id)["status"] == "BUILD"
        assert rebuilds(admin, server_id) == 0
    settled(osprov, "late", 2)
    after = nova_server(admin, server_id)
    assert after["image"]["id"] == b and after["status"] == "ACTIVE"
    assert rebuilds(admin, server_id) == 1


def test_attach_is_made_once_across_a_worker_kill_and_never_multi_attached(
    osprov: Osprov,
    admin: openstack.connection.Connection,
    project: str,
    images: tuple[str, str],
    network: str,
    nova_proxy: FaultProxy,
) -> None:
    vol_spec = volume_spec(project)
    osprov.apply("Volume", "shared", vol_spec)
    volume_id = osprov.wait_ready("Volume", "shared", timeout_s=90, ctype="Available")["status"]["volumeID"]
    osprov.apply(
        "Server", "owner", server_spec(project, images[0], network) | {"volumes": [{"volume": "shared"}]}
    )
    server_id = wait_for(lambda: status(osprov, "owner").get("serverID"), "created", 120)
    # Kill -9 once Nova has accepted the attach whose answer is held: its result cannot be recorded.
    with nova_proxy.holding(("POST",)):
        wait_for(lambda: attachments(admin, server_id), "attach accepted by Nova", 90, interval_s=0.05)
        osprov.worker.kill()
    assert not [row for row in status(osprov, "owner").get("volumes") or [] if row.get("device")]
    osprov.worker.start()
    obj = osprov.wait_ready("Server", "owner", timeout_s=120, ctype="Available")
    assert [x["volumeId"] for x in attachments(admin, server_id)] == [volume_id]
    assert [a["server_id"] for a in admin.block_storage.get_volume(volume_id).attachments] == [server_id]
    assert obj["status"]["volumes"][0]["name"] == "shared"
    # A second server naming the same volume, and a Volume that does not exist: both rows say why,
    # nothing is attached.
    vols = [{"volume": "shared"}, {"volume": "no-such-volume"}]
    osprov.apply("Server", "thief", server_spec(project, images[0], network) | {"volumes": vols})
    rows = wait_for(
        lambda: status(osprov, "thief").get("volumes"),
        "the thief's attachment status",
        120,
    )
    by_name = {r["name"]: r for r in rows}
    assert "no multi-attach" in by_name["shared"]["message"]
    assert "has no Cinder volume" in by_name["no-such-volume"]["message"]
    assert (osprov.condition("Server", "thief", "Available") or {}).get("status") == "False"
    assert [a["server_id"] for a in admin.block_storage.get_volume(volume_id).attachments] == [server_id]


def awaiting_approval(osprov: Osprov, name: str) -> str | None:
    """The token the Server's approval gate waits for (None: nothing awaits approval)."""
    c = osprov.condition("Server", name, "Available") or {}
    if c.get("reason") != "AwaitingApproval":
        return None
    return str(c["message"]).split(f"{APPROVE}=", 1)[1].split()[0]


def osprov_approve(osprov: Osprov, name: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "osprov", "approve", f"Server/{name}", "-n", osprov.namespace, *extra],
        env=dict(os.environ) | osprov.stack.env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_approval_gated_rebuild_waits_until_approved_then_runs_once(
    osprov: Osprov, admin: openstack.connection.Connection, project: str, images: tuple[str, str]
) -> None:
    a, b = images
    gated = {"approvalPolicy": "manual"}
    server_id = create(osprov, "gated", server_spec(project, a) | gated)
    osprov.apply("Server", "gated", server_spec(project, b) | gated)
    token = wait_for(lambda: awaiting_approval(osprov, "gated"), "the rebuild awaits approval", 60)
    assert token == "rebuild:2"
    assert osprov_approve(osprov, "gated", "--change", "rebuild:1").returncode == 1  # not what is pending
    assert rebuilds(admin, server_id) == 0 and nova_server(admin, server_id)["image"]["id"] == a
    approved = osprov_approve(osprov, "gated")
    assert approved.returncode == 0 and "rebuild:2" in approved.stdout, approved.stdout + approved.stderr
    settled(osprov, "gated", 2)
    assert nova_server(admin, server_id)["image"]["id"] == b and rebuilds(admin, server_id) == 1
    # The deletion is gated too: the server stays until that deletion is approved (by the annotation).
    osprov.delete("Server", "gated")
    token = wait_for(lambda: awaiting_approval(osprov, "gated"), "the deletion awaits approval", 60)
    assert token is not None and token.startswith("delete:")
    assert nova_server(admin, server_id)["status"] == "ACTIVE"
    osprov.annotate("Server", "gated", {APPROVE: token})
    wait_for(lambda: osprov.get("Server", "gated") is None, "deleted once approved", 120)
    wait_for(lambda: admin.compute.find_server(server_id) is None, "Nova deleted the server", 120)
