"""`osprov bridge`: watches the custom resources and signals one workflow per resource.

It never calls OpenStack and never writes status. Watch threads hand raw events to the asyncio
loop; the Router (single-threaded) decides; dispatch lanes, sharded by UID so one resource's
signals stay in order, call signal-with-start. A restart loses no change: the first snapshot of
every kind is signalled whole (workflows drop what they already applied), and running workflows
whose resource vanished while the bridge was down are told it is gone.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
from typing import Any

from kubernetes import client
from temporalio.client import Client
from temporalio.common import (
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDReusePolicy,
)
from temporalio.service import RPCError, RPCStatusCode

from osprov.api import metrics as names
from osprov.api import registry
from osprov.api import search_attributes as sa
from osprov.api.messages import (
    SIGNAL_RESOURCE_CHANGED,
    SIGNAL_SECRET_CHANGED,
    EntityConfig,
    EntityInput,
    ResourceChange,
    ResourceRef,
    SecretChanged,
    parse_workflow_id,
)
from osprov.bridge.routing import Router
from osprov.bridge.watch import Obj, Target, Watcher
from osprov.runtime import kube, logs, metrics
from osprov.runtime.settings import Settings
from osprov.runtime.temporal import connect

log = logs.log("osprov.bridge")
LANES = 8


class Bridge:
    def __init__(self, settings: Settings, temporal: Client, api: client.ApiClient) -> None:
        self.settings, self.temporal, self.api = settings, temporal, api
        self.router = Router(keystone_name=settings.keystone_name)
        self.config = EntityConfig(
            resync_seconds=settings.resync_seconds, keystone_name=settings.keystone_name
        )
        self.lanes: list[asyncio.Queue[tuple[str, Any]]] = [asyncio.Queue() for _ in range(LANES)]
        self.stop = threading.Event()
        self.loop = asyncio.get_running_loop()
        served = settings.kinds or [i.kind for i in registry.ALL_KINDS]
        self.kinds = [registry.kind_info(k) for k in served]
        self.snapshots_pending = {(i.kind, ns) for i in self.kinds for ns in settings.namespaces}
        self.first_snapshots = asyncio.Event()
        meter = metrics.meter_of(temporal)
        self.events = meter.create_counter(names.BRIDGE_EVENTS, "resource events by what the bridge did")
        self.relists = meter.create_counter(names.BRIDGE_RELISTS, "relists after 410 Gone")

    # ----- from watch threads to the loop -------------------------------------------------------
    def _kind_of(self, target: Target) -> str:
        return next(i.kind for i in self.kinds if i.group == target.group and i.plural == target.plural)

    def _on_snapshot(self, target: Target, items: list[Obj]) -> None:
        self.loop.call_soon_threadsafe(self._snapshot, target, items)

    def _on_event(self, target: Target, kind: str, obj: Obj) -> None:
        self.loop.call_soon_threadsafe(self._event, target, kind, obj)

    # ----- routing (loop thread only) -----------------------------------------------------------
    def _snapshot(self, target: Target, items: list[Obj]) -> None:
        if target.plural == "secrets":
            for obj in items:
                self._secret(obj, deleted=False)
            return
        kind = self._kind_of(target)
        for change in self.router.on_snapshot(kind, target.namespace, items):
            self._enqueue(change.ref.uid, ("change", change))
        if (kind, target.namespace) in self.snapshots_pending:
            self.snapshots_pending.discard((kind, target.namespace))
            self._enqueue(kind, ("orphans", (kind, target.namespace)))
            if not self.snapshots_pending:
                self.first_snapshots.set()

    def _event(self, target: Target, etype: str, obj: Obj) -> None:
        if target.plural == "secrets":
            self._secret(obj, deleted=etype == "DELETED")
            return
        if etype == "ERROR":
            return
        kind = self._kind_of(target)
        change = self.router.on_object(kind, obj, deleted=etype == "DELETED")
        self.events.add(1, {"kind": kind, "action": "dropped" if change is None else "signalled"})
        if change is not None:
            self._enqueue(change.ref.uid, ("change", change))

    def _secret(self, obj: Obj, deleted: bool) -> None:
        for ref, msg in self.router.on_secret(obj, deleted=deleted):
            self._enqueue(ref.uid, ("secret", (ref, msg)))

    def _enqueue(self, key: str, item: tuple[str, Any]) -> None:
        self.lanes[hash(key) % LANES].put_nowait(item)

    # ----- dispatch to Temporal -----------------------------------------------------------------
    async def _lane(self, queue: asyncio.Queue[tuple[str, Any]]) -> None:
        while True:
            what, payload = await queue.get()
            while True:
                try:
                    if what == "change":
                        await self.signal_change(payload)
                    elif what == "secret":
                        await self.signal_secret(*payload)
                    else:
                        await self.signal_orphans(*payload)
                    break
                except RPCError as err:  # Temporal unavailable: hold the event, retry, keep order
                    log.warning("temporal call failed; retrying", error=str(err), what=what)
                    await asyncio.sleep(1.0)

    async def signal_change(self, change: ResourceChange) -> None:
        ref = change.ref
        bound = log.bind(kind=ref.kind, namespace=ref.namespace, name=ref.name, workflow_id=ref.workflow_id)
        if change.gone:
            # Never start a workflow for a resource that no longer exists: signal it if it runs.
            await self._signal_if_running(ref.workflow_id, SIGNAL_RESOURCE_CHANGED, change)
            bound.info("signalled gone", generation=change.generation)
            return
        await self.temporal.start_workflow(
            ref.kind,
            EntityInput(ref=ref, config=self.config),
            id=ref.workflow_id,
            task_queue=self.settings.task_queue,
            start_signal=SIGNAL_RESOURCE_CHANGED,
            start_signal_args=[change],
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
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

    async def signal_secret(self, ref: ResourceRef, msg: SecretChanged) -> None:
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

    async def signal_orphans(self, kind: str, namespace: str) -> None:
        """Running workflows of resources the first snapshot does not have were deleted while we were away."""
        present = self.router.present(kind, namespace)
        query = f"{sa.KIND.name} = '{kind}' AND {sa.NAMESPACE.name} = '{namespace}' AND ExecutionStatus = 'Running'"
        async for wf in self.temporal.list_workflows(query):
            ref = parse_workflow_id(wf.id)
            if ref is not None and ref.uid not in present:
                await self._signal_if_running(
                    wf.id,
                    SIGNAL_RESOURCE_CHANGED,
                    ResourceChange(ref=ref, generation=0, deleting=True, gone=True),
                )
                log.info("signalled gone (deleted while the bridge was away)", workflow_id=wf.id)

    # ----- lifecycle ----------------------------------------------------------------------------
    def _start_watchers(self, targets: list[Target]) -> list[threading.Thread]:
        threads = []
        for target in targets:
            w = Watcher(
                self.api,
                target,
                self._on_snapshot,
                self._on_event,
                self.stop,
                on_relist=lambda t: self.relists.add(1, {"resource": t.plural}),
            )
            t = threading.Thread(target=w.run, name=f"watch-{target.plural}-{target.namespace}", daemon=True)
            t.start()
            threads.append(t)
        return threads

    async def run(self, stop: asyncio.Event) -> None:
        lanes = [asyncio.create_task(self._lane(q)) for q in self.lanes]
        crs = [
            Target(i.group, i.version, i.plural, ns) for i in self.kinds for ns in self.settings.namespaces
        ]
        self._start_watchers(crs)
        # Secrets after the first snapshot of every kind, so each Secret's version finds its Users.
        waiter = asyncio.create_task(self.first_snapshots.wait())
        stopper = asyncio.create_task(stop.wait())
        # (bounded: a kind whose CRD is not installed never snapshots, and Secrets must not wait forever)
        await asyncio.wait([waiter, stopper], return_when=asyncio.FIRST_COMPLETED, timeout=30)
        if not stop.is_set() and any(i.kind == "User" for i in self.kinds):
            self._start_watchers([Target("", "v1", "secrets", ns) for ns in self.settings.namespaces])
        log.info("bridge watching", kinds=[i.kind for i in self.kinds], namespaces=self.settings.namespaces)
        await stop.wait()
        self.stop.set()
        for task in [*lanes, waiter]:
            task.cancel()


def load_kube() -> client.ApiClient:
    return kube.api_client("osprov-bridge")


async def run(settings: Settings) -> None:
    temporal = await connect(settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await Bridge(settings, temporal, load_kube()).run(stop)


def main(argv: list[str] | None = None) -> int:
    settings = Settings()
    logs.configure(settings.log_level, component="bridge")
    asyncio.run(run(settings))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
