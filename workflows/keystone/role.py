"""Role: declares one Keystone role, global or domain-specific."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api.keystone import RoleSpec
    from osprov.api.messages import EntityInput
    from osprov.api.ownership import ObjectKey
    from osprov.workflows.keystone.common import Claims, KeystoneObjectEntity, one


@workflow.defn(name="Role")
class RoleWorkflow(KeystoneObjectEntity[RoleSpec]):
    KIND = "Role"
    KEYSTONE_KIND = "role"

    @workflow.run
    async def run(self, inp: EntityInput) -> str:
        return await self.run_loop(inp)

    def claims(self, spec: RoleSpec) -> Claims:
        return one(ObjectKey(kind="role", name=spec.name, domain=spec.domain))
