"""An in-memory region (Nova flavors, Cinder types, Glance images, the InventoryConfig and the published
objects) for time-skipping inventory workflow tests, registered under the real activity names."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from temporalio import activity
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from osprov.activities import errors
from osprov.api import inventory_io as io
from osprov.api.inventory_config import InventoryConfigSpec
from osprov.workflows.all import WORKFLOWS
from osprov.workflows.inventory.workflow import INVENTORY_WORKFLOWS

CONFIG = "region-a"


@dataclass
class PublishedObject:
    uid: str
    label: str
    spec: dict[str, Any]


@dataclass
class FakeRegion:
    flavors: list[io.NovaFlavor] = field(default_factory=list)
    types: list[io.CinderType] = field(default_factory=list)
    images: list[io.GlanceImage] = field(default_factory=list)
    config: InventoryConfigSpec | None = None
    config_version: int = 1
    published: dict[str, dict[str, PublishedObject]] = field(default_factory=dict)  # plural -> name -> object
    calls: list[str] = field(default_factory=list)
    _uids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def configure(self, spec: dict[str, Any] | None) -> None:
        self.config = None if spec is None else InventoryConfigSpec.model_validate(spec)
        self.config_version += 1

    def objects(self, plural: str) -> dict[str, dict[str, Any]]:
        return {name: o.spec for name, o in self.published.get(plural, {}).items()}

    def count(self, name: str) -> int:
        return sum(1 for c in self.calls if c == name)

    def activities(self) -> list[Any]:
        region = self

        @activity.defn(name=io.READ_CONFIG.name)
        async def read_config(req: io.ConfigRef) -> io.ConfigRead:
            region.calls.append(io.READ_CONFIG.name)
            if region.config is None or req.name != CONFIG:
                return io.ConfigRead(found=False)
            return io.ConfigRead(found=True, resource_version=str(region.config_version), spec=region.config)

        @activity.defn(name=io.LIST_FLAVORS.name)
        async def list_flavors(_: io.ListFlavors) -> list[io.NovaFlavor]:
            region.calls.append(io.LIST_FLAVORS.name)
            return list(region.flavors)

        @activity.defn(name=io.LIST_VOLUME_TYPES.name)
        async def list_volume_types(_: io.ListVolumeTypes) -> io.VolumeTypes:
            region.calls.append(io.LIST_VOLUME_TYPES.name)
            return io.VolumeTypes(types=list(region.types), fetched=True)

        @activity.defn(name=io.LIST_IMAGES.name)
        async def list_images(_: io.ListImages) -> list[io.GlanceImage]:
            region.calls.append(io.LIST_IMAGES.name)
            return list(region.images)

        @activity.defn(name=io.LIST_PUBLISHED.name)
        async def list_published(req: io.PublishedQuery) -> list[io.Published]:
            region.calls.append(io.LIST_PUBLISHED.name)
            objects = region.published.get(req.plural, {})
            return [
                io.Published(name=n, uid=o.uid, spec=o.spec)
                for n, o in sorted(objects.items())
                if o.label == req.inventory
            ]

        @activity.defn(name=io.PUBLISH.name)
        async def publish(req: io.Publish) -> io.WriteDone:
            region.calls.append(io.PUBLISH.name)
            objects = region.published.setdefault(req.plural, {})
            current = objects.get(req.name)
            if current is not None and current.label != req.inventory:
                raise errors.conflict(f"{req.name} is not ours")
            if current is not None and current.spec == req.spec:
                return io.WriteDone(changed=False)
            uid = current.uid if current else f"uid-{next(region._uids)}"
            objects[req.name] = PublishedObject(uid=uid, label=req.inventory, spec=req.spec)
            return io.WriteDone(changed=True)

        @activity.defn(name=io.UNPUBLISH.name)
        async def unpublish(req: io.Unpublish) -> io.WriteDone:
            region.calls.append(io.UNPUBLISH.name)
            objects = region.published.get(req.plural, {})
            if req.name in objects and objects[req.name].uid == req.uid:
                del objects[req.name]
                return io.WriteDone(changed=True)
            return io.WriteDone(changed=False)

        return [read_config, list_flavors, list_volume_types, list_images, list_published, publish, unpublish]


class InventoryHarness:
    def __init__(self, env: WorkflowEnvironment, region: FakeRegion, queue: str) -> None:
        self.env, self.region, self.queue = env, region, queue

    async def run(self, kind: str, config: str = CONFIG) -> io.InventoryReport:
        handle: WorkflowHandle[Any, io.InventoryReport] = await self.env.client.start_workflow(
            INVENTORY_WORKFLOWS[kind].run,  # type: ignore[attr-defined]
            io.InventoryRun(config=config),
            id=f"osprov-inventory/{kind}/{self.queue}-{uuid.uuid4().hex[:6]}",
            task_queue=self.queue,
        )
        return await handle.result()


async def inventory_harness(env: WorkflowEnvironment) -> AsyncIterator[InventoryHarness]:
    region = FakeRegion()
    queue = f"q-{uuid.uuid4()}"
    async with Worker(env.client, task_queue=queue, workflows=WORKFLOWS, activities=region.activities()):
        yield InventoryHarness(env, region, queue)


async def replay_scenario(h: Any, kind: str) -> str:
    """tests/replay scenario for an inventory workflow: one run that creates, replaces and withdraws."""
    region = FakeRegion()
    region.configure(
        {
            "defaultArchitecture": "aarch64",
            "volumeClasses": {
                "selector": {"ids": ["t-1", "t-2"]},
                "classes": [{"id": "t-1", "maxCapacityGiB": 9}],
            },
            "images": {"signingPublicKey": "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"},
        }
    )
    region.flavors = [
        io.NovaFlavor(id=f"f{i}", name=f"m1.f{i}", vcpus=1, ram_mib=512, disk_gib=1, is_public=True)
        for i in (1, 2)
    ]
    region.types = [io.CinderType(id="t-1", name="fast"), io.CinderType(id="t-2", name="slow")]
    region.images = [
        io.GlanceImage(
            id=f"img-{i}", name=f"image-{i}", status="active", visibility="public", signature="valid"
        )
        for i in (1, 2)
    ]
    plural = {"Flavor": "flavors", "VolumeClass": "volumeclasses", "Image": "images"}[kind]
    first = {"Flavor": "m1.f1", "VolumeClass": "fast", "Image": "img-1"}[kind]
    region.published[plural] = {
        first: PublishedObject(uid="uid-old", label=CONFIG, spec={"stale": True}),
        "withdrawn": PublishedObject(uid="uid-gone", label=CONFIG, spec={"gone": True}),
    }
    queue = f"{h.queue}-inventory"
    async with Worker(h.env.client, task_queue=queue, workflows=WORKFLOWS, activities=region.activities()):
        handle = await h.env.client.start_workflow(
            INVENTORY_WORKFLOWS[kind].run,  # type: ignore[attr-defined]
            io.InventoryRun(config=CONFIG),
            id=f"osprov-inventory/{kind}/replay",
            task_queue=queue,
        )
        report = await handle.result()
    assert report.created and report.replaced == [first] and report.deleted == ["withdrawn"], report
    return str(handle.id)
