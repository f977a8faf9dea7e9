"""Domain: declares one Keystone domain (its description and enabled flag)."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api.keystone import DomainSpec
    from osprov.api.messages import EntityInput
    from osprov.api.ownership import Desired, ObjectKey
    from osprov.workflows.keystone.common import Claims, KeystoneObjectEntity, one


@workflow.defn(name="Domain")
class DomainWorkflow(KeystoneObjectEntity[DomainSpec]):
    KIND = "Domain"
    KEYSTONE_KIND = "domain"

    @workflow.run
    async def run(self, inp: EntityInput) -> str:
        return await self.run_loop(inp)

    def claims(self, spec: DomainSpec) -> Claims:
        key = ObjectKey(kind="domain", name=spec.name)
        return one(key, Desired(fields={"description": spec.description, "enabled": spec.enabled}))
