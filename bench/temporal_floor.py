"""Benchmark: the floor Temporal itself sets under P3 — what the smallest durable shape costs on this machine.

P3 compares osprov against a plain openstacksdk loop. Whatever osprov does, a durable reconcile needs at
least one workflow per resource whose cloud calls are recorded activities. This measures exactly that
and nothing of osprov: N workflows (Projects and Groups alternately, as P3), each running one activity
that makes the plain loop's two Keystone calls (exact lookup, create), on the same dev server and
Keystone, with the worker's 4 activity threads, no sandbox, no status, no Kubernetes. Printed next to
the plain loop measured in the same run, with the Temporal dev server's CPU: if the floor alone exceeds
P3's 1.5x, the goal cannot be met on this machine by any design that keeps one durable workflow per
resource (docs/benchmarks.md).

The second figure is the floor of osprov's ownership guarantee: one writer per Keystone object, with a
durable record of what osprov created, is a second workflow per resource (the object's). Per resource: a
claimant workflow declares its object by signal-with-start from a local activity and waits for the
answer; the object's workflow runs the lookup and create as a recorded activity (the intent to create is
in history before the POST, so a crash cannot turn osprov's own object into a "found" one) and answers
with a local activity that signals the claimant. Nothing else of osprov: no status, no Kubernetes, no
sandbox, no timers, no sweep, no parent watch.

    .venv/bin/python -m bench.temporal_floor [--count 500]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from bench.identity_common import cleanup_keystone, identity, service_cpu, stack_env, suffix
from bench.identity_scale import KINDS, run_plain_side
from bench.report import Figure, print_figures

_local = threading.local()


def _ks() -> Any:
    if getattr(_local, "ks", None) is None:
        _local.ks = identity(stack_env())
    return _local.ks


@activity.defn(name="floor.lookup_create")
def lookup_create(args: list[str]) -> str:
    """The plain loop's two calls for one object: exact lookup, create if absent."""
    kind, name, domain_id = args
    ks = _ks()
    if kind == "Project":
        found = [p for p in ks.projects(name=name, domain_id=domain_id) if p.name == name]
        return str(found[0].id if found else ks.create_project(name=name, domain_id=domain_id).id)
    found = [g for g in ks.groups(name=name, domain_id=domain_id) if g.name == name]
    return str(found[0].id if found else ks.create_group(name=name, domain_id=domain_id).id)


class Messages:
    """The ownership floor's two local activities: the claim (signal-with-start of the object's workflow)
    and the answer (a signal to the claimant), both through the worker's own client."""

    def __init__(self, client: Client, queue: str, tag: str) -> None:
        self.client, self.queue, self.tag = client, queue, tag

    @activity.defn(name="floor.claim")
    async def claim(self, args: list[str]) -> None:
        claimant, kind, name, domain_id = args
        await self.client.start_workflow(
            "FloorObject",
            [kind, name, domain_id],
            id=f"floor-object/{self.tag}/{kind}/{name}",
            task_queue=self.queue,
            start_signal="claim",
            start_signal_args=[claimant],
        )

    @activity.defn(name="floor.answer")
    async def answer(self, args: list[str]) -> None:
        claimant, object_id = args
        await self.client.get_workflow_handle(claimant).signal("answer", object_id)


LOCAL = timedelta(seconds=10)


@workflow.defn(name="FloorClaimant")
class FloorClaimant:
    def __init__(self) -> None:
        self.object_id: str | None = None

    @workflow.signal
    def answer(self, object_id: str) -> None:
        self.object_id = object_id

    @workflow.run
    async def run(self, args: list[str]) -> str:
        claim = [workflow.info().workflow_id, *args]
        await workflow.execute_local_activity("floor.claim", claim, start_to_close_timeout=LOCAL)
        await workflow.wait_condition(lambda: self.object_id is not None)
        return str(self.object_id)


@workflow.defn(name="FloorObject")
class FloorObject:
    def __init__(self) -> None:
        self.claimant: str | None = None

    @workflow.signal
    def claim(self, claimant: str) -> None:
        self.claimant = claimant

    @workflow.run
    async def run(self, args: list[str]) -> str:
        await workflow.wait_condition(lambda: self.claimant is not None)
        object_id = str(
            await workflow.execute_activity(
                "floor.lookup_create", args, start_to_close_timeout=timedelta(seconds=60)
            )
        )
        answer = [str(self.claimant), object_id]
        await workflow.execute_local_activity("floor.answer", answer, start_to_close_timeout=LOCAL)
        return object_id


