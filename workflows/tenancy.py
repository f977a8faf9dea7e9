"""Where a cloud resource's objects live and what its calls run on: the step every Volume, LoadBalancer and
Server pass starts with, before any cloud call (docs/identity.md, "Using an Identity").

  T1 spec.project                          -> the operator's tenancy mapping must allow that project for the
                                              namespace, else Forbidden (nothing called, nothing written; a
                                              delete is done without a call); the calls run on the
                                              controller's credentials re-scoped to it
  T2 identityRef, a ready answer asked for within the resync interval -> its project and credential
  T3 identityRef, otherwise                -> find the Identity (Kubernetes), signal `use`, wait for the answer
  T4 the Identity does not exist           -> create: retried; delete: nothing can have been made (done)
  T5 pending (no credential yet)           -> create: retried (the answer wakes the pass); delete: done when
                                              the Identity never got a project (the seed's rule), else retried
  T6 refused (it is being deleted and this resource is not one of its users) -> create: waits for a change;
                                              delete: this resource never got its credential (done)

Every call then runs on the answer's application credential (activities read its Secret): never on the
controller's own authority. Runs started before this release check the mapping from their first live pass
on (a per-pass patch, as workflows/keystone/common.py does for ownership).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import timedelta
from typing import TypeVar

from temporalio import workflow
from temporalio.exceptions import FailureError

with workflow.unsafe.imports_passed_through():
    from osprov.api import identity_io as io
    from osprov.api import tenancy_io
    from osprov.api.common import AvailableReason, CloudSpec
    from osprov.api.identity_io import Credential
    from osprov.api.messages import workflow_id
    from osprov.api.state import CloudKindState, TenancyState
    from osprov.workflows import patches
    from osprov.workflows.calls import call_local
    from osprov.workflows.entity import Entity, PassFailed
    from osprov.workflows.plan import PlanStopped

PATCH_TENANCY = "tenancy-mapping"
# An Identity answers within one workflow task; longer means it is stuck: the pass fails and is retried.
ANSWER_TIMEOUT = timedelta(seconds=60)

CloudSpecT = TypeVar("CloudSpecT", bound=CloudSpec)
CloudKindT = TypeVar("CloudKindT", bound=CloudKindState)


@dataclass(frozen=True)
class Where:
    """The project a resource's objects live in, and the credential its calls run on (None: the
    controller's, re-scoped to the project — spec.project, allowed by the mapping)."""

    project: str
    domain: str
    credential: Credential | None = None

    @property
    def label(self) -> str:
        """The `project` linkage key written on the objects."""
        return f"{self.domain}/{self.project}"


