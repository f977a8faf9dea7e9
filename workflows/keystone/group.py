"""Group: find by name in its domain, create when missing, patch description drift."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api import keystone_io as io
    from osprov.api.keystone import GroupSpec
    from osprov.api.messages import EntityInput
    from osprov.workflows.entity import Outcome
    from osprov.workflows.keystone.common import KeystoneObjectEntity, domain_id, ensure


@workflow.defn(name="Group")
class GroupWorkflow(KeystoneObjectEntity[GroupSpec]):
    KIND = "Group"
    KEYSTONE_KIND = "group"

    @workflow.run
    async def run(self, inp: EntityInput) -> str:
        return await self.run_loop(inp)

    async def reconcile(self, spec: GroupSpec, full: bool) -> Outcome:
        dom = await domain_id(spec.domain)
        obj, done, dupes = await ensure(
            "group",
            io.Find(kind="group", name=spec.name, filters={"domain_id": dom}),
            {"name": spec.name, "domain_id": dom},
            {"description": spec.description},
        )
        return self.converged(obj, done, f"group {spec.name} in domain {spec.domain}", dupes)
