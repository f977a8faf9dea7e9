"""Benchmark: the floor Temporal itself sets under P3 — what the smallest durable shape costs on this machine.

P3 compares osprov against a plain openstacksdk loop. Whatever osprov does, a durable reconcile needs at
least one workflow per resource whose cloud calls are recorded activities. This measures exactly that
and nothing of osprov: N workflows (Projects and Groups alternately, as P3), each running one activity
that makes the plain loop's two Keystone calls (exact lookup, create), on the same dev server and
Keystone, with the worker's 4 activity threads, no sandbox, no status, no Kubernetes. Printed next to
the plain loop measured in the same run, with the Temporal dev server's CPU: if the floor alone exceeds
P3's 1.5x, the goal cannot be met on this machine by any design that keeps one durable workflow per
resource (docs/benchmarks.md).

    .venv/bin/python -m bench.temporal_floor [--count 500]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import threading
import time
from concurrent.futures import ThreadPoolExecutor
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


@workflow.defn(name="FloorResource")
class FloorResource:
    @workflow.run
    async def run(self, args: list[str]) -> str:
        return str(
            await workflow.execute_activity(
                "floor.lookup_create", args, start_to_close_timeout=timedelta(seconds=60)
            )
        )


async def run_floor_side(count: int, tag: str) -> tuple[float, dict[str, Any]]:
    env = stack_env()
    domain = identity(env).create_domain(name=f"floor-{tag}")
    client = await Client.connect(env.temporal_address, namespace=env.temporal_namespace)
    queue = f"floor-{tag}"
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    temporal0 = service_cpu("temporal")
    with ThreadPoolExecutor(4) as threads:
        async with Worker(
            client,
            task_queue=queue,
            workflows=[FloorResource],
            activities=[lookup_create],
            activity_executor=threads,
            workflow_runner=UnsandboxedWorkflowRunner(),
        ):
            start = time.monotonic()
            handles = [
                await client.start_workflow(
                    FloorResource.run,
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
    events = len((await handles[0].fetch_history()).events)
    return elapsed, {
        "workflows": count,
        "history events per workflow": events,
        "worker CPU s (this process)": round(worker),
        "Temporal dev server CPU s": round(service_cpu("temporal") - temporal0),
    }


def measure(count: int = 500) -> list[Figure]:
    """The floor of P3: one workflow + one activity per resource, against the plain loop in this run."""
    ks = identity(stack_env())
    tag = suffix()
    try:
        floor, extra = asyncio.run(run_floor_side(count, tag))
        plain, _ = run_plain_side(count, tag)
    finally:
        cleanup_keystone(ks, tag)
    return [
        Figure(
            "P3",
            f"floor: {count} bare workflows, one activity each (no osprov)",
            round(floor, 1),
            round(plain, 1),
            "ratio <= 1.5 (the floor any durable design pays here)",
            baseline="plain openstacksdk loop (exact lookup + create, serial)",
            extra=extra,
        ).judged(1.5)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.temporal_floor")
    parser.add_argument("--count", type=int, default=500)
    print_figures(measure(parser.parse_args().count))


if __name__ == "__main__":
    main()
