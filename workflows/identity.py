"""Identity: a tenant's project, user, managed roles and application credential (the seed's OpenstackIdentity).

Contract: docs/identity.md. The decisions are pure tables in workflows/identity_decisions.py (I…, X…); this
module executes them. The project, the user and the grants are claimed from their KeystoneObject workflows
like every Keystone object (KeystoneEntity: the ownership path), in the managed domain the operator's
tenancy mapping gives the namespace; osprov creates them, so they are osprov's to converge and delete. The
application credential is made by activities/identity.py and published in a Secret the Identity owns.

Cloud resources that name the Identity (identityRef) signal `identity_use` before any cloud call (see
workflows/tenancy.py); each becomes a user, is answered with the current credential (its Secret's name and
version, never the secret) and told again whenever it changes. Deleting the Identity waits while users
remain (the deletion guard), then revokes the credentials and releases the claims with delete.
"""

from __future__ import annotations

from datetime import datetime

from temporalio import workflow
from temporalio.exceptions import FailureError

with workflow.unsafe.imports_passed_through():
    from osprov.api import identity_io as io
    from osprov.api import tenancy_io
    from osprov.api.identity import IdentityReason, IdentitySpec, IdentityStatus, credential_name, object_name
    from osprov.api.messages import ConditionState, EntityInput
    from osprov.api.ownership import Desired, ObjectKey, ObjectResult
    from osprov.api.registry import READY
    from osprov.api.state import IdentityState, IssuedRecord
    from osprov.workflows import patches
    from osprov.workflows.calls import call, call_local
    from osprov.workflows.entity import ACTIVITY_FAILED, Outcome, PassFailed, StatusBase, failure_message
    from osprov.workflows.identity_decisions import (
        DeleteKeypair,
        Facts,
        Gone,
        InUse,
        Issue,
        ReadSecret,
        ReadUsers,
        Ready,
        Refuse,
        Release,
        Revoke,
        Teardown,
        converge,
        revoke_time,
        teardown,
    )
    from osprov.workflows.keystone.common import Claims, KeystoneEntity, one

# The deletion guard re-reads its users on this backoff (a release wakes it at once).
IN_USE_FIRST_SECONDS, IN_USE_MAX_SECONDS = 5.0, 60.0
# X6: an Identity with spec.sshPublicKey deletes its Nova keypair before its credentials are revoked.
PATCH_KEYPAIR = "identity-keypair-delete"


