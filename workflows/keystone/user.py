"""User: declares one Keystone user, its fields and its password Secret (never the password itself).

The user's object workflow probes the password (an authentication as the user) only when the Secret's
version changed or on the periodic resync, writes it only on 401, and only for a user osprov created or
the operator allow-listed. A missing Secret or key is reported here, before anything is claimed.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api import keystone_io as io
    from osprov.api import kube_io
    from osprov.api.keystone import UserSpec
    from osprov.api.kube_io import SecretKey
    from osprov.api.messages import EntityInput
    from osprov.api.ownership import Desired, ObjectKey
    from osprov.workflows.calls import call_local
    from osprov.workflows.keystone.common import Claims, KeystoneObjectEntity, one


@workflow.defn(name="User")
class UserWorkflow(KeystoneObjectEntity[UserSpec]):
    KIND = "User"
    KEYSTONE_KIND = "user"

    @workflow.run
    async def run(self, inp: EntityInput) -> str:
        return await self.run_loop(inp)

    async def before_claims(self, spec: UserSpec) -> None:
        ns, ref = self.st.ref.namespace, spec.password_secret
        await call_local(
            kube_io.CHECK_SECRET,
            SecretKey(namespace=ns, name=ref.name, key=ref.key),
            summary=f"check that Secret {ns}/{ref.name} has key {ref.key}",
        )

    def claims(self, spec: UserSpec) -> Claims:
        ns, ref = self.st.ref.namespace, spec.password_secret
        refs = {}
        if spec.default_project:
            dp = spec.default_project
            refs["default_project_id"] = ObjectKey(kind="project", domain=dp.domain, name=dp.name)
        desired = Desired(
            fields={"description": spec.description, "enabled": spec.enabled, "email": spec.email},
            refs=refs,
            password=io.SecretRef(namespace=ns, name=ref.name, key=ref.key),
            password_version=self.st.secret_versions.get(f"{ns}/{ref.name}"),
        )
        return one(ObjectKey(kind="user", domain=spec.domain, name=spec.name), desired)
