"""One leadership term of the bridge: list and watch everything afresh, signal what changed.

A term starts with an empty Router, so its first snapshot of every kind is signalled whole (the
workflows drop what they already applied) and running workflows whose resource vanished while no
bridge was watching are told it is gone: a new leader loses no change made before or during the
failover. Watch threads hand raw events to the asyncio loop; the Router (single-threaded) decides;
dispatch lanes, sharded by UID so one resource's signals stay in order, call Temporal.

Fencing: every Temporal call is preceded by `may_signal()` (false from the instant the Lease's
renewDeadline passed), and `fence()` stops the watch threads and cancels the lanes at once; events
that were already queued are dropped.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from kubernetes import client
from temporalio.common import MetricMeter
from temporalio.service import RPCError

from osprov.api import metrics as names
from osprov.api import registry
from osprov.bridge.dispatch import Signaller
from osprov.bridge.health import BridgeHealth
from osprov.bridge.routing import Router
from osprov.bridge.watch import Obj, Target, Watcher
from osprov.runtime import logs

log = logs.log("osprov.bridge")
LANES = 8
SECRETS_WAIT_S = 30  # Secrets start after every kind's first snapshot, or after this (a CRD may be missing)


class Term:
    def __init__(
        self,
        kinds: list[registry.KindInfo],
        namespaces: list[str],
        keystone_name: str,
        api: client.ApiClient,
        signaller: Signaller,
        may_signal: Callable[[], bool],
        health: BridgeHealth,
        meter: MetricMeter,
        watch_timeout_s: int = 300,
        approval_namespaces: tuple[str, ...] = (),
    ) -> None:
        self.kinds, self.namespaces, self.api = kinds, namespaces, api
        self.signaller, self.may_signal, self.health = signaller, may_signal, health
        self.watch_timeout_s = watch_timeout_s
        self.router = Router(keystone_name=keystone_name, approval_namespaces=approval_namespaces)
        self.lanes: list[asyncio.Queue[tuple[str, Any]]] = [asyncio.Queue() for _ in range(LANES)]
        self.tasks: list[asyncio.Task[None]] = []
        self.watchers: list[Watcher] = []
        self.threads: list[threading.Thread] = []
        self.stop = threading.Event()
        self.fenced = False
        self.loop = asyncio.get_running_loop()
        self.snapshots_pending = {(i.kind, ns) for i in kinds for ns in namespaces}
        self.first_snapshots = asyncio.Event()
        self.events = meter.create_counter(names.BRIDGE_EVENTS, "resource events by what the bridge did")
        self.relists = meter.create_counter(names.BRIDGE_RELISTS, "relists after 410 Gone")

    # ----- from watch threads to the loop -------------------------------------------------------
    def _kind_of(self, target: Target) -> str:
        return next(i.kind for i in self.kinds if i.group == target.group and i.plural == target.plural)

    def _on_snapshot(self, target: Target, items: list[Obj]) -> None:
        if not self.stop.is_set():
            self.loop.call_soon_threadsafe(self._snapshot, target, items)

    def _on_event(self, target: Target, kind: str, obj: Obj) -> None:
        if not self.stop.is_set():
            self.loop.call_soon_threadsafe(self._event, target, kind, obj)

    # ----- routing (loop thread only) -----------------------------------------------------------
    def _snapshot(self, target: Target, items: list[Obj]) -> None:
        if self.fenced:
            return
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
        if self.fenced:
            return
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
    async def _send(self, what: str, payload: Any) -> None:
        if what == "change":
            await self.signaller.change(payload)
        elif what == "secret":
            await self.signaller.secret(*payload)
        else:
            kind, namespace = payload
            await self.signaller.orphans(
                kind, namespace, self.router.present(kind, namespace), self.may_signal
            )

    async def _lane(self, queue: asyncio.Queue[tuple[str, Any]]) -> None:
        while True:
            what, payload = await queue.get()
            while True:
                if not self.may_signal():
                    log.warning("no longer leading: dropping what is left to signal")
                    return
                try:
                    await self._send(what, payload)
                    break
                except RPCError as err:  # Temporal unavailable: hold the event, retry, keep order
                    log.warning("temporal call failed; retrying", error=str(err), what=what)
                    await asyncio.sleep(1.0)

    # ----- lifecycle ----------------------------------------------------------------------------
    def _start_watchers(self, targets: list[Target]) -> None:
        for target in targets:
            w = Watcher(
                self.api,
                target,
                self._on_snapshot,
                self._on_event,
                self.stop,
                watch_timeout_s=self.watch_timeout_s,
                on_relist=lambda t: self.relists.add(1, {"resource": t.plural}),
                on_progress=lambda t, listed: self.health.progress(str(t), listed),
                on_death=lambda t, error: self.health.died(str(t), error),
            )
            self.watchers.append(w)
            thread = threading.Thread(
                target=w.run, name=f"watch-{target.plural}-{target.namespace}", daemon=True
            )
            thread.start()
            self.threads.append(thread)

    async def run(self) -> None:
        """Lead until cancelled (or fenced)."""
        crs = [Target(i.group, i.version, i.plural, ns) for i in self.kinds for ns in self.namespaces]
        secrets = [Target("", "v1", "secrets", ns) for ns in self.namespaces]
        if not any(i.kind == "User" for i in self.kinds):
            secrets = []
        self.health.term_started([str(t) for t in crs + secrets])
        self.tasks = [asyncio.create_task(self._lane(q)) for q in self.lanes]
        self._start_watchers(crs)
        # Secrets after the first snapshot of every kind, so each Secret's version finds its Users.
        try:
            await asyncio.wait_for(self.first_snapshots.wait(), SECRETS_WAIT_S)
        except TimeoutError:
            log.warning(
                "not every kind listed yet; watching Secrets anyway", pending=sorted(self.snapshots_pending)
            )
        self._start_watchers(secrets)
        log.info("bridge watching", kinds=[i.kind for i in self.kinds], namespaces=self.namespaces)
        await asyncio.Event().wait()

    def fence(self) -> None:
        """Stop signalling now: watch threads told to stop (their reads unblocked), lanes cancelled."""
        self.fenced = True
        for w in self.watchers:
            w.close()
        for task in self.tasks:
            task.cancel()
        self.health.term_ended()