@workflow.defn(name="Identity")
class IdentityWorkflow(KeystoneEntity[IdentitySpec, IdentityState]):
    KIND = "Identity"
    KEYSTONE_KIND = "project"
    STATE = IdentityState

    def __init__(self) -> None:
        super().__init__()
        self._inbox: list[io.IdentityUse | io.IdentityRelease] = []
        self._wake_at: datetime | None = None  # the next rotation or revocation (I8)
        self._in_use_checks = 0

    @workflow.run
    async def run(self, inp: EntityInput) -> str:
        return await self.run_loop(inp)

    # ----- the use protocol: handlers record, the pass answers ---------------------------------------------
    @workflow.signal(name=io.SIGNAL_USE)
    def use(self, message: io.IdentityUse) -> None:
        self._inbox.append(message)
        self.kick()

    @workflow.signal(name=io.SIGNAL_RELEASE)
    def release_use(self, message: io.IdentityRelease) -> None:
        self._inbox.append(message)
        self.kick()

    def _fold_inbox(self, deleting: bool) -> list[io.IdentityUse]:
        """Record uses and releases; while deleting, a resource that is not a user yet is refused."""
        k, refused = self.k, []
        for message in self._inbox:
            wid = message.user.workflow_id
            if isinstance(message, io.IdentityRelease):
                k.users.pop(wid, None)
                k.asked.pop(wid, None)
                k.answered.pop(wid, None)
            elif deleting and wid not in k.users:
                refused.append(message)
            else:
                k.users[wid] = message.user
                k.asked[wid] = message.seq
        self._inbox.clear()
        return refused

    def _answer(self, wid: str, seq: int, pending: str) -> io.IdentityAnswer:
        """ready while a credential is published (also while a later pass fails: it still works)."""
        k, ref = self.k, self.st.ref
        project = None
        if k.project_id is not None and k.domain is not None:
            project = io.ProjectInfo(id=k.project_id, name=object_name(ref.uid), domain=k.domain)
        common = {"identity_uid": ref.uid, "seq": seq, "backed": project is not None, "project": project}
        credential = self._published() if project is not None else None
        if credential is not None:
            return io.IdentityAnswer(outcome="ready", message="", credential=credential, **common)
        return io.IdentityAnswer(
            outcome="pending", message=f"Identity {ref.name} is not ready: {pending}", **common
        )

    async def _answer_users(
        self, pending: str = "its credential is being made", refused: list[io.IdentityUse] | None = None
    ) -> None:
        """Tell every user its answer when it changed or it asked again; refuse the late ones."""
        k, ref = self.k, self.st.ref
        for message in refused or []:
            answer = io.IdentityAnswer(
                identity_uid=ref.uid,
                seq=message.seq,
                outcome="refused",
                message=f"Identity {ref.name} is being deleted and takes no new users",
                backed=k.project_id is not None,
            )
            await self._send(message.user.workflow_id, answer)
        for wid in list(k.users):
            answer = self._answer(wid, k.asked.get(wid, 0), pending)
            if k.answered.get(wid) != answer and await self._send(wid, answer):
                k.answered[wid] = answer

    async def _send(self, wid: str, answer: io.IdentityAnswer) -> bool:
        try:
            await workflow.get_external_workflow_handle(wid).signal(io.SIGNAL_ANSWER, answer)
        except FailureError:
            return False  # its workflow is not running: the deletion guard reads whether it still exists
        return True

    # ----- the claims (ownership path) -----------------------------------------------------------------
    def wants_finalizer(self, spec: IdentitySpec) -> bool:
        return True  # an Identity always cleans up what it made

    async def before_claims(self, spec: IdentitySpec) -> None:
        """I0: the namespace's managed domain, from the operator's mapping; nothing is claimed without one."""
        ref, k = self.st.ref, self.k
        policy = await call_local(
            tenancy_io.IDENTITY_POLICY,
            tenancy_io.IdentityRequest(namespace=ref.namespace),
            summary=f"read the managed domain and roles the tenancy mapping gives namespace {ref.namespace}",
        )
        if not policy.allowed or policy.domain is None:
            raise PassFailed(policy.message, reason=IdentityReason.FORBIDDEN.value, retry=False)
        if k.claimed and k.domain is not None and policy.domain != k.domain:
            raise PassFailed(
                f"the tenancy mapping now gives namespace {ref.namespace} domain {policy.domain!r}, but this "
                f"Identity lives in {k.domain!r}: it never moves; create a new Identity",
                reason=IdentityReason.CONFLICT.value,
                retry=False,
            )
        k.domain, k.roles, k.secret_name = policy.domain, policy.roles, spec.secret(ref.name)

    def _keys(self) -> tuple[ObjectKey, ObjectKey]:
        name = object_name(self.st.ref.uid)
        return (
            ObjectKey(kind="project", domain=self.k.domain, name=name),
            ObjectKey(kind="user", domain=self.k.domain, name=name),
        )

    def claims(self, spec: IdentitySpec) -> Claims:
        project, user = self._keys()
        ref = self.st.ref
        described = Desired(
            fields={"description": f"osprov Identity {ref.namespace}/{ref.name}", "enabled": True}
        )
        wanted = one(project, described) | one(user, described)
        for role in self.k.roles:
            grant = ObjectKey(
                kind="grant", role=ObjectKey(kind="role", name=role), subject=user, scope=project
            )
            wanted |= one(grant)
        return wanted

    def answered(self, spec: IdentitySpec, results: dict[str, ObjectResult]) -> None:
        project, user = self._keys()
        self.k.project_id = results[project.path].id or self.k.project_id
        self.k.user_id = results[user.path].id or self.k.user_id

    # ----- converge ----------------------------------------------------------------------------------------
    async def reconcile(self, spec: IdentitySpec, full: bool) -> Outcome:
        await self._answer_users(refused=self._fold_inbox(deleting=False))
        try:
            await super().reconcile(spec, full)  # I0 and the claims: raises while not every object is ready
            outcome = await self._credential(spec, full)
        except (*ACTIVITY_FAILED, PassFailed) as err:
            message = err.message if isinstance(err, PassFailed) else failure_message(err)
            await self._answer_users(pending=message)
            raise
        await self._answer_users()
        return outcome

    async def _credential(self, spec: IdentitySpec, full: bool) -> Outcome:
        k = self.k
        project, user = (k.results[key.path] for key in self._keys())
        secret: io.SecretCheck | None = None
        while True:
            d = converge(
                Facts(
                    now=workflow.now(),
                    full=full,
                    project=project,
                    user=user,
                    roles=tuple(k.roles),
                    current=k.current,
                    retiring=tuple(k.retiring),
                    lifetime=spec.credential.lifetime_delta(),
                    rotate_before=spec.credential.rotate_before_delta(),
                    secret=secret,
                )
            )
            self.set_step(d.step)
            a = d.action
            if isinstance(a, Refuse):
                raise PassFailed(a.message, reason=a.reason.value, retry=False)
            if isinstance(a, Ready):
                self._wake_at = a.wake_at
                return Outcome(
                    conditions=[ConditionState.of(READY, True, IdentityReason.PROVISIONED, a.message)]
                )
            if isinstance(a, ReadSecret):
                secret = await self._read_secret()
            elif isinstance(a, Issue):
                secret = await self._issue(spec, a, d.step)
            else:
                assert isinstance(a, Revoke)
                await self._revoke(a.record, d.step)

    def _target(self) -> io.SecretTarget:
        ref = self.st.ref
        assert self.k.secret_name is not None
        return io.SecretTarget(
            namespace=ref.namespace, name=self.k.secret_name, owner_name=ref.name, owner_uid=ref.uid
        )

    async def _read_secret(self) -> io.SecretCheck:
        k = self.k
        assert k.current is not None
        check = await call_local(
            io.CHECK_SECRET,
            io.CheckSecret(secret=self._target(), credential_id=k.current.id),
            summary=f"check that Secret {k.secret_name} holds credential #{k.current.serial}",
        )
        if check.holds and check.version and check.version != k.current.secret_version:
            k.current = k.current.model_copy(
                update={"secret_version": check.version}
            )  # e.g. a label was added
        return check

    async def _issue(self, spec: IdentitySpec, a: Issue, step: str) -> io.SecretCheck:
        """I2, I4, I5, I6: make and publish the next credential; the current one retires (revoked after
        `overlap`), and the users are told before anything is revoked."""
        k, ref = self.k, self.st.ref
        assert k.user_id is not None and k.project_id is not None
        issued = await call(
            io.ISSUE_CREDENTIAL,
            io.IssueCredential(
                user_id=k.user_id,
                project_id=k.project_id,
                name=credential_name(ref.uid, a.serial),
                roles=list(k.roles),
                expires_at=a.expires_at,
                secret=self._target(),
                description=f"osprov Identity {ref.namespace}/{ref.name}",
            ),
            summary=step,
        )
        published = workflow.now()
        if k.current is not None:
            retired = k.current
            at = revoke_time(retired, published, spec.credential.overlap_delta())
            k.retiring.append(retired.model_copy(update={"revoke_at": at}))
        k.current = IssuedRecord(
            id=issued.id,
            name=issued.name,
            serial=a.serial,
            roles=list(k.roles),
            expires_at=a.expires_at,
            secret_version=issued.secret_version,
        )
        k.serial = max(k.serial, a.serial)
        await self._answer_users()  # the users switch to it now, long before the old one is revoked
        return io.SecretCheck(holds=True, version=issued.secret_version)

    def _keypair_to_delete(self, spec: IdentitySpec) -> bool:
        """X6 applies: a key was given (a Server may have made the keypair) and it was not deleted yet. Asked only
        for Identities with a key, so runs of every other Identity keep their history (patch PATCH_KEYPAIR)."""
        k = self.k
        if not spec.ssh_public_key or k.keypair_deleted or k.current is None or k.secret_name is None:
            return False
        return k.project_id is not None and patches.patched(PATCH_KEYPAIR)

    def _published(self) -> io.Credential | None:
        """The published credential, by reference (its Secret's name and version, never its value)."""
        k, ref = self.k, self.st.ref
        if k.current is None or k.secret_name is None or k.project_id is None:
            return None
        return io.Credential(
            identity=ref.name,
            namespace=ref.namespace,
            secret=k.secret_name,
            version=k.current.secret_version,
            project_id=k.project_id,
        )

    async def _delete_keypair(self, step: str) -> None:
        credential = self._published()
        assert credential is not None
        await call(
            io.DELETE_KEYPAIR,
            io.DeleteKeypair(credential=credential, identity_uid=self.st.ref.uid),
            summary=step,
        )
        self.k.keypair_deleted = True

    async def _revoke(self, record: IssuedRecord, step: str) -> None:
        k = self.k
        if k.user_id is not None:
            await call(
                io.REVOKE_CREDENTIAL,
                io.RevokeCredential(user_id=k.user_id, credential_id=record.id),
                summary=step,
            )
        k.retiring = [r for r in k.retiring if r.id != record.id]
        if k.current is not None and k.current.id == record.id:
            k.current = None

    async def _pass(self) -> str | None:
        done = await super()._pass()
        change, wake = self.st.desired, self._wake_at
        live = done is None and change is not None and not (change.deleting or change.gone)
        # The next rotation or revocation is a resync of its own (a full pass: claims checked too).
        if (
            live
            and wake is not None
            and self.st.retry_at is None
            and (self.st.resync_at is None or wake < self.st.resync_at)
        ):
            self.st.resync_at = max(wake, workflow.now())
        return done

    # ----- teardown ----------------------------------------------------------------------------------------
    async def finalize(self, spec: IdentitySpec) -> Outcome | None:  # type: ignore[override]
        await self._answer_users(refused=self._fold_inbox(deleting=True))
        k, read = self.k, False
        while True:
            d = teardown(
                Teardown(
                    users=tuple(k.users.values()),
                    users_read=read,
                    current=k.current,
                    retiring=tuple(k.retiring),
                    claimed=bool(k.claimed),
                    keypair=self._keypair_to_delete(spec),
                )
            )
            self.set_step(d.step)
            a = d.action
            if isinstance(a, ReadUsers):
                alive = await call_local(
                    io.LIVING_USERS,
                    io.CheckUsers(namespace=self.st.ref.namespace, users=list(a.users)),
                    summary="check which resources using this Identity still exist",
                )
                living = {u.workflow_id for u in alive}
                for wid in [w for w in k.users if w not in living]:
                    k.users.pop(wid)
                    k.asked.pop(wid, None)
                    k.answered.pop(wid, None)
                read = True
            elif isinstance(a, InUse):
                delay = min(IN_USE_FIRST_SECONDS * 2**self._in_use_checks, IN_USE_MAX_SECONDS)
                self._in_use_checks += 1
                condition = ConditionState.of(READY, False, IdentityReason.IN_USE, a.message)
                return Outcome(conditions=[condition], requeue_after=delay)
            elif isinstance(a, DeleteKeypair):
                await self._delete_keypair(d.step)
            elif isinstance(a, Revoke):
                await self._revoke(a.record, d.step)
            elif isinstance(a, Release):
                await super().finalize(spec)
            else:
                assert isinstance(a, Gone)
                return None

    # ----- status ----------------------------------------------------------------------------------------
    def status(self, base: StatusBase) -> IdentityStatus:
        k = self.k
        return IdentityStatus(
            **base,
            domain=k.domain,
            project_id=k.project_id,
            user_id=k.user_id,
            secret_name=k.secret_name if k.current else None,
            credential_id=k.current.id if k.current else None,
            credential_expires_at=k.current.expires_at if k.current else None,
            users=sorted(u.label for u in k.users.values()) or None,
        )
