"""Project: its domain must exist (else a retried, explained failure); then find/create/patch."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api import keystone_io as io
    from osprov.api.keystone import ProjectSpec
    from osprov.api.messages import EntityInput
    from osprov.workflows.entity import Outcome
    from osprov.workflows.keystone.common import KeystoneObjectEntity, domain_id, ensure


@workflow.defn(name="Project")
class ProjectWorkflow(KeystoneObjectEntity[ProjectSpec]):
    KIND = "Project"
    KEYSTONE_KIND = "project"

    @workflow.run
    async def run(self, inp: EntityInput) -> str:
        return await self.run_loop(inp)

    async def reconcile(self, spec: ProjectSpec, full: bool) -> Outcome:
        dom = await domain_id(spec.domain)
        obj, done, dupes = await ensure(
            "project",
            io.Find(kind="project", name=spec.name, filters={"domain_id": dom}),
            {"name": spec.name, "domain_id": dom},
            {"description": spec.description, "enabled": spec.enabled},
        )
        return self.converged(obj, done, f"project {spec.name} in domain {spec.domain}", dupes)
