"""User: find/create/patch, and the password from a Secret without lockouts.

The password is probed (an authentication as the user) only when the desired state changed —
including the Secret's version — or on the periodic resync, and written only on 401. A missing
Secret or key is reported before anything is written to Keystone. The value never enters the
workflow: activities read it from the Secret themselves.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api import keystone_io as io
    from osprov.api import kube_io
    from osprov.api.keystone import UserSpec
    from osprov.api.kube_io import SecretKey
    from osprov.api.messages import EntityInput
    from osprov.workflows.calls import call
    from osprov.workflows.entity import Outcome
    from osprov.workflows.keystone.common import KeystoneObjectEntity, domain_id, ensure, require


@workflow.defn(name="User")
class UserWorkflow(KeystoneObjectEntity[UserSpec]):
    KIND = "User"
    KEYSTONE_KIND = "user"

    @workflow.run
    async def run(self, inp: EntityInput) -> str:
        return await self.run_loop(inp)

    async def reconcile(self, spec: UserSpec, full: bool) -> Outcome:
        ns, ref = self.st.ref.namespace, spec.password_secret
        secret = io.SecretRef(namespace=ns, name=ref.name, key=ref.key)
        await call(
            kube_io.CHECK_SECRET,
            SecretKey(namespace=ns, name=ref.name, key=ref.key),
            summary=f"check Secret {ns}/{ref.name} has key {ref.key}",
        )
        dom = await domain_id(spec.domain)
        default_project = None
        if spec.default_project:
            dp = spec.default_project
            default_project = (
                await require(
                    "project",
                    f"default project {dp.name!r} in domain {dp.domain!r}",
                    dp.name,
                    domain_id=await domain_id(dp.domain),
                )
            ).id
        obj, done, dupes = await ensure(
            "user",
            io.Find(kind="user", name=spec.name, filters={"domain_id": dom}),
            {"name": spec.name, "domain_id": dom},
            {
                "description": spec.description,
                "enabled": spec.enabled,
                "email": spec.email,
                "default_project_id": default_project,
            },
        )
        if done == "created":
            # A new user has no password to test: set it, no probe (no failed login).
            await self._set_password(obj.id, secret)
            password = "password set"
        elif full:
            self.set_step("probing the password (authenticating as the user)")
            probe = await call(
                io.PROBE_PASSWORD,
                io.Probe(user_id=obj.id, user_name=spec.name, domain_id=dom, secret=secret),
                summary=f"probe password of {spec.name}",
            )
            if probe.outcome == "unauthorized":
                await self._set_password(obj.id, secret)
                password = "password updated"
            else:
                password = "password verified"
        else:
            password = "password unchanged"
        result = self.converged(obj, done, f"user {spec.name} in domain {spec.domain}", dupes)
        result.conditions[0].message += f" ({password})"
        return result

    async def _set_password(self, user_id: str, secret: io.SecretRef) -> None:
        self.set_step("writing the password")
        await call(
            io.SET_PASSWORD,
            io.SetPassword(user_id=user_id, secret=secret),
            summary=f"set password from Secret {secret.namespace}/{secret.name}",
        )
