"""Benchmark: steady state of the Cinder example (11 resources) — what one resync tick costs per resource.

After everything is Ready (and a first forced resync has passed), the worker runs for a number of resync
ticks with nothing changing. Printed per resource and tick: Keystone HTTP requests (the worker reaches
Keystone through a counting proxy; Keystone answers Connection: close, so connections = requests),
Keystone writes (create/update/delete/grant/password activities in the histories), failed logins
(Keystone's own local_user.failed_auth_count) and Temporal history events.

    .venv/bin/python -m bench.identity_steady [--resync 10] [--ticks 3]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

from bench.identity_common import (
    WRITE_ACTIVITIES,
    StackEnv,
    all_ready,
    apply_example,
    cleanup_keystone,
    history_stats,
    identity,
    osprov_via_proxy,
    stack_env,
    suffix,
    wait,
    worker_cpu,
)
from bench.report import Figure, print_figures
from devenv.openstack.infra import mysql_exec


@dataclass(frozen=True)
class Seen:
    """One read of every history of the run, timed at its midpoint (the reads take seconds)."""

    at: float
    workflows: int
    events: int
    writes: int
    probes: int


def snapshot(env: StackEnv, namespace: str) -> Seen:
    start = time.monotonic()
    workflows, events, writes = history_stats(env, namespace, WRITE_ACTIVITIES)
    probes = history_stats(env, namespace, {"keystone.probe_password"})[2]
    return Seen((start + time.monotonic()) / 2, workflows, events, writes, probes)


def failed_logins(domain_name: str) -> tuple[int, int]:
    """(users, sum of Keystone's failed-login counters) over the local users of a domain."""
    out = mysql_exec(
        "SELECT COUNT(*), IFNULL(SUM(IFNULL(lu.failed_auth_count, 0)), 0) FROM local_user lu JOIN project d "
        f"ON d.id = lu.domain_id WHERE d.is_domain = 1 AND d.name = '{domain_name}';",
        "keystone",
    )
    users, failed = out.strip().split("\t")
    return int(users), int(failed)


def measure(resync: float = 10.0, ticks: int = 3) -> list[Figure]:
    """P2: what one resync tick costs per resource of the converged Cinder example."""
    env = stack_env()
    ks = identity(env)
    tag = suffix()
    try:
        with osprov_via_proxy(env, resync_seconds=resync) as (osprov, proxy):
            resources = apply_example(osprov, "cinder", tag)
            wait(lambda: all_ready(osprov, resources), "the Cinder example Ready", 300)
            time.sleep(resync * 1.5)  # benchmark pacing (not synchronisation): past the first resync
            # Each counter over its own window: reading every history takes seconds, in which the sweep
            # ticks on (a window that counted those ticks but timed only the sleep said 5 ticks were 3).
            seen0 = snapshot(env, osprov.namespace)
            requests0, cpu0, t0 = proxy.connections_seen, worker_cpu(osprov), time.monotonic()
            time.sleep(resync * ticks)  # the measured window: nothing changes, only resyncs run
            requests, cpu = proxy.connections_seen - requests0, worker_cpu(osprov) - cpu0
            elapsed = time.monotonic() - t0
            seen1 = snapshot(env, osprov.namespace)
            users, failed = failed_logins(f"service-{tag}")
    finally:
        cleanup_keystone(ks, tag)
    per = len(resources) * (elapsed / resync)
    per_read = len(resources) * ((seen1.at - seen0.at) / resync)  # between the two reads' midpoints
    probes = seen1.probes - seen0.probes
    counts = {
        "Keystone requests per resource per tick": round(requests / per, 2),
        "Keystone writes per resource per tick": round((seen1.writes - seen0.writes) / per_read, 2),
        "failed logins": failed,
        "history events per resource per tick": round((seen1.events - seen0.events) / per_read, 1),
    }
    met = (
        counts["Keystone requests per resource per tick"] <= 1
        and counts["Keystone writes per resource per tick"] == 0
        and failed == 0
        and counts["history events per resource per tick"] <= 4
    )
    extra = counts | {
        "password probes in the window": probes,
        "users": users,
        "workflows": seen1.workflows,
        "ticks": round(elapsed / resync, 1),
        "worker CPU % of one core": round(100 * cpu / elapsed, 1),
    }
    return [
        Figure(
            "P2",
            f"steady state, {len(resources)} resources, per resync tick",
            None,
            None,
            "<= 1 Keystone request, 0 writes, 0 failed logins, <= 4 history events per resource and tick",
            met=met,
            extra=extra,
        )
    ]


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.identity_steady")
    parser.add_argument("--resync", type=float, default=10.0, help="forced resync interval, seconds")
    parser.add_argument("--ticks", type=int, default=3, help="resync ticks to measure")
    args = parser.parse_args()
    print_figures(measure(args.resync, args.ticks))


if __name__ == "__main__":
    main()
