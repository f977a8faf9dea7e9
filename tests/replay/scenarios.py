"""One scenario per workflow type, run on the time-skipping server with stubbed activities.

`python -m tests.replay.record` runs them and writes each history to histories/<Kind>.json; the
replay test replays those files against the current code, so any change to a workflow's command
sequence (a non-deterministic change for running workflows) fails CI until it is patched or the
history is deliberately re-recorded (see docs/operations.md, "Upgrades").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from temporalio.worker import Worker

from osprov.api import identity_io, inventory_io
from osprov.api import ownership as own
from osprov.api import sweep as sw
from osprov.api.identity import IDENTITY_GROUP
from osprov.api.operations import PAUSED
from osprov.api.ownership import ObjectKey, ObjectResult, Watch
from osprov.workflows.all import WORKFLOWS
from osprov.workflows.keystone import parents
from tests.workflows import (
    fakes_cinder,
    fakes_inventory,
    fakes_network,
    fakes_nova,
    fakes_octavia,
    fakes_security_group,
)
from tests.workflows.fakes_identity import ROLES
from tests.workflows.harness import Harness, eventually

FINALIZER = "keystone.osh.openstack.org/finalizer"


def _seed(h: Harness) -> None:
    dom = h.cloud.add("domain", name="service", enabled=True).id
    h.cloud.add("role", name="admin")
    h.cloud.add("user", name="cinder", domain_id=dom)
    h.cloud.add("project", name="service", domain_id=dom)
    h.cloud.add("service", name="cinderv3", type="volumev3")
    h.cloud.secrets["ns/pw/OS_PASSWORD"] = "not-a-real-password"


SPECS: dict[str, dict[str, Any]] = {
    "Domain": {"name": "d1", "description": "x"},
    "Project": {"name": "p1", "domain": "service"},
    "Role": {"name": "r1"},
    "Group": {"name": "g1", "domain": "service"},
    "User": {"name": "u1", "domain": "service", "passwordSecret": {"name": "pw"}},
    "RoleAssignment": {
        "role": {"name": "admin"},
        "user": {"name": "cinder", "domain": "service"},
        "project": {"name": "service", "domain": "service"},
    },
    "Service": {"name": "s1", "type": "t1"},
    "Endpoint": {
        "service": {"name": "cinderv3", "type": "volumev3"},
        "region": "RegionOne",
        "urls": {"public": "http://x/v3"},
    },
}


async def lifecycle(h: Harness, kind: str) -> str:
    """Create (with deletionPolicy delete), one resync period (the Keystone sweep's scan: the converged
    resource itself has no timer), a spec change, then delete."""
    _seed(h)
    spec = SPECS[kind] | {"deletionPolicy": "delete"}
    wf = await h.apply(kind, spec, name="replay", uid=f"replay-{kind.lower()}")
    await eventually(lambda: bool(h.cloud.statuses), f"{kind} reconciled")
    await h.env.sleep(601)
    await eventually(lambda: h.cloud.count(sw.SCAN.name) >= 1, f"{kind}'s objects scanned")
    await h.signal(wf, 2, spec | {"retryInterval": "30s"}, finalizers=[FINALIZER])
    await eventually(lambda: h.cloud.statuses[-1]["observedGeneration"] == 2, f"{kind} generation 2")
    await h.signal(wf, 2, spec, deleting=True, finalizers=[FINALIZER])
    await wf.result()
    return wf.id


async def keystone_object(h: Harness, _: str) -> str:
    """A user's object workflow through a User's lifecycle: created with its password, probed on the
    resync, patched, deleted when its delete-policy claimant goes."""
    await lifecycle(h, "User")
    return ObjectKey(kind="user", domain="service", name="u1").workflow_id(h.keystone, h.queue)


async def keystone_sweep(h: Harness, _: str) -> str:
    """The sweep through a User's life: reported, an idle scan, a password changed outside (the scan wakes
    the user's object, which sets it again), the user deleted (forgotten)."""
    _seed(h)
    spec = SPECS["User"] | {"deletionPolicy": "delete"}
    wf = await h.apply("User", spec, name="replay", uid="replay-sweep", finalizers=[FINALIZER])
    await eventually(lambda: bool(h.cloud.statuses) and h.last_ready()["status"] == "True", "user ready")
    await h.env.sleep(601)
    await eventually(lambda: h.cloud.count(sw.SCAN.name) >= 1, "an idle scan")
    [user] = [u for u in h.cloud.of("user") if u.fields["name"] == "u1"]
    h.cloud.passwords[user.id] = "changed outside osprov"
    await h.env.sleep(601)
    await eventually(lambda: h.cloud.passwords[user.id] == "not-a-real-password", "password set again")
    await h.signal(wf, 1, spec, deleting=True, finalizers=[FINALIZER])
    await wf.result()
    await eventually(lambda: _n(h, 0), "the user's object forgotten")
    return sw.workflow_id(h.keystone, h.queue)