class CloudEntity(Entity[CloudSpecT, CloudKindT]):
    """Base of the cloud kinds: `where(spec, deleting)` at the start of each pass; None (deleting only) means
    nothing can exist in the cloud, so the delete is done without a call."""

    def __init__(self) -> None:
        super().__init__()
        self._awaiting_answer = False

    @property
    def tenancy(self) -> TenancyState:
        return self.k.tenancy

    @workflow.signal(name=io.SIGNAL_ANSWER)
    def identity_answer(self, answer: io.IdentityAnswer) -> None:
        if self.s is None or self.s.kind is None:
            return
        t = self.tenancy
        if answer.identity_uid != t.identity_uid or (t.answer is not None and answer.seq < t.answer.seq):
            return  # another incarnation of the Identity, or an answer to an older use
        before, t.answer = t.answer, answer
        if not self._awaiting_answer and before is not None and before.outcome != answer.outcome:
            self.kick()  # e.g. the Identity became ready: go on now

    def _enforced(self) -> bool:
        """Whether this run checks the tenancy mapping (True from its first pass run by this code)."""
        t = self.tenancy
        if not t.enforced and (
            patches.patched(PATCH_TENANCY) or workflow.patched(f"{PATCH_TENANCY}@{self.st.passes}")
        ):
            t.enforced = True
        return t.enforced

    async def where(self, spec: CloudSpecT, *, deleting: bool) -> Where | None:
        if spec.project is not None:  # T1
            if self._enforced():
                ns, p = self.st.ref.namespace, spec.project
                verdict = await call_local(
                    tenancy_io.PROJECT_ALLOWED,
                    tenancy_io.ProjectRequest(namespace=ns, project=p.name, domain=p.domain),
                    summary=f"check the tenancy mapping allows project {p.domain}/{p.name} in namespace {ns}",
                )
                if not verdict.allowed and deleting:
                    # Never a call where the mapping does not allow it, not even a delete: nothing was made
                    # there through this path (or the operator withdrew it, and owns what is left).
                    return None
                if not verdict.allowed:
                    raise PassFailed(verdict.message, reason=AvailableReason.FORBIDDEN.value, retry=False)
            return Where(project=spec.project.name, domain=spec.project.domain)
        assert spec.identity_ref is not None
        answer = self._fresh_answer() or await self._ask(spec.identity_ref.name, deleting)  # T2, T3
        if answer is None:
            return None  # T4 (deleting)
        if answer.outcome == "ready" and answer.credential is not None and answer.project is not None:
            info = answer.project
            return Where(project=info.name, domain=info.domain, credential=answer.credential)
        if deleting and (answer.outcome == "refused" or not answer.backed):
            return None  # T5, T6: no credential was ever handed to this resource, or no project exists
        if answer.outcome == "refused":  # T6
            raise PassFailed(answer.message, reason=AvailableReason.PROVISIONING.value, retry=False)
        reason = AvailableReason.DEPROVISIONING if deleting else AvailableReason.PROVISIONING
        raise PassFailed(answer.message, reason=reason.value)  # T5

    async def plan_where(self, spec: CloudSpecT) -> Where:
        """`where` for a plan walk (workflows/plan.py): the same mapping check for spec.project (a read),
        and for an identityRef the answer this resource already holds; it asks no Identity, so a plan never
        registers a user."""
        if spec.project is not None:
            p, ns = spec.project, self.st.ref.namespace
            verdict = await call_local(
                tenancy_io.PROJECT_ALLOWED,
                tenancy_io.ProjectRequest(namespace=ns, project=p.name, domain=p.domain),
                summary=f"plan: check the tenancy mapping allows project {p.domain}/{p.name} in namespace {ns}",
            )
            if not verdict.allowed:
                raise PlanStopped(f"T1: {verdict.message}")
            return Where(project=p.name, domain=p.domain)
        assert spec.identity_ref is not None
        answer, current = self.tenancy.answer, self._spec_identity()
        if (
            answer is None
            or answer.outcome != "ready"
            or answer.credential is None
            or answer.project is None
            or current != spec.identity_ref.name
        ):
            raise PlanStopped(
                f"T3: Identity {spec.identity_ref.name} has not answered this resource yet: apply it first "
                "(a plan never registers a resource with an Identity)"
            )
        return Where(project=answer.project.name, domain=answer.project.domain, credential=answer.credential)

    def _spec_identity(self) -> str | None:
        """The identityRef of the spec this resource runs with (the one its tenancy answer is for)."""
        d = self.st.desired
        ref = (d.spec.get("identityRef") or {}) if d is not None else {}
        return str(ref.get("name")) if isinstance(ref, dict) and ref.get("name") else None

    def _fresh_answer(self) -> io.IdentityAnswer | None:
        t = self.tenancy
        if t.answer is None or t.answer.outcome != "ready" or t.asked_at is None:
            return None
        if workflow.now() - t.asked_at >= timedelta(seconds=self.st.config.resync_seconds):
            return None  # asked again once per resync interval: re-registers after any lost state
        return t.answer

    def _user(self) -> io.IdentityUser:
        ref = self.st.ref
        return io.IdentityUser(
            workflow_id=workflow.info().workflow_id, kind=ref.kind, name=ref.name, uid=ref.uid
        )

    async def _ask(self, name: str, deleting: bool) -> io.IdentityAnswer | None:
        """T3: find the Identity, tell its workflow this resource uses it, wait for the answer."""
        ns, t = self.st.ref.namespace, self.tenancy
        found = await call_local(
            io.FIND_IDENTITY, io.FindIdentity(namespace=ns, name=name), summary=f"find Identity {name}"
        )
        if not found.exists or found.uid is None:
            if deleting:
                return None  # T4: it is gone, or never was: no credential was ever handed out
            raise PassFailed(
                f"Identity {name} does not exist in namespace {ns} yet; create it — retrying",
                reason=AvailableReason.PROVISIONING.value,
            )
        if found.uid != t.identity_uid:
            t.identity_uid, t.answer = found.uid, None
        t.seq += 1
        seq = t.seq
        try:
            await workflow.get_external_workflow_handle(workflow_id("Identity", ns, name, found.uid)).signal(
                io.SIGNAL_USE, io.IdentityUse(user=self._user(), seq=seq)
            )
        except FailureError:
            raise PassFailed(
                f"Identity {name} is not being reconciled yet — retrying",
                reason=AvailableReason.PROVISIONING.value,
            ) from None
        self._awaiting_answer = True
        try:
            await workflow.wait_condition(
                lambda: t.answer is not None and t.answer.seq >= seq,
                timeout=ANSWER_TIMEOUT,
                timeout_summary=f"wait for Identity {name} to answer",
            )
        except TimeoutError:
            raise PassFailed(f"no answer from Identity {name} yet — retrying") from None
        finally:
            self._awaiting_answer = False
        t.asked_at = workflow.now()
        return t.answer

    async def on_deleted(self, spec: CloudSpecT) -> None:
        """The resource is gone: it no longer holds its Identity back from being deleted."""
        t = self.tenancy
        if spec.identity_ref is None or t.identity_uid is None:
            return
        ref = self.st.ref
        handle = workflow.get_external_workflow_handle(
            workflow_id("Identity", ref.namespace, spec.identity_ref.name, t.identity_uid)
        )
        with contextlib.suppress(FailureError):  # the Identity is gone already
            await handle.signal(io.SIGNAL_RELEASE, io.IdentityRelease(user=self._user()))
