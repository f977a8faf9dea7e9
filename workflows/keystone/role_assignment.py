"""RoleAssignment: declares one grant (a role, to a user or a group, on a project, a domain or the system).

The grant is an object of its own, keyed by the names of its role, subject and scope: its workflow checks
it and PUTs it when missing. A grant that existed before any claim is never revoked; one osprov made is
revoked when its last claimant with deletionPolicy delete goes (or moves to another grant).
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api.keystone import RoleAssignmentSpec
    from osprov.api.messages import EntityInput
    from osprov.api.ownership import ObjectKey
    from osprov.api.state import RoleAssignmentState
    from osprov.workflows.keystone.common import Claims, KeystoneEntity, one


def grant_key(spec: RoleAssignmentSpec) -> ObjectKey:
    subject = spec.user or spec.group
    assert subject is not None  # the CRD's one-of rule and the model guarantee it
    if spec.project:
        scope: ObjectKey | None = ObjectKey(
            kind="project", domain=spec.project.domain, name=spec.project.name
        )
    elif spec.domain:
        scope = ObjectKey(kind="domain", name=spec.domain.name)
    else:
        scope = None  # the system
    return ObjectKey(
        kind="grant",
        role=ObjectKey(kind="role", name=spec.role.name, domain=spec.role.domain),
        subject=ObjectKey(kind="user" if spec.user else "group", domain=subject.domain, name=subject.name),
        scope=scope,
    )


@workflow.defn(name="RoleAssignment")
class RoleAssignmentWorkflow(KeystoneEntity[RoleAssignmentSpec, RoleAssignmentState]):
    KIND = "RoleAssignment"
    KEYSTONE_KIND = "role"  # no object of its own (runs before ownership revoked the recorded grant)
    STATE = RoleAssignmentState

    @workflow.run
    async def run(self, inp: EntityInput) -> str:
        return await self.run_loop(inp)

    def claims(self, spec: RoleAssignmentSpec) -> Claims:
        return one(grant_key(spec))