async def paused_project(h: Harness, _: str) -> str:
    """A converged Project paused (its object is told to leave the sweep), resumed, then deleted."""
    _seed(h)
    spec = SPECS["Project"] | {"deletionPolicy": "delete"}
    wf = await h.apply("Project", spec, name="held", uid="replay-hold", finalizers=[FINALIZER])
    await eventually(lambda: bool(h.cloud.statuses) and h.last_ready()["status"] == "True", "ready")
    await eventually(lambda: _n(h, 1), "reported to the sweep")
    await h.signal(wf, 1, spec, finalizers=[FINALIZER], annotations={PAUSED: "true"})
    await eventually(lambda: _n(h, 0), "left the sweep while paused")
    await h.signal(wf, 1, spec, finalizers=[FINALIZER])
    await eventually(lambda: _n(h, 1), "back in the sweep")
    await h.signal(wf, 1, spec, deleting=True, finalizers=[FINALIZER])
    await wf.result()
    return wf.id


async def identity(h: Harness, kind: str, spec: dict[str, Any] | None = None, resync: bool = True) -> str:
    """An Identity: claims, credential #1, a resync (the Secret read), a use by a Volume's workflow ID that
    no longer exists (dropped by the deletion guard), delete (revoke, release with delete). (`resync`: the
    Keystone sweep now finds drift, so a converged Identity keeps no resync timer and the 601 s step finds no
    Secret read; Identity.json was recorded before that and still replays.)"""
    h.cloud.add("domain", name="tenants", enabled=True)
    for role in ROLES:
        h.cloud.add("role", name=role)
    spec = spec or {}
    finalizer = f"{IDENTITY_GROUP}/finalizer"
    wf = await h.apply(kind, spec, name="replay", uid="replay-identity")
    await eventually(lambda: bool(h.cloud.identity.issued), "credential issued")
    await eventually(lambda: bool(h.cloud.statuses) and h.last_ready()["status"] == "True", "identity ready")
    if resync:
        await h.env.sleep(601)
        await eventually(
            lambda: h.cloud.identity.count(identity_io.CHECK_SECRET.name) >= 1, "identity resynced"
        )
    gone = identity_io.IdentityUser(workflow_id="Volume/ns/v/gone", kind="Volume", name="v", uid="gone")
    await h.send(wf, identity_io.IdentityUse(user=gone, seq=1), identity_io.SIGNAL_USE)
    await h.signal(wf, 1, spec, deleting=True, finalizers=[finalizer])
    await wf.result()
    return wf.id


SCENARIOS: dict[str, Callable[[Harness, str], Awaitable[str]]] = {kind: lifecycle for kind in SPECS}
SCENARIOS["KeystoneObject"] = keystone_object
SCENARIOS["KeystoneSweep"] = keystone_sweep  # recorded before the shards: the lead held the reports
SCENARIOS["KeystoneSweep-shards"] = keystone_sweep


async def keystone_sweep_shard(h: Harness, kind: str) -> str:
    """The same life, as the user's object's shard saw it: reported (the lead told), forgotten (told again)."""
    await keystone_sweep(h, kind)
    [shard] = [w for w in h.cloud.object_workflows if w.startswith(sw.SHARD_WORKFLOW_TYPE + "/")]
    return shard


