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

from bench.identity_common import (
    WRITE_ACTIVITIES,
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
from devenv.openstack.infra import mysql_exec


def failed_logins(domain_name: str) -> tuple[int, int]:
    """(users, sum of Keystone's failed-login counters) over the local users of a domain."""
    out = mysql_exec(
        "SELECT COUNT(*), IFNULL(SUM(IFNULL(lu.failed_auth_count, 0)), 0) FROM local_user lu JOIN project d "
        f"ON d.id = lu.domain_id WHERE d.is_domain = 1 AND d.name = '{domain_name}';",
        "keystone",
    )
    users, failed = out.strip().split("\t")
    return int(users), int(failed)


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.identity_steady")
    parser.add_argument("--resync", type=float, default=10.0, help="forced resync interval, seconds")
    parser.add_argument("--ticks", type=int, default=3, help="resync ticks to measure")
    args = parser.parse_args()
    env = stack_env()
    ks = identity(env)
    tag = suffix()
    try:
        with osprov_via_proxy(env, resync_seconds=args.resync) as (osprov, proxy):
            resources = apply_example(osprov, "cinder", tag)
            wait(lambda: all_ready(osprov, resources), "the Cinder example Ready", 300)
            time.sleep(args.resync * 1.5)  # benchmark pacing (not synchronisation): past the first resync
            requests0 = proxy.connections_seen
            _, events0, writes0 = history_stats(env, osprov.namespace, WRITE_ACTIVITIES)
            probes0 = history_stats(env, osprov.namespace, {"keystone.probe_password"})[2]
            cpu0, t0 = worker_cpu(osprov), time.monotonic()
            time.sleep(args.resync * args.ticks)  # the measured window: nothing changes, only resyncs run
            elapsed = time.monotonic() - t0
            cpu = worker_cpu(osprov) - cpu0
            requests = proxy.connections_seen - requests0
            workflows, events1, writes1 = history_stats(env, osprov.namespace, WRITE_ACTIVITIES)
            probes = history_stats(env, osprov.namespace, {"keystone.probe_password"})[2] - probes0
            users, failed = failed_logins(f"service-{tag}")
            ticks = elapsed / args.resync
            per = len(resources) * ticks
            print(
                f"steady state, {len(resources)} resources ({workflows} workflows), resync {args.resync:.0f} s, "
                f"{elapsed:.0f} s measured ({ticks:.1f} ticks):"
            )
            print(f"  Keystone requests per resource per tick: {requests / per:.2f}  (total {requests})")
            print(
                f"  Keystone writes per resource per tick:   {(writes1 - writes0) / per:.2f}  "
                f"(total {writes1 - writes0})"
            )
            print(
                f"  password probes (logins) in the window:  {probes}; failed logins (Keystone's count over "
                f"{users} users): {failed}"
            )
            print(f"  history events per resource per tick:    {(events1 - events0) / per:.1f}")
            print(f"  worker CPU: {cpu:.1f} s over {elapsed:.0f} s ({100 * cpu / elapsed:.1f}% of one core)")
    finally:
        cleanup_keystone(ks, tag)


if __name__ == "__main__":
    main()