@workflow.defn(name="FloorResource")
class FloorResource:
    @workflow.run
    async def run(self, args: list[str]) -> str:
        return str(
            await workflow.execute_activity(
                "floor.lookup_create", args, start_to_close_timeout=timedelta(seconds=60)
            )
        )


async def run_floor_side(
    count: int,
    tag: str,
    ownership: bool = False,
    window: Callable[[], AbstractContextManager[Any]] = nullcontext,
) -> tuple[float, dict[str, Any]]:
    """`count` resources as FloorResource workflows, or with `ownership` as FloorClaimant workflows (each
    starting its FloorObject): seconds until every resource's workflow has its object's ID. `window`:
    entered around that timed part alone (a profiler's recording: bench/server_profile.py)."""
    env = stack_env()
    domain = identity(env).create_domain(name=f"floor-{tag}")
    client = await Client.connect(env.temporal_address, namespace=env.temporal_namespace)
    queue = f"floor-{tag}"
    messages = Messages(client, queue, tag)
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    temporal0 = service_cpu("temporal")
    with ThreadPoolExecutor(4) as threads:
        async with Worker(
            client,
            task_queue=queue,
            workflows=[FloorResource, FloorClaimant, FloorObject],
            activities=[lookup_create, messages.claim, messages.answer],
            activity_executor=threads,
            workflow_runner=UnsandboxedWorkflowRunner(),
        ):
            with window():
                start = time.monotonic()
                handles = [
                    await client.start_workflow(
                        "FloorClaimant" if ownership else "FloorResource",
                        [KINDS[i % 2], f"{KINDS[i % 2].lower()}-{i}", str(domain.id)],
                        id=f"floor/{tag}/{i}",
                        task_queue=queue,
                    )
                    for i in range(count)
                ]
                await asyncio.gather(*(h.result() for h in handles))
                elapsed = time.monotonic() - start
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    worker = (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)
    temporal = service_cpu("temporal") - temporal0
    events = len((await handles[0].fetch_history()).events)
    extra: dict[str, Any] = {"workflows": count * (2 if ownership else 1)}
    if ownership:
        kind, name = KINDS[0], f"{KINDS[0].lower()}-0"
        object_events = len(
            (await client.get_workflow_handle(f"floor-object/{tag}/{kind}/{name}").fetch_history()).events
        )
        extra |= {"history events per resource": events + object_events}
    else:
        extra |= {"history events per workflow": events}
    return elapsed, extra | {
        "worker CPU s (this process)": round(worker),
        "Temporal dev server CPU s": round(temporal),
        "CPU ms per resource: Temporal dev server": round(1000 * temporal / count),
        "CPU ms per resource: the floor's worker": round(1000 * worker / count),
    }


def measure(count: int = 500) -> list[Figure]:
    """The floors of P3, each against the plain loop measured right after it: one workflow + one activity
    per resource, and the ownership shape (two workflows per resource)."""
    ks = identity(stack_env())
    figures = []
    for ownership, what, goal in (
        (
            False,
            f"floor: {count} bare workflows, one activity each (no osprov)",
            "ratio <= 1.5 (the floor any durable design pays here)",
        ),
        (
            True,
            f"floor: {count} resources as claimant + object workflow pairs (no osprov)",
            "ratio <= 1.5 (the floor of one durable writer per Keystone object)",
        ),
    ):
        tag = suffix()
        try:
            floor, extra = asyncio.run(run_floor_side(count, tag, ownership))
            plain, plain_extra = run_plain_side(count, tag)
        finally:
            cleanup_keystone(ks, tag)
        figures.append(
            Figure(
                "P3",
                what,
                round(floor, 1),
                round(plain, 1),
                goal,
                baseline="plain openstacksdk loop (exact lookup + create, serial)",
                extra=extra | plain_extra,
            ).judged(1.5)
        )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.temporal_floor")
    parser.add_argument("--count", type=int, default=500)
    print_figures(measure(parser.parse_args().count))


if __name__ == "__main__":
    main()