SCENARIOS["KeystoneSweepShard"] = keystone_sweep_shard
SCENARIOS["Project-paused"] = paused_project  # a stem of its own: Project.json stays the lifecycle
SCENARIOS["Identity"] = identity


async def identity_with_key(h: Harness, kind: str) -> str:
    """The Identity scenario with spec.sshPublicKey: its teardown deletes the Nova keypair first (X6)."""
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOv7kL6hWmzTP1n9qDP1o2T0bUZ1 replay"
    return await identity(h, "Identity", {"sshPublicKey": key}, resync=False)


# Recorded as Identity-keypair.json: the patched teardown (identity-keypair-delete); Identity.json keeps proving
# that runs without a key (and runs from before) replay.
SCENARIOS["Identity-keypair"] = identity_with_key
SCENARIOS["Volume"] = fakes_cinder.replay_scenario
SCENARIOS["LoadBalancer"] = fakes_octavia.replay_scenario
SCENARIOS["Server"] = fakes_nova.replay_scenario
SCENARIOS["Network"] = fakes_network.replay_scenario
SCENARIOS["Network-provider"] = fakes_network.provider_scenario  # P1, P2, P4 around the same table
SCENARIOS["VlanAllocator"] = fakes_network.provider_scenario
SCENARIOS["SecurityGroup"] = fakes_security_group.replay_scenario


def inventory_scenario(kind: str) -> Callable[[Harness, str], Awaitable[str]]:
    async def scenario(h: Harness, _: str) -> str:
        return await fakes_inventory.replay_scenario(h, kind)

    return scenario


for inventory in ("Flavor", "VolumeClass", "Image"):
    SCENARIOS[f"{inventory}Inventory"] = inventory_scenario(inventory)


async def server_with_inventory(h: Harness, _: str) -> str:
    """Server's scenario with the region inventory on: both images are offered (the check before Nova)."""
    h.cloud.offer, h.cloud.offered_images = inventory_io.Offer(enabled=True), {"img-a", "img-b"}
    return await fakes_nova.replay_scenario(h, "Server")


async def volume_with_inventory(h: Harness, _: str) -> str:
    """Volume's scenario with a class checked against the region inventory (C0) before Cinder."""
    offered = inventory_io.OfferedVolumeClass(name="fast", volume_type_id="t-fast", max_capacity_gib=10)
    h.cloud.offer = inventory_io.Offer(enabled=True, volume_classes=[offered])
    return await fakes_cinder.replay_scenario(h, "Volume", volumeClass="fast")


# Recorded as Server-inventory.json and Volume-inventory.json: the patched paths (PATCH_IMAGE_CHECK,
# PATCH_CLASS_CHECK); Server.json and Volume.json keep proving the runs started before them replay.
SCENARIOS["Server-inventory"] = server_with_inventory
SCENARIOS["Volume-inventory"] = volume_with_inventory


async def volume_observed(h: Harness, _: str) -> str:
    return await fakes_cinder.observe_scenario(h, "Volume")


# Recorded as Volume-observe.json: the patched observe path (PATCH_OBSERVE) of an unmanaged Volume.
SCENARIOS["Volume-observe"] = volume_observed


async def volume_extended(h: Harness, _: str) -> str:
    return await fakes_cinder.extend_scenario(h, "Volume")


# Recorded as Volume-extend.json: the patched extend path (volume-extend) of a Volume whose size grows.
SCENARIOS["Volume-extend"] = volume_extended


async def server_observed(h: Harness, _: str) -> str:
    return await fakes_nova.observe_scenario(h, "Server")


async def load_balancer_observed(h: Harness, _: str) -> str:
    return await fakes_octavia.observe_scenario(h, "LoadBalancer")


# Recorded as Server-observe.json and LoadBalancer-observe.json: the patched observe paths (server-observe,
# loadbalancer-observe) of unmanaged Servers and LoadBalancers.
SCENARIOS["Server-observe"] = server_observed


async def security_group_observed(h: Harness, _: str) -> str:
    return await fakes_security_group.observe_scenario(h, "SecurityGroup")


# Recorded as SecurityGroup-observe.json: the observe path of an unmanaged SecurityGroup (O1, OG1).
SCENARIOS["SecurityGroup-observe"] = security_group_observed
SCENARIOS["LoadBalancer-observe"] = load_balancer_observed


