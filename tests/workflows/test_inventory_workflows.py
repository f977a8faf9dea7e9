"""The inventory workflows, and the Volume and Server checks against the inventory, on the time-skipping
server with stubbed activities: what runs publish, change and withdraw; that a refused Volume or Server makes
no cloud call at all."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from osprov.api import cinder_io
from osprov.api import inventory_io as io
from osprov.workflows.all import WORKFLOWS
from tests.workflows.fakes import FakeCloud
from tests.workflows.fakes_cinder import CinderHarness, cinder_harness
from tests.workflows.fakes_inventory import InventoryHarness, inventory_harness
from tests.workflows.fakes_nova import FakeNova
from tests.workflows.history import current_run
from tests.workflows.test_server_workflow import ServerHarness
from tests.workflows.test_server_workflow import spec as server_spec


@pytest_asyncio.fixture
async def inv(tenv: WorkflowEnvironment) -> AsyncIterator[InventoryHarness]:
    async for x in inventory_harness(tenv):
        yield x


def flavor(fid: str, name: str, **extra: Any) -> io.NovaFlavor:
    return io.NovaFlavor(id=fid, name=name, vcpus=1, ram_mib=512, disk_gib=1, is_public=True, **extra)


async def test_flavor_runs_publish_change_and_withdraw(inv: InventoryHarness) -> None:
    region = inv.region
    region.flavors = [flavor("1", "m1.tiny"), flavor("2", "m1.small")]
    first = await inv.run("Flavor")
    assert first.created == ["m1.small", "m1.tiny"] and first.offered == ["m1.small", "m1.tiny"]
    assert region.objects("flavors")["m1.tiny"]["architecture"] == "x86_64"

    again = await inv.run("Flavor")  # nothing changed: no write
    assert (again.created, again.replaced, again.deleted) == ([], [], [])
    assert region.count(io.PUBLISH.name) == 2

    region.configure({"defaultArchitecture": "aarch64"})
    region.flavors = [flavor("1", "m1.tiny"), flavor("3", "g1.large")]
    third = await inv.run("Flavor")
    assert (third.created, third.replaced, third.deleted) == (["g1.large"], ["m1.tiny"], ["m1.small"])
    assert set(region.objects("flavors")) == {"m1.tiny", "g1.large"}
    assert {s["architecture"] for s in region.objects("flavors").values()} == {"aarch64"}


async def test_another_inventorys_objects_are_never_touched(inv: InventoryHarness) -> None:
    inv.region.flavors = [flavor("1", "m1.tiny")]
    await inv.run("Flavor", config="region-b")
    inv.region.flavors = []
    report = await inv.run("Flavor")  # region-a's run: region-b's m1.tiny is not its to withdraw
    assert report.deleted == [] and "m1.tiny" in inv.region.objects("flavors")


async def test_volume_classes_fail_closed_without_asking_cinder(inv: InventoryHarness) -> None:
    region = inv.region
    region.types = [io.CinderType(id="t-1", name="fast")]
    region.configure({"volumeClasses": {"selector": {"ids": ["t-1"]}}})
    assert (await inv.run("VolumeClass")).created == ["fast"]
    region.configure({"volumeClasses": {"selector": {"ids": []}}})  # emptied: everything goes
    calls = region.count(io.LIST_VOLUME_TYPES.name)
    report = await inv.run("VolumeClass")
    assert report.deleted == ["fast"] and region.objects("volumeclasses") == {}
    assert region.count(io.LIST_VOLUME_TYPES.name) == calls and not report.cloud_listed


async def test_a_tampered_image_is_withdrawn(inv: InventoryHarness) -> None:
    region = inv.region
    good = io.GlanceImage(id="img-1", name="ubuntu", status="active", visibility="public", signature="valid")
    region.images = [good]
    assert (await inv.run("Image")).created == ["img-1"]
    region.images = [good.model_copy(update={"signature": "invalid"})]
    report = await inv.run("Image")
    assert report.deleted == ["img-1"] and region.objects("images") == {}
    assert report.left_out == [
        "image ubuntu (img-1): its signature does not verify against the image signing key"
    ]


# --- the Volume's check (C0) ---------------------------------------------------------------------------------
@pytest_asyncio.fixture
async def vh(tenv: WorkflowEnvironment) -> AsyncIterator[CinderHarness]:
    async for hs in cinder_harness(tenv):
        hs.cloud.offer = io.Offer(
            enabled=True,
            volume_classes=[
                io.OfferedVolumeClass(
                    name="fast", volume_type_id="t-fast", min_capacity_gib=1, max_capacity_gib=10
                )
            ],
        )
        yield hs


def volume(**extra: Any) -> dict[str, Any]:
    return {"project": {"name": "p", "domain": "Default"}, "size": 2, **extra}


async def activity_types(h: Any, handle: Any) -> list[str]:
    history = await current_run(h.env.client, handle.id)
    return [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]


def available(h: Any, wf: Any) -> dict[str, Any]:
    status = h.written.get(wf.id) or {}
    return next((c for c in status.get("conditions", []) if c["type"] == "Available"), {})


async def test_C0_a_class_outside_the_offer_is_refused_before_any_cinder_call(vh: CinderHarness) -> None:
    vh.cinder.add_project()
    cases = (
        ("gold", volume(volumeClass="gold"), "is not a VolumeClass this region offers (offered: fast;"),
        ("huge", volume(volumeClass="fast", size=11), "outside VolumeClass 'fast''s bounds (1–10 GiB)"),
        ("legacy", volume(volumeClassID="t-other"), "spec.volumeClassID 't-other' is not a VolumeClass"),
    )
    for name, spec, message in cases:
        wf = await vh.apply("Volume", spec, name=name)

        def errored(wf: Any = wf) -> bool:
            return available(vh, wf).get("reason") == "Errored"

        await vh.until(errored, f"{name} refused")
        assert message in available(vh, wf)["message"]
        assert vh.cinder.calls == [], f"{name}: Cinder was called"
        assert not [t for t in await activity_types(vh, wf) if t.startswith("cinder.")]


async def test_C0_an_offered_class_creates_with_its_cinder_type(vh: CinderHarness) -> None:
    vh.cinder.add_project()
    await vh.apply("Volume", volume(volumeClass="fast"), name="ok")
    await vh.until(lambda: vh.condition().get("reason") == "Provisioned", "provisioned")
    [vol] = vh.cinder.volumes.values()
    assert vh.cinder.calls[0] == cinder_io.CREATE_VOLUME.name  # C3 at once: the create looks itself
    assert vh.cloud.count(io.OFFERED_VOLUME_CLASSES.name) == 1
    assert vh.cinder.created_types == ["t-fast"]
    assert vol.size == 2


# --- the Server's check ----------------------------------------------------------------------------------------
@pytest_asyncio.fixture
async def sh(tenv: WorkflowEnvironment) -> AsyncIterator[ServerHarness]:
    cloud, nova = FakeCloud(), FakeNova()
    cloud.offer, cloud.offered_images = io.Offer(enabled=True), {"img-a"}
    queue = f"q-{uuid.uuid4()}"
    activities = cloud.activities() + nova.activities()
    async with Worker(tenv.client, task_queue=queue, workflows=WORKFLOWS, activities=activities):
        hs = ServerHarness(tenv, cloud, queue)
        hs.nova = nova
        yield hs
        await hs.close()


async def test_an_image_not_offered_is_refused_before_any_nova_call(sh: ServerHarness) -> None:
    wf = await sh.apply("Server", server_spec("img-x"))
    await sh.until(lambda: sh.condition().get("reason") == "Errored", "refused")
    assert sh.nova.calls == []
    assert not [t for t in await activity_types(sh, wf) if t.startswith("nova.")]
    assert "spec.imageID 'img-x' is not an Image this region offers" in sh.condition()["message"]


async def test_a_rebuild_target_not_offered_is_refused_and_the_server_is_left_alone(
    sh: ServerHarness,
) -> None:
    finalizers = ["nova.osh.openstack.org/finalizer"]
    wf = await sh.apply("Server", server_spec("img-a"))
    await sh.until(lambda: sh.condition().get("status") == "True", "server available")
    calls = len(sh.nova.calls)
    await sh.signal(wf, 2, server_spec("img-x"), finalizers=finalizers)
    await sh.until(lambda: sh.condition().get("reason") == "Errored", "rebuild target refused")
    assert sh.nova.calls[calls:] == [] and sh.nova.accepted == []
    sh.cloud.offered_images.add("img-x")  # published later: the retry goes ahead
    await sh.until(lambda: sh.nova.accepted == ["img-x"], "rebuild accepted", virtual_s=600)
    assert sh.cloud.count(io.OFFERED_IMAGE.name) >= 3  # img-a once, img-x until it was offered
