"""The bridge's Temporal calls: signal-with-start a resource's workflow, or signal it if it runs.

Every signal is idempotent at the workflow: a change carries its generation (later-or-equal wins,
deletion is sticky) and a Secret change its resourceVersion, and a workflow reconciles only when its
desired-state fingerprint moved. So a signal sent twice — by a restarted bridge's first list, or by a
new leader after a failover — causes no second cloud write (tests/workflows/test_entity_loop.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from temporalio.client import Client
from temporalio.common import (
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDReusePolicy,
)
from temporalio.service import RPCError, RPCStatusCode

from osprov.api import releases
from osprov.api import search_attributes as sa
from osprov.api.messages import (
    SIGNAL_RESOURCE_CHANGED,
    SIGNAL_SECRET_CHANGED,
    WORKFLOW_TASK_TIMEOUT,
    EntityConfig,
    EntityInput,
    ResourceChange,
    ResourceRef,
    SecretChanged,
    parse_workflow_id,
)
from osprov.runtime import logs

log = logs.log("osprov.bridge")


class Signaller(Protocol):
    async def change(self, change: ResourceChange) -> None: ...
    async def secret(self, ref: ResourceRef, msg: SecretChanged) -> None: ...
    async def orphans(
        self, kind: str, namespace: str, present: set[str], may_act: Callable[[], bool]
    ) -> None: ...


class TemporalSignaller:
    def __init__(self, temporal: Client, task_queue: str, config: EntityConfig) -> None:
        self.temporal, self.task_queue, self.config = temporal, task_queue, config

    async def change(self, change: ResourceChange) -> None:
        ref = change.ref
        bound = log.bind(kind=ref.kind, namespace=ref.namespace, name=ref.name, workflow_id=ref.workflow_id)
        if change.gone:
            # Never start a workflow for a resource that no longer exists: signal it if it runs.
            await self._signal_if_running(ref.workflow_id, SIGNAL_RESOURCE_CHANGED, change)
            bound.info("signalled gone", generation=change.generation)
            return
        await self.temporal.start_workflow(
            ref.kind,
            EntityInput(ref=ref, config=self.config, generation=releases.GENERATION),
            id=ref.workflow_id,
            task_queue=self.task_queue,
            start_signal=SIGNAL_RESOURCE_CHANGED,
            start_signal_args=[change],
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
            task_timeout=WORKFLOW_TASK_TIMEOUT,
            static_summary=f"{ref.kind} {ref.namespace}/{ref.name}",
            static_details=f"uid {ref.uid}",
            search_attributes=TypedSearchAttributes(
                [
                    SearchAttributePair(sa.KIND, ref.kind),
                    SearchAttributePair(sa.NAMESPACE, ref.namespace),
                    SearchAttributePair(sa.NAME, ref.name),
                ]
            ),
        )
        bound.info("signalled change", generation=change.generation, deleting=change.deleting)

    async def secret(self, ref: ResourceRef, msg: SecretChanged) -> None:
        await self._signal_if_running(ref.workflow_id, SIGNAL_SECRET_CHANGED, msg)
        log.info(
            "signalled secret change",
            kind=ref.kind,
            namespace=ref.namespace,
            name=ref.name,
            secret=f"{msg.namespace}/{msg.name}",
        )

    async def _signal_if_running(self, workflow_id: str, name: str, arg: Any) -> None:
        try:
            await self.temporal.get_workflow_handle(workflow_id).signal(name, arg)
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise

    async def orphans(
        self, kind: str, namespace: str, present: set[str], may_act: Callable[[], bool]
    ) -> None:
        """Running workflows of resources the first snapshot does not have were deleted while no bridge
        was watching (`present`: the UIDs the snapshot has). Several signals: each one checks may_act."""
        query = f"{sa.KIND.name} = '{kind}' AND {sa.NAMESPACE.name} = '{namespace}' AND ExecutionStatus = 'Running'"
        async for wf in self.temporal.list_workflows(query):
            if not may_act():
                return
            ref = parse_workflow_id(wf.id)
            if ref is not None and ref.uid not in present:
                await self._signal_if_running(
                    wf.id,
                    SIGNAL_RESOURCE_CHANGED,
                    ResourceChange(ref=ref, generation=0, deleting=True, gone=True),
                )
                log.info("signalled gone (deleted while the bridge was away)", workflow_id=wf.id)
