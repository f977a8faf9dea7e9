"""Service: found by name and type together; description/enabled drift patched in place."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api import keystone_io as io
    from osprov.api.keystone import ServiceSpec
    from osprov.api.messages import EntityInput
    from osprov.workflows.entity import Outcome
    from osprov.workflows.keystone.common import KeystoneObjectEntity, ensure


@workflow.defn(name="Service")
class ServiceWorkflow(KeystoneObjectEntity[ServiceSpec]):
    KIND = "Service"
    KEYSTONE_KIND = "service"

    @workflow.run
    async def run(self, inp: EntityInput) -> str:
        return await self.run_loop(inp)

    async def reconcile(self, spec: ServiceSpec, full: bool) -> Outcome:
        # Keystone allows duplicate services; create-if-absent (in the activity) keeps retries from
        # making one, and an existing duplicate is reported, not deleted.
        obj, done, dupes = await ensure(
            "service",
            io.Find(kind="service", name=spec.name, filters={"type": spec.type}),
            {"name": spec.name, "type": spec.type},
            {"description": spec.description, "enabled": spec.enabled},
        )
        return self.converged(obj, done, f"service {spec.name} ({spec.type})", dupes)
