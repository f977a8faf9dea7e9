"""The three inventory workflows: one run per schedule tick (worker/schedules.py) per inventory.

A run reads the operator's InventoryConfig, the cloud's list and what this inventory published before,
asks the pure export and plan (flavors.py, volume_classes.py, images.py, plan.py) what to change, and
makes each change with one Kubernetes call. Runs are short and independent: a failed or skipped run
changes nothing the next one relies on, and the Schedule never starts two at once (overlap: skip).
"""

from __future__ import annotations

from typing import ClassVar

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api import inventory_io as io
    from osprov.api.registry import INVENTORY, InventoryKindInfo
    from osprov.workflows.calls import call
    from osprov.workflows.inventory.flavors import flavor_export
    from osprov.workflows.inventory.images import image_export
    from osprov.workflows.inventory.plan import Export, plan
    from osprov.workflows.inventory.volume_classes import volume_class_export


class _Inventory:
    KIND: ClassVar[str]

    @property
    def info(self) -> InventoryKindInfo:
        return INVENTORY[self.KIND]

    def step(self, text: str) -> None:
        workflow.set_current_details(f"{self.KIND} inventory: {text}")

    async def listed(self, config: io.ConfigRead) -> tuple[Export, bool]:
        """The cloud's list as the objects to publish; bool: the cloud was asked (not the worker's cache)."""
        raise NotImplementedError

    async def sync(self, run: io.InventoryRun) -> io.InventoryReport:
        self.step(f"reading InventoryConfig {run.config}")
        config = await call(
            io.READ_CONFIG, io.ConfigRef(name=run.config), summary=f"read InventoryConfig {run.config}"
        )
        wanted, asked = await self.listed(config)
        plural = self.info.plural
        self.step(f"listing the published {plural}")
        published = await call(
            io.LIST_PUBLISHED,
            io.PublishedQuery(plural=plural, inventory=run.config),
            summary=f"list the {plural} this inventory published",
        )
        changes = plan(wanted, published)
        for name, spec in (*changes.create, *changes.replace):
            self.step(f"publishing {self.KIND} {name}")
            publish = io.Publish(plural=plural, kind=self.KIND, inventory=run.config, name=name, spec=spec)
            await call(io.PUBLISH, publish, summary=f"publish {self.KIND} {name}")
        for gone in changes.delete:
            self.step(f"withdrawing {self.KIND} {gone.name}")
            await call(
                io.UNPUBLISH,
                io.Unpublish(plural=plural, name=gone.name, uid=gone.uid),
                summary=f"withdraw {self.KIND} {gone.name}: the region no longer offers it",
            )
        if wanted.left_out:
            workflow.logger.warning("cloud objects left out", extra={"left_out": list(wanted.left_out)})
        self.step(f"{len(wanted.objects)} offered")
        return io.InventoryReport(
            kind=self.KIND,
            offered=list(wanted.objects),
            created=[n for n, _ in changes.create],
            replaced=[n for n, _ in changes.replace],
            deleted=[p.name for p in changes.delete],
            left_out=list(wanted.left_out),
            cloud_listed=asked,
        )


@workflow.defn(name="FlavorInventory")
class FlavorInventoryWorkflow(_Inventory):
    KIND = "Flavor"

    @workflow.run
    async def run(self, run: io.InventoryRun) -> io.InventoryReport:
        return await self.sync(run)

    async def listed(self, config: io.ConfigRead) -> tuple[Export, bool]:
        self.step("listing Nova flavors")
        flavors = await call(io.LIST_FLAVORS, io.ListFlavors(), summary="list Nova's flavors")
        return flavor_export(flavors, config.spec), True


@workflow.defn(name="VolumeClassInventory")
class VolumeClassInventoryWorkflow(_Inventory):
    KIND = "VolumeClass"

    @workflow.run
    async def run(self, run: io.InventoryRun) -> io.InventoryReport:
        return await self.sync(run)

    async def listed(self, config: io.ConfigRead) -> tuple[Export, bool]:
        if config.spec is None or not config.spec.allowed_volume_types():
            return volume_class_export([], config.spec), False  # fail closed: no Cinder call at all
        self.step("listing Cinder volume types")
        found = await call(
            io.LIST_VOLUME_TYPES,
            io.ListVolumeTypes(config_version=config.resource_version),
            summary="list Cinder's volume types (the worker's cache unless the configuration or the "
            "credentials changed)",
        )
        return volume_class_export(found.types, config.spec), found.fetched


@workflow.defn(name="ImageInventory")
class ImageInventoryWorkflow(_Inventory):
    KIND = "Image"

    @workflow.run
    async def run(self, run: io.InventoryRun) -> io.InventoryReport:
        return await self.sync(run)

    async def listed(self, config: io.ConfigRead) -> tuple[Export, bool]:
        self.step("listing Glance images")
        key = config.spec.images.signing_public_key if config.spec else None
        images = await call(
            io.LIST_IMAGES,
            io.ListImages(signing_public_key=key),
            summary="list Glance's public images and verify their signatures",
        )
        return image_export(images, config.spec), True


INVENTORY_WORKFLOWS: dict[str, type[_Inventory]] = {
    wf.KIND: wf for wf in (FlavorInventoryWorkflow, VolumeClassInventoryWorkflow, ImageInventoryWorkflow)
}
