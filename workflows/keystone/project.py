"""Project: declares one Keystone project in a domain (the domain is a dependency: waited for, not polled)."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api.keystone import ProjectSpec
    from osprov.api.messages import EntityInput
    from osprov.api.ownership import Desired, ObjectKey
    from osprov.workflows.keystone.common import Claims, KeystoneObjectEntity, one


@workflow.defn(name="Project")
class ProjectWorkflow(KeystoneObjectEntity[ProjectSpec]):
    KIND = "Project"
    KEYSTONE_KIND = "project"

    @workflow.run
    async def run(self, inp: EntityInput) -> str:
        return await self.run_loop(inp)

    def claims(self, spec: ProjectSpec) -> Claims:
        key = ObjectKey(kind="project", domain=spec.domain, name=spec.name)
        return one(key, Desired(fields={"description": spec.description, "enabled": spec.enabled}))
