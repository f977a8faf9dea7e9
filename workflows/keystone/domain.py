"""Domain: find by name, create when missing, patch description/enabled drift."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from api import keystone_io as io
    from api.keystone import DomainSpec
    from api.messages import EntityInput
    from workflows.entity import Outcome
    from workflows.keystone.common import KeystoneEntity, ensure


@workflow.defn(name="Domain")
class DomainWorkflow(KeystoneEntity):
    KIND = "Domain"
    KEYSTONE_KIND = "domain"

    @workflow.run
    async def run(self, inp: EntityInput) -> str:
        return await self.run_loop(inp)

    async def reconcile(self, spec: DomainSpec, full: bool) -> Outcome:
        obj, done, dupes = await ensure(
            "domain",
            io.Find(kind="domain", name=spec.name),
            {"name": spec.name},
            {"description": spec.description, "enabled": spec.enabled},
        )
        return self.converged(obj, done, f"domain {spec.name}", dupes)
