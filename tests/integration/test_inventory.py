"""The region inventory end to end on the local stack: real Nova, Cinder and Glance, a real Temporal Schedule,
the worker publishing Flavors, VolumeClasses and Images into the kube emulator, read back with kubectl.

The module's worker and bridge talk to a private apiserver (its audit log proves deploy/rbac.yaml's inventory
grants both ways) holding the stack's InventoryConfig (devenv/openstack/inventory.py) under deploy/'s name;
the Schedules run every 3 s: every "shows up" is waited on, with a deadline of a few periods, never slept
for. Cloud objects a test adds are removed at its end.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import kubernetes
import openstack.connection
import pytest
import yaml
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from devenv.kube.testing import RunningEmulator
from devenv.openstack import inventory as stack_inventory
from devenv.testing import StackEnv
from osprov.api.cinder_io import volume_name
from osprov.api.region import INVENTORY_LABEL, REGION_GROUP, REGION_VERSION
from osprov.worker.schedules import schedule_id
from tests.deploy import rbac
from tests.support.osprov import REPO, Osprov, run_osprov
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.stack, pytest.mark.fullstack]

PERIOD_S = 3
WITHIN = 20 * PERIOD_S  # a few periods, on a busy 2-core machine
KUBECTL = str(Path(sys.executable).parent / "kubectl")
CONTROLLER_USER = "admin"
CONFIG = str(yaml.safe_load((REPO / "deploy" / "config.yaml").read_text())["data"]["OSPROV_INVENTORY_CONFIG"])


def stack_config(name: str) -> dict[str, Any]:
    body: dict[str, Any] = yaml.safe_load(stack_inventory.manifest_path().read_text())
    body["metadata"] = {"name": name}
    return body


@pytest.fixture(scope="module")
def stack(full_stack: StackEnv, emulator: RunningEmulator) -> StackEnv:
    """The full stack's clouds and Temporal, this module's apiserver."""
    kubeconfig = Path(emulator.kubeconfig)
    return replace(full_stack, kubeconfig=kubeconfig, env=full_stack.env | {"KUBECONFIG": str(kubeconfig)})


@pytest.fixture(scope="module")
def config_name(stack: StackEnv) -> str:
    """The stack's InventoryConfig under the name deploy/ configures (and deploy/rbac.yaml's resourceNames
    grants): the apiserver is this module's own, so nothing else reads or publishes for it."""
    api = kubernetes.config.new_client_from_config(config_file=str(stack.kubeconfig))
    custom = kubernetes.client.CustomObjectsApi(api)
    custom.create_cluster_custom_object(
        REGION_GROUP, REGION_VERSION, "inventoryconfigs", stack_config(CONFIG)
    )
    return CONFIG


@pytest.fixture(scope="module")
def osprov(stack: StackEnv, config_name: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Osprov]:
    env = {"OSPROV_INVENTORY_CONFIG": config_name, "OSPROV_INVENTORY_INTERVAL_SECONDS": str(PERIOD_S)}
    for o in run_osprov(stack, tmp_path_factory.mktemp("inventory"), extra_env=env):
        try:
            yield o
        finally:
            asyncio.run(_drop_schedules(stack, f"osprov-{o.namespace}"))


async def _client(stack: StackEnv) -> Client:
    return await Client.connect(stack.temporal_address, namespace=stack.temporal_namespace)


async def _drop_schedules(stack: StackEnv, task_queue: str) -> None:
    client = await _client(stack)
    for kind in ("Flavor", "VolumeClass", "Image"):
        await client.get_schedule_handle(schedule_id(kind, task_queue)).delete()
    query = f"TaskQueue = '{task_queue}' AND ExecutionStatus = 'Running'"
    async for wf in client.list_workflows(query):
        try:
            await client.get_workflow_handle(wf.id, run_id=wf.run_id).terminate("test module finished")
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:  # a run that completed since it was listed
                raise


