"""Approval gates: a destructive step waits for an explicit approval of exactly that change.

Opt-in per resource (spec.approvalPolicy manual) or per namespace by the operator (OSPROV_APPROVAL_NAMESPACES:
the bridge marks each change `gated`, so a resource author cannot lift it). A gated step — a rebuild or a
resize before its marker is armed, a deletion before the finalizer deletes anything — asks `Gate.passes`.
The answer is yes when the approval names this action at the generation being applied: the annotation
osprov.osh.openstack.org/approve=ACTION:GENERATION, or `osprov approve` (the Temporal Update `approve`,
validated against what is pending). Otherwise the change is recorded as pending and the kind ends its pass
with `waiting()`: the ready condition says AwaitingApproval and names the token, and the loop records the
transition as an Event. An approval for another action or an older generation approves nothing; a new
generation needs a new approval. Nothing is called on the cloud while a step waits.

A gate adds commands only to runs whose resource requires approval (a field or a namespace older runs
never had), so existing histories replay unchanged.
"""

from __future__ import annotations

from typing import Any, Protocol

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from osprov.api.common import ApprovalPolicy, CommonSpec
    from osprov.api.messages import ConditionState, EntityState
    from osprov.api.operations import (
        APPROVE,
        AWAITING_APPROVAL_REASON,
        PendingApproval,
        approval_token,
    )
    from osprov.api.registry import KindInfo


class Gated(Protocol):
    """What a gate uses of the entity loop (workflows/entity.py)."""

    @property
    def st(self) -> EntityState[Any]: ...
    @property
    def info(self) -> KindInfo: ...
    def set_step(self, step: str) -> None: ...


def required(spec: CommonSpec, gated: bool) -> bool:
    return gated or spec.approval_policy == ApprovalPolicy.MANUAL


def how_to_approve(pending: PendingApproval, kind: str, namespace: str, name: str) -> str:
    return (
        f"{pending.what} awaits approval: annotate {APPROVE}={pending.token} or run "
        f"`osprov approve {kind}/{name} -n {namespace}`"
    )


class Gate:
    def __init__(self, entity: Gated) -> None:
        self.e = entity

    @property
    def pending(self) -> PendingApproval | None:
        return self.e.st.ops.pending_approval

    def passes(self, spec: CommonSpec, action: str, what: str) -> bool:
        """Whether the destructive `action` may run now; if not, it is recorded as pending (`what`: the
        change in words, user-safe)."""
        change = self.e.st.desired
        assert change is not None
        ops = self.e.st.ops
        if not required(spec, change.gated):
            ops.pending_approval = None
            return True
        token = approval_token(action, change.generation)
        if change.annotations.get(APPROVE) == token or ops.approved == token:
            ops.pending_approval = None
            return True
        ops.pending_approval = PendingApproval(action=action, generation=change.generation, what=what)
        if ops.approved is not None and ops.approved != token:
            ops.approved = None  # approved an earlier change: it approves nothing now
        return False

    def waiting(self) -> ConditionState:
        """The ready condition while the pending step waits (the pass ends; nothing is called)."""
        pending = self.pending
        assert pending is not None
        ref = self.e.st.ref
        message = how_to_approve(pending, ref.kind, ref.namespace, ref.name)
        self.e.set_step(message)
        return ConditionState.of(self.e.info.ready_condition, False, AWAITING_APPROVAL_REASON, message)

    # ----- the Update `approve` (osprov approve) ------------------------------------------------------
    def validate(self, token: str) -> None:
        """Refuse (before anything is recorded in history) an approval of anything but what is pending."""
        pending = self.pending
        if pending is None:
            raise ApplicationError("nothing awaits approval", type="NothingPending", non_retryable=True)
        if token != pending.token:
            raise ApplicationError(
                f"{pending.what} awaits approval as {pending.token}, not {token}: nothing approved",
                type="NotPending",
                non_retryable=True,
            )

    def approve(self, token: str) -> str:
        pending = self.pending
        assert pending is not None
        self.e.st.ops.approved = token
        return f"approved: {pending.what}"
