"""The region inventory's Temporal Schedules, created or updated by every worker at start.

One Schedule per inventory (Flavor, VolumeClass, Image) and task queue, ID `osprov-inventory/<Kind>/<task
queue>`, running its workflow every OSPROV_INVENTORY_INTERVAL_SECONDS (overlap: skip, so runs never pile
up), listed in the Web UI's Schedules page and each run in its workflow list (OsprovKind=<Kind>Inventory).
Idempotent: a Schedule that exists is updated to what this worker's settings say (the last worker to start
wins; all replicas share one configuration), and triggered once so a changed setting shows at once.
Without OSPROV_INVENTORY_CONFIG the worker touches no Schedule (docs/inventory.md: turning it off).
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
    ScheduleUpdate,
    ScheduleUpdateInput,
)
from temporalio.common import SearchAttributePair, TypedSearchAttributes

from osprov.api import search_attributes as sa
from osprov.api.inventory_io import InventoryRun
from osprov.runtime import logs
from osprov.runtime.settings import Settings
from osprov.workflows.inventory.workflow import INVENTORY_WORKFLOWS

log = logs.log("osprov.worker.schedules")

# A run lists one cloud service and writes what changed: minutes at most even for large clouds.
RUN_TIMEOUT = timedelta(minutes=10)


def schedule_id(kind: str, task_queue: str) -> str:
    return f"osprov-inventory/{kind}/{task_queue}"


def schedule_for(kind: str, settings: Settings) -> Schedule:
    workflow = INVENTORY_WORKFLOWS[kind]
    every = timedelta(seconds=settings.inventory_interval_seconds)
    return Schedule(
        action=ScheduleActionStartWorkflow(
            workflow.run,  # type: ignore[attr-defined]
            InventoryRun(config=settings.inventory_config),
            id=schedule_id(kind, settings.task_queue),  # Temporal appends each run's start time
            task_queue=settings.task_queue,
            execution_timeout=RUN_TIMEOUT,
            typed_search_attributes=TypedSearchAttributes([SearchAttributePair(sa.KIND, f"{kind}Inventory")]),
            static_summary=f"{kind} inventory for InventoryConfig {settings.inventory_config}",
        ),
        spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=every)]),
        # Missed ticks (Temporal was down) are not caught up one by one: the next tick does it all.
        policy=SchedulePolicy(
            overlap=ScheduleOverlapPolicy.SKIP, catchup_window=max(every, timedelta(minutes=1))
        ),
        state=ScheduleState(note="osprov: created and updated by the worker at start (worker/schedules.py)"),
    )


async def ensure(client: Client, settings: Settings) -> list[str]:
    """Create or update the inventory Schedules; returns their IDs (none when the inventory is off)."""
    if not settings.inventory_config:
        return []
    ids = []
    for kind in INVENTORY_WORKFLOWS:
        wanted, sid = schedule_for(kind, settings), schedule_id(kind, settings.task_queue)
        try:
            await client.create_schedule(sid, wanted, trigger_immediately=True)
            log.info("inventory schedule created", schedule=sid)
        except ScheduleAlreadyRunningError:
            handle = client.get_schedule_handle(sid)

            def replace(_: ScheduleUpdateInput, wanted: Schedule = wanted) -> ScheduleUpdate:
                return ScheduleUpdate(schedule=wanted)

            await handle.update(replace)
            await handle.trigger()  # overlap skip: no second run if one is going
            log.info("inventory schedule updated", schedule=sid)
        ids.append(sid)
    return ids
