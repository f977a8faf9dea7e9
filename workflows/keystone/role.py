"""Role: global (no domain) or domain-specific; find by name (+ domain), create when missing."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api import keystone_io as io
    from osprov.api.keystone import RoleSpec
    from osprov.api.messages import EntityInput
    from osprov.workflows.entity import Outcome
    from osprov.workflows.keystone.common import KeystoneObjectEntity, domain_id, ensure


@workflow.defn(name="Role")
class RoleWorkflow(KeystoneObjectEntity[RoleSpec]):
    KIND = "Role"
    KEYSTONE_KIND = "role"

    @workflow.run
    async def run(self, inp: EntityInput) -> str:
        return await self.run_loop(inp)

    async def reconcile(self, spec: RoleSpec, full: bool) -> Outcome:
        filters = {"domain_id": await domain_id(spec.domain)} if spec.domain else {}
        obj, done, dupes = await ensure(
            "role", io.Find(kind="role", name=spec.name, filters=filters), {"name": spec.name, **filters}, {}
        )
        where = f" in domain {spec.domain}" if spec.domain else ""
        return self.converged(obj, done, f"role {spec.name}{where}", dupes)
