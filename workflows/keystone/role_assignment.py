"""RoleAssignment: resolve role, subject and scope to IDs, then ensure the grant (PUT, idempotent).

The grant is checked first so an unchanged assignment costs reads only; a grant revoked by hand
is restored on the resync. deletionPolicy=delete revokes exactly the grant this workflow made,
by the IDs it recorded, and revokes a grant it made earlier when the spec moves to another one.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api import keystone_io as io
    from osprov.api.keystone import RoleAssignmentSpec
    from osprov.api.messages import EntityInput
    from osprov.api.state import RoleAssignmentState
    from osprov.workflows.calls import call
    from osprov.workflows.entity import Outcome
    from osprov.workflows.keystone.common import KeystoneEntity, domain_id, ready, require


@workflow.defn(name="RoleAssignment")
class RoleAssignmentWorkflow(KeystoneEntity[RoleAssignmentSpec, RoleAssignmentState]):
    KIND = "RoleAssignment"
    KEYSTONE_KIND = "role"  # no object of its own: deletion revokes the grant instead
    STATE = RoleAssignmentState

    @workflow.run
    async def run(self, inp: EntityInput) -> str:
        return await self.run_loop(inp)

    async def reconcile(self, spec: RoleAssignmentSpec, full: bool) -> Outcome:
        grant, text = await self._resolve(spec)
        previous = self.k.grant
        if await call(io.CHECK_GRANT, grant, summary=f"check grant: {text}"):
            message = f"{text} is in place"
        else:
            await call(io.PUT_GRANT, grant, summary=f"grant: {text}")
            message = f"granted {text}"
        self.k.grant = grant
        if (
            previous
            and previous != grant
            and self.wants_finalizer(spec)
            and workflow.patched("revoke-superseded-grant")
        ):
            # The spec now names another role, subject or scope: the grant this workflow made before
            # would otherwise outlive the resource (deletion revokes only the recorded one). Revoked
            # after the new grant is in place, so the subject never holds neither.
            await call(io.REVOKE_GRANT, previous, summary="revoke the superseded grant")
            message += "; the previous grant was revoked"
        return Outcome(conditions=ready(message))

    async def finalize(self, spec: RoleAssignmentSpec) -> None:
        if self.k.grant:
            await call(io.REVOKE_GRANT, self.k.grant, summary="revoke the recorded grant")

    async def _resolve(self, spec: RoleAssignmentSpec) -> tuple[io.Grant, str]:
        role_filters = {"domain_id": await domain_id(spec.role.domain)} if spec.role.domain else {}
        role = await require("role", f"role {spec.role.name!r}", spec.role.name, **role_filters)
        ids: dict[str, str] = {"role_id": role.id}
        if spec.user:
            user = await require(
                "user",
                f"user {spec.user.name!r} in domain {spec.user.domain!r}",
                spec.user.name,
                domain_id=await domain_id(spec.user.domain),
            )
            ids["user_id"], subject = user.id, f"user {spec.user.name}"
        else:
            assert spec.group is not None  # the CRD's one-of rule and the model guarantee it
            group = await require(
                "group",
                f"group {spec.group.name!r} in domain {spec.group.domain!r}",
                spec.group.name,
                domain_id=await domain_id(spec.group.domain),
            )
            ids["group_id"], subject = group.id, f"group {spec.group.name}"
        if spec.project:
            project = await require(
                "project",
                f"project {spec.project.name!r} in domain {spec.project.domain!r}",
                spec.project.name,
                domain_id=await domain_id(spec.project.domain),
            )
            ids["project_id"], scope = project.id, f"project {spec.project.name}"
        elif spec.domain:
            ids["domain_id"], scope = await domain_id(spec.domain.name), f"domain {spec.domain.name}"
        else:
            return io.Grant(**ids, system="all"), f"role {spec.role.name} to {subject} on the system"
        return io.Grant(**ids), f"role {spec.role.name} to {subject} on {scope}"
