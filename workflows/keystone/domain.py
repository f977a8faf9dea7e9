"""Domain: find by name, create when missing, patch description/enabled drift; disable, then delete."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api import keystone_io as io
    from osprov.api.keystone import DomainSpec
    from osprov.api.messages import EntityInput
    from osprov.workflows.calls import call
    from osprov.workflows.entity import Outcome
    from osprov.workflows.keystone.common import KeystoneObjectEntity, ensure, find


@workflow.defn(name="Domain")
class DomainWorkflow(KeystoneObjectEntity[DomainSpec]):
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

    async def finalize(self, spec: DomainSpec) -> None:
        # Keystone refuses to delete an enabled domain (403): disable it first, by the stored ID.
        stored = self.k.id
        # Patched (docs/architecture.md, "Upgrades"): workflows that already ran finalize without it replay.
        if stored and workflow.patched("domain-disable-before-delete") and await find("domain", id=stored):
            await call(
                io.UPDATE,
                io.Update(kind="domain", id=stored, fields={"enabled": False}),
                summary=f"disable domain {stored} before deleting it",
            )
        await super().finalize(spec)
