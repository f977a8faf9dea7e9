"""Group: declares one Keystone group in a domain (membership comes from a mapping, not from here)."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api.keystone import GroupSpec
    from osprov.api.messages import EntityInput
    from osprov.api.ownership import Desired, ObjectKey
    from osprov.workflows.keystone.common import Claims, KeystoneObjectEntity, one


@workflow.defn(name="Group")
class GroupWorkflow(KeystoneObjectEntity[GroupSpec]):
    KIND = "Group"
    KEYSTONE_KIND = "group"

    @workflow.run
    async def run(self, inp: EntityInput) -> str:
        return await self.run_loop(inp)

    def claims(self, spec: GroupSpec) -> Claims:
        key = ObjectKey(kind="group", domain=spec.domain, name=spec.name)
        return one(key, Desired(fields={"description": spec.description}))