# --- reading what is published ------------------------------------------------------------------------------
def kubectl(stack: StackEnv, *args: str) -> str:
    cache = str(stack.kubeconfig.parent / "kubectl-cache")  # discovery is cached per host:port (emulator)
    env = {**os.environ, "KUBECONFIG": str(stack.kubeconfig), "KUBECACHEDIR": cache}
    done = subprocess.run([KUBECTL, *args], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
    return done.stdout


def published(osprov: Osprov, config: str) -> dict[str, dict[str, dict[str, Any]]]:
    """kind -> name -> spec, as `kubectl get flavors,volumeclasses,images` lists them (this inventory's)."""
    listed = json.loads(
        kubectl(
            osprov.stack,
            "get",
            "flavors,volumeclasses,images",
            "-l",
            f"{INVENTORY_LABEL}={config}",
            "-o",
            "json",
        )
    )
    found: dict[str, dict[str, dict[str, Any]]] = {"Flavor": {}, "VolumeClass": {}, "Image": {}}
    for item in listed["items"]:
        found[item["kind"]][item["metadata"]["name"]] = item["spec"]
    return found


def public_flavors(admin: openstack.connection.Connection) -> set[str]:
    return {f.id for f in admin.compute.flavors(details=True) if f.is_public and not f.is_disabled}


def public_images(admin: openstack.connection.Connection) -> set[str]:
    return {i.id for i in admin.image.images(visibility="public") if i.status == "active"}


def type_id(admin: openstack.connection.Connection, name: str) -> str:
    return str(admin.block_storage.find_type(name, ignore_missing=False).id)


def settled(osprov: Osprov, config: str, check: Any, what: str) -> dict[str, dict[str, dict[str, Any]]]:
    def once() -> dict[str, dict[str, dict[str, Any]]] | None:
        found = published(osprov, config)
        return found if check(found) else None

    return wait_for(once, what, WITHIN)


def test_kubectl_lists_exactly_what_the_configuration_allows_with_enrichment(
    osprov: Osprov, config_name: str, admin: openstack.connection.Connection
) -> None:
    flavors, images = public_flavors(admin), public_images(admin)
    got = settled(
        osprov,
        config_name,
        lambda p: (
            {s["id"] for s in p["Flavor"].values()} == flavors
            and set(p["Image"]) == images
            and set(p["VolumeClass"]) == {"ssd", "standard"}
        ),
        "every public flavor and image, and the two allowed volume classes",
    )
    # Flavors: discovered, enriched by the configuration.
    assert got["Flavor"]["a1.small"]["architecture"] == "aarch64"  # its cpu.architecture extra spec
    assert got["Flavor"]["m1.tiny"]["architecture"] == "x86_64"  # the configured default
    assert got["Flavor"]["bm.gold"]["baremetal"] is True and got["Flavor"]["m1.small"]["baremetal"] is False
    assert got["Flavor"]["g1.large"]["gpu"] == {
        "vendor": "NVIDIA",
        "model": "A100",
        "count": 1,
        "memoryGiB": 80,
    }
    # Volume classes: only the allow-list, enriched.
    ssd = got["VolumeClass"]["ssd"]
    assert (
        ssd["volumeTypeID"] == type_id(admin, stack_inventory.SSD_TYPE) and ssd["volumeType"] == "osprov-ssd"
    )
    assert (ssd["minCapacityGiB"], ssd["maxCapacityGiB"], ssd["media"], ssd["encrypted"]) == (
        1,
        5,
        "ssd",
        True,
    )
    assert ssd["supportedFlavors"] == ["osprov-gpu", "osprov-arm"]
    assert ssd["performance"] == {"maxIOPS": 5000, "maxThroughputMiBps": 250}
    assert "supportedFlavors" not in got["VolumeClass"]["standard"]  # unrestricted
    # Images: translated properties; the signed one verified.
    signed = next(s for s in got["Image"].values() if s["name"] == stack_inventory.SIGNED_IMAGE)
    assert signed["verified"] is True and signed["architecture"] == "aarch64"
    assert signed["os"] == {"kernel": "linux", "family": "redhat", "distro": "rocky", "version": "9.4"}
    assert signed["gpu"] == {"vendor": "NVIDIA", "driver": "550.90", "models": ["A100"]}
    ubuntu = next(s for s in got["Image"].values() if s["name"] == stack_inventory.UBUNTU_IMAGE)
    assert ubuntu["verified"] is False and ubuntu["packages"] == {"kubernetes": "v1.31.2"}
    assert ubuntu["virtualization"] == "virtualized"
    # What a person scans.
    table = kubectl(osprov.stack, "get", "flavors", "-l", f"{INVENTORY_LABEL}={config_name}")
    header, *rows = table.splitlines()
    assert header.split() == [
        "NAME",
        "NOVA-NAME",
        "ARCH",
        "VCPUS",
        "RAM-MIB",
        "DISK-GIB",
        "BAREMETAL",
        "GPU",
        "GPUS",
        "AGE",
    ]
    assert any(r.split()[:4] == ["g1.large", "g1.large", "x86_64", "4"] and "A100" in r for r in rows), table
    classes = kubectl(osprov.stack, "get", "volumeclasses", "ssd")
    assert classes.splitlines()[1].split()[:6] == ["ssd", "osprov-ssd", "1", "5", "ssd", "true"]


async def _reports(stack: StackEnv, workflow_type: str, task_queue: str) -> list[dict[str, Any]]:
    """The results of this module's completed runs of an inventory workflow, oldest first."""
    client = await _client(stack)
    query = (
        f"WorkflowType = '{workflow_type}' AND TaskQueue = '{task_queue}' AND ExecutionStatus = 'Completed'"
    )
    runs = [wf async for wf in client.list_workflows(query)]
    results = []
    for wf in sorted(runs, key=lambda w: w.start_time):
        results.append(await client.get_workflow_handle(wf.id, run_id=wf.run_id).result())
    return results


def cinder_type_lists(stack: StackEnv, project_id: str) -> int:
    """Cinder's own record of volume type lists asked in the admin project (its API log)."""
    log = (stack.state_dir / "logs" / "cinder-api.log").read_text(errors="replace")
    return log.count(f'"GET /v3/{project_id}/types?is_public=None HTTP/1.1"')


def patch_config(osprov: Osprov, name: str, spec: dict[str, Any]) -> None:
    kubernetes.client.CustomObjectsApi(osprov.kube).patch_cluster_custom_object(
        REGION_GROUP, REGION_VERSION, "inventoryconfigs", name, {"spec": spec}
    )


def test_allow_list_changes_show_up_and_cinder_is_listed_only_when_the_configuration_changes(
    osprov: Osprov, config_name: str, admin: openstack.connection.Connection
) -> None:
    settled(osprov, config_name, lambda p: set(p["VolumeClass"]) == {"ssd", "standard"}, "both classes")
    project_id = str(admin.current_project_id)
    queue = f"osprov-{osprov.namespace}"
    before = cinder_type_lists(osprov.stack, project_id)
    runs = len(asyncio.run(_reports(osprov.stack, "VolumeClassInventory", queue)))
    wait_for(
        lambda: len(asyncio.run(_reports(osprov.stack, "VolumeClassInventory", queue))) >= runs + 1,
        "another run of the VolumeClass inventory",
        WITHIN,
    )
    assert cinder_type_lists(osprov.stack, project_id) == before  # served from the worker's cache
    assert not any(
        r["cloud_listed"] for r in asyncio.run(_reports(osprov.stack, "VolumeClassInventory", queue))[runs:]
    )

    ssd, default = type_id(admin, stack_inventory.SSD_TYPE), type_id(admin, "__DEFAULT__")
    original = stack_config(config_name)["spec"]["volumeClasses"]
    try:
        patch_config(osprov, config_name, {"volumeClasses": {"selector": {"ids": [ssd, default]}}})
        got = settled(
            osprov,
            config_name,
            lambda p: set(p["VolumeClass"]) == {"ssd", "default"},
            "the new allow-list",
        )
        assert got["VolumeClass"]["default"]["volumeTypeID"] == default
        assert cinder_type_lists(osprov.stack, project_id) > before  # the configuration changed: asked again
        patch_config(osprov, config_name, {"volumeClasses": {"selector": {"ids": []}}})
        settled(
            osprov,
            config_name,
            lambda p: p["VolumeClass"] == {},
            "nothing: an empty allow-list (fail closed)",
        )
    finally:  # the tests that need both classes wait for them themselves
        patch_config(osprov, config_name, {"volumeClasses": original})


def test_a_flavor_and_an_image_added_in_openstack_show_up(
    osprov: Osprov, config_name: str, admin: openstack.connection.Connection
) -> None:
    suffix = uuid.uuid4().hex[:6]
    flavor = admin.compute.create_flavor(
        name=f"t1.{suffix}", ram=256, vcpus=1, disk=1, id=f"osprov-t-{suffix}"
    )
    image = None
    try:
        admin.compute.create_flavor_extra_specs(flavor, {"cpu.architecture": "riscv64"})
        props = {"architecture": "s390x", "os_distro": "debian", "osprov:tag:added": "by-test"}
        image_api: Any = admin.image  # properties as keyword arguments: the SDK's stubs do not type them
        image = image_api.create_image(
            f"osprov-t-{suffix}",
            data=b"\x07" * 4096,
            disk_format="raw",
            container_format="bare",
            visibility="public",
            wait=True,
            **props,
        )
        got = settled(
            osprov,
            config_name,
            lambda p: f"t1.{suffix}" in p["Flavor"] and image.id in p["Image"],
            "the new flavor and image",
        )
        assert got["Flavor"][f"t1.{suffix}"]["architecture"] == "riscv64"
        assert got["Image"][image.id]["architecture"] == "s390x" and got["Image"][image.id]["tags"] == {
            "added": "by-test"
        }
    finally:
        admin.compute.delete_flavor(flavor)
        if image is not None:
            admin.image.delete_image(image)
    settled(
        osprov,
        config_name,
        lambda p: f"t1.{suffix}" not in p["Flavor"] and (image is None or image.id not in p["Image"]),
        "both withdrawn once deleted in OpenStack",
    )


def activity_types(stack: StackEnv, workflow_id: str) -> list[str]:
    async def read() -> list[str]:
        history = await (await _client(stack)).get_workflow_handle(workflow_id).fetch_history()
        return [
            e.activity_task_scheduled_event_attributes.activity_type.name
            for e in history.events
            if e.HasField("activity_task_scheduled_event_attributes")
        ]

    return asyncio.run(read())


def workflow_id(osprov: Osprov, kind: str, name: str) -> str:
    obj = osprov.get(kind, name)
    assert obj is not None
    return f"{kind}/{osprov.namespace}/{name}/{obj['metadata']['uid']}"


def refused(osprov: Osprov, kind: str, name: str, fragment: str) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        c = osprov.condition(kind, name, "Available")
        return c if c and c["reason"] == "Errored" and fragment in c["message"] else None

    return wait_for(check, f"{kind} {name} refused ({fragment})", 60)


def set_property(admin: openstack.connection.Connection, image_id: str, key: str, value: str) -> None:
    """One property through Glance's JSON patch (the SDK's update_image also resends read-only fields: 409)."""
    patch = [{"op": "add", "path": f"/{key}", "value": value}]  # add replaces an existing property
    headers = {"Content-Type": "application/openstack-images-v2.1-json-patch"}
    admin.image.patch(f"/images/{image_id}", json=patch, headers=headers).raise_for_status()


def test_a_tampered_image_signature_is_refused(
    osprov: Osprov, config_name: str, admin: openstack.connection.Connection
) -> None:
    suffix = uuid.uuid4().hex[:6]
    image = admin.image.create_image(
        f"osprov-signed-{suffix}",
        data=b"\x09" * 4096,
        disk_format="raw",
        container_format="bare",
        visibility="public",
        wait=True,
    )
    try:
        image = admin.image.get_image(image.id)
        good = stack_inventory.sign(image.hash_algo, image.hash_value)
        set_property(admin, image.id, "osprov:signature", good)
        got = settled(osprov, config_name, lambda p: image.id in p["Image"], "the signed image offered")
        assert got["Image"][image.id]["verified"] is True
        # Tampered: the signature of another image's digest (a valid signature, of the wrong data).
        other = stack_inventory.sign(image.hash_algo, "0" * len(image.hash_value))
        set_property(admin, image.id, "osprov:signature", other)
        settled(osprov, config_name, lambda p: image.id not in p["Image"], "the tampered image withdrawn")
        # A Server asking for it is refused before any Nova call.
        project = {"name": "no-such-project", "domain": "Default"}
        osprov.apply("Server", "tampered", {"project": project, "flavor": "m1.tiny", "imageID": image.id})
        refused(osprov, "Server", "tampered", f"spec.imageID '{image.id}' is not an Image this region offers")
        assert not [
            t
            for t in activity_types(osprov.stack, workflow_id(osprov, "Server", "tampered"))
            if t.startswith("nova.")
        ]
        uid = osprov.get("Server", "tampered")["metadata"]["uid"]  # type: ignore[index]
        assert list(admin.compute.servers(all_projects=True, name=f"server-{uid}")) == []
    finally:
        admin.image.delete_image(image.id)


@pytest.fixture(scope="module")
def project(admin: openstack.connection.Connection) -> Iterator[str]:
    identity: Any = admin.identity
    proj = identity.create_project(name=f"inv-{uuid.uuid4().hex[:8]}", domain_id="default")
    user = identity.find_user(CONTROLLER_USER, domain_id="default", ignore_missing=False)
    identity.assign_project_role_to_user(proj.id, user, identity.find_role("member", ignore_missing=False))
    yield str(proj.name)
    for vol in admin.block_storage.volumes(all_projects=True, project_id=proj.id):
        admin.block_storage.delete_volume(vol.id, ignore_missing=True)


def cinder_saw(stack: StackEnv, name: str) -> bool:
    """Whether Cinder's API log records any request naming the volume."""
    return name in (stack.state_dir / "logs" / "cinder-api.log").read_text(errors="replace")


def test_a_volume_outside_the_allow_list_or_bounds_is_refused_before_any_cinder_call(
    osprov: Osprov, config_name: str, admin: openstack.connection.Connection, project: str
) -> None:
    settled(osprov, config_name, lambda p: set(p["VolumeClass"]) == {"ssd", "standard"}, "both classes")
    spec = {"project": {"name": project, "domain": "Default"}, "deletionPolicy": "delete"}
    default = type_id(admin, "__DEFAULT__")
    cases = {
        "gold": (
            {"volumeClass": "gold", "size": 1},
            "spec.volumeClass 'gold' is not a VolumeClass this region offers",
        ),
        "too-big": (
            {"volumeClass": "ssd", "size": 6},
            "spec.size 6 GiB is outside VolumeClass 'ssd''s bounds (1–5 GiB)",
        ),
        "raw-type": (
            {"volumeClassID": default, "size": 1},
            f"spec.volumeClassID '{default}' is not a VolumeClass",
        ),
    }
    for name, (extra, _) in cases.items():
        osprov.apply("Volume", name, spec | extra)
    osprov.apply("Volume", "fits", spec | {"volumeClass": "ssd", "size": 5})
    for name, (_, message) in cases.items():
        refused(osprov, "Volume", name, message)
        uid = osprov.get("Volume", name)["metadata"]["uid"]  # type: ignore[index]
        assert not [
            t
            for t in activity_types(osprov.stack, workflow_id(osprov, "Volume", name))
            if t.startswith("cinder.")
        ]
        assert not cinder_saw(osprov.stack, volume_name(uid)), f"{name}: Cinder was asked about it"
    obj = osprov.wait_ready("Volume", "fits", ctype="Available", timeout_s=90)
    vol = admin.block_storage.get_volume(obj["status"]["volumeID"])
    assert vol.volume_type == stack_inventory.SSD_TYPE and vol.size == 5
    for name in [*cases, "fits"]:
        osprov.delete("Volume", name)


def test_the_schedules_are_in_temporal_and_a_restarted_worker_updates_them(
    osprov: Osprov, config_name: str
) -> None:
    queue = f"osprov-{osprov.namespace}"

    async def describe() -> dict[str, Any]:
        client = await _client(osprov.stack)
        found = {}
        for kind in ("Flavor", "VolumeClass", "Image"):
            d = await client.get_schedule_handle(schedule_id(kind, queue)).describe()
            found[kind] = d
        return found

    before = asyncio.run(describe())
    assert {
        k: d.schedule.spec.intervals[0].every.total_seconds() for k, d in before.items()
    } == dict.fromkeys(before, PERIOD_S)
    assert all(d.info.num_actions > 1 for d in before.values())
    osprov.worker.restart()  # the same settings: the Schedules are updated in place, not duplicated
    wait_for(
        lambda: all(
            d.info.num_actions > before[k].info.num_actions for k, d in asyncio.run(describe()).items()
        ),
        "every schedule keeps running after the worker restarted",
        WITHIN,
    )

    async def ours() -> list[str]:
        client = await _client(osprov.stack)
        return [s.id async for s in await client.list_schedules() if s.id.endswith(f"/{queue}")]

    assert sorted(asyncio.run(ours())) == sorted(
        schedule_id(k, queue) for k in ("Flavor", "VolumeClass", "Image")
    )


def test_every_inventory_call_is_granted_and_every_inventory_grant_is_used(
    osprov: Osprov, config_name: str, emulator: RunningEmulator
) -> None:
    """deploy/rbac.yaml against this module's audit log: no call of the worker or the bridge is denied, and
    every grant of the region inventory is used (tests/integration/test_rbac.py checks the others). This
    test makes its own replace and withdraw (one class narrowed and enriched, the other dropped), so it
    holds whatever order the module's tests run in."""
    original = stack_config(config_name)["spec"]["volumeClasses"]
    ssd = next(c for c in original["classes"] if c["name"] == "ssd")
    narrowed = {"selector": {"ids": [ssd["id"]]}, "classes": [ssd | {"media": "nvme"}]}
    try:
        patch_config(osprov, config_name, {"volumeClasses": narrowed})
        settled(
            osprov,
            config_name,
            lambda p: set(p["VolumeClass"]) == {"ssd"} and p["VolumeClass"]["ssd"]["media"] == "nvme",
            "ssd replaced and standard withdrawn",
        )
    finally:  # the tests that need both classes wait for them themselves
        patch_config(osprov, config_name, {"volumeClasses": original})
    lines = [json.loads(x) for x in emulator.audit.read_text().splitlines()]  # type: ignore[attr-defined]
    calls = [rbac.call_of(x) for x in lines if x["user_agent"].startswith("osprov-")]
    assert rbac.denied(calls) == []
    assert rbac.unused(calls, only=lambda g: g.inventory) == []
