"""Service: declares one catalog service, identified by name and type together."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api.keystone import ServiceSpec
    from osprov.api.messages import EntityInput
    from osprov.api.ownership import Desired, ObjectKey
    from osprov.workflows.keystone.common import Claims, KeystoneObjectEntity, one


@workflow.defn(name="Service")
class ServiceWorkflow(KeystoneObjectEntity[ServiceSpec]):
    KIND = "Service"
    KEYSTONE_KIND = "service"

    @workflow.run
    async def run(self, inp: EntityInput) -> str:
        return await self.run_loop(inp)

    def claims(self, spec: ServiceSpec) -> Claims:
        key = ObjectKey(kind="service", name=spec.name, type=spec.type)
        return one(key, Desired(fields={"description": spec.description, "enabled": spec.enabled}))