async def _n(h: Harness, n: int) -> bool:
    return await h.swept() == n


async def server_approval(h: Harness, _: str) -> str:
    """An approval-gated Server (workflows/approval.py): the rebuild waits, is approved by the Update
    `approve`, runs; the deletion waits and is approved by the annotation."""
    from osprov.api.operations import APPROVE, UPDATE_APPROVE
    from tests.workflows.test_server_workflow import spec

    async with fakes_nova.nova_harness(h.env, h.cloud, f"{h.queue}-nova") as sh:
        nova = sh.nova
        finalizers = ["nova.osh.openstack.org/finalizer"]
        wf = await sh.apply(
            "Server", spec("img-a", approvalPolicy="manual"), name="gated", uid="replay-gated"
        )
        await sh.until(lambda: sh.condition().get("status") == "True", "server available")
        await sh.signal(wf, 2, spec("img-b", approvalPolicy="manual"), finalizers=finalizers)
        await sh.until(lambda: sh.condition().get("reason") == "AwaitingApproval", "rebuild awaits approval")
        await wf.execute_update(UPDATE_APPROVE, "rebuild:2", result_type=str)
        await sh.until(lambda: nova.accepted == ["img-b"], "rebuild accepted")
        nova.only().settle()
        await sh.until(lambda: sh.condition()["status"] == "True", "rebuild settled")
        deleting: dict[str, Any] = {"deleting": True, "finalizers": finalizers}
        await sh.signal(wf, 2, spec("img-b", approvalPolicy="manual"), **deleting)
        await sh.until(lambda: sh.condition().get("reason") == "AwaitingApproval", "deletion awaits approval")
        annotations = {APPROVE: "delete:2"}
        await sh.signal(wf, 2, spec("img-b", approvalPolicy="manual"), annotations=annotations, **deleting)
        await wf.result()
        return str(wf.id)


# Recorded as Server-approval.json: a gated rebuild and deletion (no patch: only resources that ask for
# approval run the gate's commands, and no older run could ask).
SCENARIOS["Server-approval"] = server_approval


async def load_balancer_planned(h: Harness, _: str) -> str:
    return await fakes_octavia.replay_scenario(h, "LoadBalancer", plan=True)


# Recorded as LoadBalancer-plan.json: the Update `plan` (reads only) before a member change.
SCENARIOS["LoadBalancer-plan"] = load_balancer_planned


async def server_resized(h: Harness, _: str) -> str:
    return await fakes_nova.resize_scenario(h, "Server")


# Recorded as Server-resize.json: the patched resize path (server-resize): resize, attribution, confirm.
SCENARIOS["Server-resize"] = server_resized


async def server_settled_read(h: Harness, _: str) -> str:
    return await fakes_nova.settled_read_scenario(h, "Server")


# Recorded as Server-settled-read.json: the patched path (server-settled-read): the rebuild's wait finds Nova
# done, and its last read decides the next pass at once.
SCENARIOS["Server-settled-read"] = server_settled_read


async def server_pinned(h: Harness, _: str) -> str:
    """A pinned Server (workflows/server_pinning.py): the operator's mapping allows it, the placement
    preflight misses, is asked again on the retry timer, fits; the pinned create; then the deletion."""
    from osprov.api import tenancy_io
    from tests.workflows.test_server_workflow import spec

    async with fakes_nova.nova_harness(h.env, h.cloud, f"{h.queue}-nova") as sh:
        h.cloud.identity.pinning = tenancy_io.PinningPolicy(allowed=True, preflight=True)
        sh.nova.preflight_missing = ["lacks required trait CUSTOM_A"]
        pinned = spec("img-a", placement={"hypervisorHostname": "node-1"})
        wf = await sh.apply("Server", pinned, name="pinned", uid="replay-pinned")
        await sh.until(lambda: "CUSTOM_A" in sh.condition().get("message", ""), "the preflight miss is shown")
        sh.nova.preflight_missing = []
        await sh.until(lambda: sh.condition().get("status") == "True", "server available", virtual_s=900)
        finalizers = ["nova.osh.openstack.org/finalizer"]
        await sh.signal(wf, 1, pinned, deleting=True, finalizers=finalizers)
        await wf.result()
        return str(wf.id)


