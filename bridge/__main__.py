"""`osprov bridge`: watches the custom resources and signals one workflow per resource.

It never calls OpenStack and never writes status. Any number of replicas run; the one holding the
Lease (bridge/leader.py) leads a term (bridge/term.py): it lists, watches and signals. The others are
standbys that only try to take the Lease. A leader that cannot renew its Lease in time is fenced (it
stops signalling before another replica can take over) and becomes a candidate again; SIGTERM fences,
then releases the Lease so a standby takes over at once. Health: bridge/health.py.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import sys
import uuid
from collections.abc import Callable, Coroutine
from typing import Any

from osprov.api import registry
from osprov.api.messages import EntityConfig
from osprov.bridge.dispatch import TemporalSignaller
from osprov.bridge.health import BridgeHealth
from osprov.bridge.leader import Election, ElectionConfig, LeaseLock
from osprov.bridge.term import Term
from osprov.runtime import health as health_server
from osprov.runtime import kube, logs, metrics
from osprov.runtime.settings import Settings
from osprov.runtime.temporal import connect

log = logs.log("osprov.bridge")


def election_config(settings: Settings) -> ElectionConfig:
    # A new identity per process (client-go's hostname_uuid): a restarted bridge never mistakes the
    # Lease its previous incarnation held for its own.
    return ElectionConfig(
        namespace=settings.lease_namespace or settings.namespaces[0],
        name=settings.lease_name,
        identity=f"{socket.gethostname()}_{uuid.uuid4().hex[:12]}",
        lease_duration_s=settings.lease_duration_seconds,
        renew_deadline_s=settings.lease_renew_deadline_seconds,
        retry_period_s=settings.lease_retry_period_seconds,
    )


async def run(settings: Settings) -> None:
    temporal = await connect(settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    config = election_config(settings)
    health = BridgeHealth(config.identity, settings.progress_window_seconds)
    election = Election(
        LeaseLock(kube.api_client("osprov-bridge"), config), on_attempt=health.election_attempt
    )
    runner = None
    if settings.health_port:
        runner = await health_server.serve(settings.health_port, health.live, health.ready)
    served = settings.kinds or [i.kind for i in registry.ALL_KINDS]
    signaller = TemporalSignaller(
        temporal,
        settings.task_queue,
        EntityConfig(resync_seconds=settings.resync_seconds, keystone_name=settings.keystone_name),
    )
    api = kube.api_client("osprov-bridge")

    def new_term() -> Term:
        return Term(
            kinds=[registry.kind_info(k) for k in served],
            namespaces=settings.namespaces,
            keystone_name=settings.keystone_name,
            api=api,
            signaller=signaller,
            may_signal=election.may_act,
            health=health,
            meter=metrics.meter_of(temporal),
            watch_timeout_s=int(min(300, settings.progress_window_seconds / 2)),
            approval_namespaces=tuple(settings.approval_namespaces),
        )

    try:
        await lead_while_elected(election, new_term, stop)
    finally:
        if runner is not None:
            await runner.cleanup()


async def _first(*coros: Coroutine[Any, Any, object]) -> set[int]:
    """Run the coroutines until one finishes; cancel the others. Returns the indexes of those done."""
    tasks = [asyncio.create_task(c) for c in coros]
    done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    for task in tasks:
        if task not in done:
            task.cancel()
    for task in done:
        task.result()  # a term or the election that failed by itself: raise (the process exits)
    return {i for i, t in enumerate(tasks) if t in done}


async def lead_while_elected(election: Election, new_term: Callable[[], Term], stop: asyncio.Event) -> None:
    """Candidate, leader for one term, fenced, candidate again … until stop: then fence and release."""
    try:
        while not stop.is_set():
            if 0 not in await _first(election.acquire(), stop.wait()):
                return
            term = new_term()
            try:
                await _first(election.hold(), stop.wait(), term.run())
            finally:
                term.fence()  # first: nothing may be signalled once the Lease could be another's
            if not stop.is_set():
                log.warning("fenced: stopped signalling; a candidate again", lease=election.config.name)
    finally:
        await election.release()


def main(argv: list[str] | None = None) -> int:
    settings = Settings()
    logs.configure(settings.log_level, component="bridge")
    asyncio.run(run(settings))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