# Recorded as Server-pinned.json: N1–N3's commands (a local tenancy check, the preflight) run only for
# Servers with spec.placement, new in this release, so no older run has them and no patch is needed.
SCENARIOS["Server-pinned"] = server_pinned


async def server_baremetal(h: Harness, _: str) -> str:
    """A baremetal build (patch server-baremetal-status): Queued while Ironic cleans, Building once it
    deploys, Running at first boot; then the deletion."""
    from osprov.api import nova_io
    from tests.workflows.test_server_workflow import spec

    async with fakes_nova.nova_harness(h.env, h.cloud, f"{h.queue}-nova") as sh:
        nova = sh.nova
        nova.boot_on_create = False
        nova.baremetal = nova_io.BaremetalProgress(baremetal=True, queued=True, provision_state="clean wait")
        wf = await sh.apply("Server", spec("img-a"), name="metal", uid="replay-metal")
        await sh.until(lambda: sh.status().get("phase") == "Queued", "Queued")
        nova.baremetal = nova_io.BaremetalProgress(baremetal=True, provision_state="wait call-back")
        await sh.until(lambda: sh.status().get("phase") == "Building", "Building", virtual_s=120)
        nova.only().boot()
        await sh.until(lambda: sh.condition().get("status") == "True", "server available", virtual_s=120)
        finalizers = ["nova.osh.openstack.org/finalizer"]
        await sh.signal(wf, 1, spec("img-a"), deleting=True, finalizers=finalizers)
        await wf.result()
        return str(wf.id)


# Recorded as Server-baremetal.json: the patched BUILD passes (server-baremetal-status) asking Ironic.
SCENARIOS["Server-baremetal"] = server_baremetal


def _p2() -> dict[str, Any]:
    return {"name": "p2", "domain": "service", "deletionPolicy": "delete"}


async def _apply_second_project(h: Harness, **faults: int) -> Any:
    """Two Projects in one domain: the first reconciled, then the fake cloud's `faults` set (e.g.
    defer_watches=1), then the second applied; its object watches the domain."""
    h.cloud.add("domain", name="service", enabled=True)
    first = await h.apply("Project", {"name": "p1", "domain": "service"}, name="p1", uid="replay-p1")
    await eventually(lambda: bool(h.written.get(first.id)), "the first project reconciled")
    for fault, count in faults.items():
        setattr(h.cloud, fault, count)
    return await h.apply("Project", _p2(), name="p2", uid="replay-p2", finalizers=[FINALIZER])


async def _delete_second_project(h: Harness, second: Any) -> None:
    await h.signal(second, 1, _p2(), deleting=True, finalizers=[FINALIZER])
    await second.result()


async def _second_project(h: Harness) -> Any:
    """Two Projects in one domain: the second one's object reads the domain's ID from its record."""
    second = await _apply_second_project(h)
    await eventually(lambda: bool(h.written.get(second.id)), "the second project reconciled")
    await _delete_second_project(h, second)
    return second


async def keystone_object_read_parent(h: Harness, _: str) -> str:
    """A project's object whose watch read the domain's ID from the domain's record (no answer waited)."""
    await _second_project(h)
    return ObjectKey(kind="project", domain="service", name="p2").workflow_id(h.keystone, h.queue)


async def keystone_object_registered_watch(h: Harness, _: str) -> str:
    """The domain's object: the first watch answered by a signal, the second one only registered."""
    await _second_project(h)
    return ObjectKey(kind="domain", name="service").workflow_id(h.keystone, h.queue)


# The dependent's watch reading its parent's record (activities/ownership.py watch, Watch.known_id).
SCENARIOS["KeystoneObject-read-parent"] = keystone_object_read_parent
SCENARIOS["KeystoneObject-registered-watch"] = keystone_object_registered_watch


async def keystone_object_registers_later(h: Harness, _: str) -> str:
    """A project's object whose watch the busy domain deferred (WatchAnswer.registered False): Ready with the
    ID it read, it registers on its backoff (parents.py REGISTER_FIRST), then is deleted."""
    second = await _apply_second_project(h, defer_watches=1)
    await eventually(lambda: bool(h.written.get(second.id)), "the second project reconciled")
    key = ObjectKey(kind="project", domain="service", name="p2")
    watcher = key.workflow_id(h.keystone, h.queue)
    await h.sleep_settled(parents.REGISTER_FIRST * 1.5)  # the latest its jittered first try can come
    await h.until(
        lambda: sum(1 for w in h.cloud.watches if w.watcher == watcher) == 2,
        "registered again",
        virtual_s=30,
    )
    await _delete_second_project(h, second)
    return watcher


SCENARIOS["KeystoneObject-registers-later"] = keystone_object_registers_later


async def keystone_object_reasks_unanswered(h: Harness, _: str) -> str:
    """A project's object whose watch read no ID and was never answered: it tells its claimant it waits,
    asks again on the registration backoff (patch keystone-object-reasks-unanswered), reads the domain's
    ID and creates the project; then it is deleted."""
    second = await _apply_second_project(h, lose_watches=1)
    await h.until(lambda: bool(h.written.get(second.id)), "the second project's first status", virtual_s=60)
    await h.sleep_settled(parents.REGISTER_FIRST * 1.5)
    await h.until(lambda: len(h.cloud.of("project")) == 2, "the second project created", virtual_s=60)
    await h.until(lambda: h.written[second.id]["conditions"][0]["status"] == "True", "p2 Ready", virtual_s=60)
    await _delete_second_project(h, second)
    return ObjectKey(kind="project", domain="service", name="p2").workflow_id(h.keystone, h.queue)


SCENARIOS["KeystoneObject-reasks-unanswered"] = keystone_object_reasks_unanswered


async def keystone_object_tells_without_step(h: Harness, _: str) -> str:
    """The domain's object, watched by a second project that read its ID from the memo, then by one that
    did not (patch keystone-watchers-told-local): told what the run holds, without a step."""
    await _second_project(h)
    key = ObjectKey(kind="domain", name="service")
    domain = h.env.client.get_workflow_handle(key.workflow_id(h.keystone, h.queue))
    await domain.signal(own.SIGNAL_WATCH, Watch(keystone=h.keystone, watcher="gone-dependent", key=key))

    async def forgotten() -> bool:
        state: Any = await domain.query(own.QUERY_OBJECT)
        return "gone-dependent" not in state["watchers"]

    await eventually(forgotten, "the watcher told, and forgotten (its workflow is gone)")
    return domain.id


SCENARIOS["KeystoneObject-tells-without-step"] = keystone_object_tells_without_step


async def keystone_object_endpoint(h: Harness, _: str) -> str:
    """A new endpoint's object: it watches its service, then reads itself, its policy and its region in one
    round, then creates the region and itself (patch keystone-step-reads-together)."""
    _seed(h)
    await h.apply("Endpoint", SPECS["Endpoint"], name="replay", uid="replay-endpoint")
    await eventually(lambda: bool(h.cloud.statuses) and h.last_ready()["status"] == "True", "endpoint ready")
    key = ObjectKey(kind="endpoint", name="cinderv3", type="volumev3", region="RegionOne", interface="public")
    return key.workflow_id(h.keystone, h.queue)


SCENARIOS["KeystoneObject-endpoint"] = keystone_object_endpoint


async def keystone_object_told_before_password(h: Harness, _: str) -> str:
    """A user's object with a grant waiting for it: the grant is told the user's ID between its create and
    its password (patch keystone-user-told-before-password)."""
    dom = h.cloud.add("domain", name="service", enabled=True).id
    h.cloud.add("role", name="admin")
    h.cloud.add("project", name="service", domain_id=dom)
    h.cloud.secrets["ns/pw/OS_PASSWORD"] = "not-a-real-password"
    grant = SPECS["RoleAssignment"] | {"user": {"name": "u1", "domain": "service"}}
    wf = await h.apply("RoleAssignment", grant, name="grant", uid="replay-grant")
    await eventually(lambda: bool(h.written.get(wf.id)), "the grant waiting for its user")
    await h.apply("User", SPECS["User"], name="user", uid="replay-user")
    await eventually(lambda: bool(h.cloud.grants), "the grant put")
    user = h.env.client.get_workflow_handle(
        ObjectKey(kind="user", domain="service", name="u1").workflow_id(h.keystone, h.queue)
    )

    async def reported() -> bool:  # the step's last task is in the history
        history = await user.fetch_history()
        return any(b"ownership.sweep_report" in e.SerializeToString() for e in history.events)

    await eventually(reported, "the user's step recorded")
    return user.id


SCENARIOS["KeystoneObject-told-before-password"] = keystone_object_told_before_password


async def domain_late_answer(h: Harness, _: str) -> str:
    """A Domain whose first claim is never answered: its retries wait for that answer, the claim goes out
    again after LATE_CLAIM_RESEND (patch keystone-late-answer-awaited)."""
    h.cloud.lose_claims = 1
    wf = await h.apply("Domain", {"name": "d"}, name="d", uid="replay-late")
    await eventually(lambda: len(h.cloud.claims) == 1, "the first claim")
    await h.sleep_settled(61)
    await eventually(lambda: bool(h.cloud.statuses), "the late answer reported")
    await h.sleep_settled(70)
    await h.sleep_settled(600)
    await h.until(lambda: h.last_ready()["status"] == "True", "created after the claim went out again")
    return str(wf.id)


SCENARIOS["Domain-late-answer"] = domain_late_answer


async def domain_late_answer_wakes(h: Harness, _: str) -> str:
    """A Domain whose first claim reaches its object minutes late: no retry in between, the answer wakes it
    and answers the pass (patch keystone-late-answer-wakes)."""
    h.cloud.hold_claims = 1
    wf = await h.apply("Domain", {"name": "d"}, name="d", uid="replay-late-wakes")
    await eventually(lambda: len(h.cloud.held) == 1, "the first claim")
    await h.sleep_settled(61)
    await eventually(lambda: bool(h.cloud.statuses), "the late answer reported")
    await h.sleep_settled(130)
    await h.deliver_held()
    await h.until(lambda: h.last_ready()["status"] == "True", "Ready from the late answer")
    return str(wf.id)


SCENARIOS["Domain-late-answer-wakes"] = domain_late_answer_wakes


async def keystone_object_rolls(h: Harness, _: str) -> str:
    """The domain's object taking only registered watches until its run is long: it continues as new
    between steps (patch keystone-object-rolls-without-step; the limit lowered to 30 events)."""
    h.cloud.add("domain", name="service", enabled=True)
    first = await h.apply("Project", {"name": "p1", "domain": "service"}, name="p1", uid="replay-roll")
    await eventually(lambda: bool(h.written.get(first.id)), "the first project reconciled")
    domain = h.env.client.get_workflow_handle(
        ObjectKey(kind="domain", name="service").workflow_id(h.keystone, h.queue)
    )
    run_id = (await domain.describe()).run_id
    known = await _memo(domain)
    limit, own.MAX_HISTORY_PER_RUN = own.MAX_HISTORY_PER_RUN, 30
    try:
        for i in range(30):
            watch = Watch(
                keystone=h.keystone,
                watcher=f"dependent-{i}",
                key=ObjectKey(kind="domain", name="service"),
                known_id=known,
            )
            await domain.signal(own.SIGNAL_WATCH, watch)
        await eventually(lambda: _rolled(domain, run_id), "continued as new")
    finally:
        own.MAX_HISTORY_PER_RUN = limit
    return f"{domain.id}@{run_id}"


async def _memo(handle: Any) -> str | None:
    return await (await handle.describe()).memo_value(own.MEMO_ID, None, type_hint=str)  # type: ignore[no-any-return]


async def _rolled(handle: Any, run_id: str) -> bool:
    return bool((await handle.describe()).run_id != run_id)


async def keystone_object_step_retried(h: Harness, _: str) -> str:
    """A project's object whose watch is refused after its retries: the step is taken again a minute
    later (patch keystone-object-step-retried), and the project becomes Ready."""
    h.cloud.add("domain", name="service", enabled=True)
    first = await h.apply("Project", {"name": "p1", "domain": "service"}, name="p1", uid="replay-r1")
    await eventually(lambda: bool(h.written.get(first.id)), "the first project reconciled")
    h.cloud.fail_watches = 5
    second = await h.apply("Project", {"name": "p2", "domain": "service"}, name="p2", uid="replay-r2")
    await eventually(lambda: h.cloud.fail_watches == 0, "the refused watch")
    await h.until(lambda: bool(h.written.get(second.id)), "p2 reconciled", virtual_s=200)
    await h.until(
        lambda: h.written[second.id]["conditions"][0]["status"] == "True", "p2 Ready", virtual_s=200
    )
    return ObjectKey(kind="project", domain="service", name="p2").workflow_id(h.keystone, h.queue)


SCENARIOS["KeystoneObject-rolls-without-step"] = keystone_object_rolls
SCENARIOS["KeystoneObject-step-retried"] = keystone_object_step_retried


async def domain_early_answer(h: Harness, _: str) -> str:
    """A Domain whose object's answer arrived in its first workflow task, before its state existed, and
    whose claim sent then gets no answer: the early answer answers the pass (keystone-early-answers-kept)."""
    queue = f"{h.queue}-later"
    handle = await h.apply("Domain", {"name": "early"}, name="early", uid="replay-early", queue=queue)
    dom = h.cloud.add("domain", name="early", enabled=True)
    key = ObjectKey(kind="domain", name="early")
    answer = ObjectResult(key=key, seq=1, outcome="adopted", message="adopted", id=dom.id, origin="found")
    await handle.signal(own.SIGNAL_OBJECT_RESULT, answer)
    h.cloud.lose_claims = 1
    async with Worker(h.env.client, task_queue=queue, workflows=WORKFLOWS, activities=h.cloud.activities()):
        await eventually(lambda: bool(h.cloud.statuses), "the first status")
        await handle.terminate("recorded")
    return handle.id


SCENARIOS["Domain-early-answer"] = domain_early_answer


async def endpoint_answered_again(h: Harness, _: str) -> str:
    """An Endpoint applied before its service: its objects answer "waiting", then, once a Service made the
    service, answer the same claims again, and those answers make it Ready with no second claim (patch
    keystone-answered-again); then deleted."""
    spec = SPECS["Endpoint"] | {"deletionPolicy": "delete"}
    wf = await h.apply("Endpoint", spec, name="replay", uid="replay-answered-again", finalizers=[FINALIZER])
    await eventually(lambda: bool(h.cloud.statuses), "the Endpoint waiting for its service")
    await h.apply("Service", {"name": "cinderv3", "type": "volumev3"}, name="svc", uid="replay-svc")
    await eventually(lambda: bool(h.cloud.of("endpoint")) and h.last_ready()["status"] == "True", "Ready")
    await h.signal(wf, 1, spec, deleting=True, finalizers=[FINALIZER])
    await wf.result()
    return str(wf.id)


SCENARIOS["Endpoint-answered-again"] = endpoint_answered_again


async def keystone_object_absent_awaits_claim(h: Harness, _: str) -> str:
    """A service's object started by its endpoint's watch, before the Service's claim: found absent, it
    waits for the claim instead of telling the endpoint "absent", then makes the service and tells it
    (patch keystone-absent-awaits-claim)."""
    h.cloud.hold_claims = 1
    await h.apply("Service", {"name": "cinderv3", "type": "volumev3"}, name="svc", uid="replay-svc")
    await eventually(lambda: len(h.cloud.held) == 1, "the Service's claim, held")
    await h.apply("Endpoint", SPECS["Endpoint"], name="replay", uid="replay-absent-awaits-claim")
    await eventually(lambda: any(f.kind == "service" for f in h.cloud.finds), "the service looked up")
    await h.deliver_held()
    await eventually(lambda: bool(h.cloud.of("endpoint")) and h.last_ready()["status"] == "True", "Ready")
    return ObjectKey(kind="service", name="cinderv3", type="volumev3").workflow_id(h.keystone, h.queue)


SCENARIOS["KeystoneObject-absent-awaits-claim"] = keystone_object_absent_awaits_claim
