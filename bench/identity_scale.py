"""Benchmark: N identity resources to Ready on this machine, against a plain openstacksdk loop.

osprov: one Domain plus N resources (Projects and Groups alternately, in that domain) applied through the
Kubernetes API; timed from the first apply to every Ready condition True. Printed: time, Keystone
requests per resource (counting proxy; Keystone answers Connection: close), history events per
workflow, worker CPU. The plain loop does the minimum the Keystone API needs — one exact lookup and
one create per object — serially with openstacksdk, in the same run, on other names.

    .venv/bin/python -m bench.identity_scale [--counts 500 2000] [--threads 4]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from bench.identity_common import (
    CORES,
    cleanup_keystone,
    history_stats,
    identity,
    osprov_via_proxy,
    sdk_core_share,
    service_cpu,
    stack_env,
    suffix,
    wait,
    worker_cpu,
    worker_peak_rss_mib,
    worker_threads,
)
from bench.observe import ReadyWatch, ready_at_any_generation
from bench.report import Figure, print_figures
from osprov.runtime.settings import Settings

KINDS = ("Project", "Group")


def run_osprov_side(
    count: int, threads: int, tag: str, window: Callable[[], AbstractContextManager[Any]] = nullcontext
) -> tuple[float, dict[str, Any]]:
    """`window`: entered around the timed part alone, from the first apply to the last Ready (a profiler's
    recording: bench/server_profile.py)."""
    env = stack_env()
    with osprov_via_proxy(env, resync_seconds=3600, threads=threads) as (osprov, proxy):
        domain = f"scale-{tag}"
        osprov.apply("Domain", "scale", {"name": domain})
        wait(
            lambda: bool((osprov.condition("Domain", "scale") or {}).get("status") == "True"),
            "the domain",
            120,
        )
        requests0, cpu0, threads0 = proxy.connections_seen, worker_cpu(osprov), worker_threads(osprov)
        temporal0, keystone0, kube0, db0 = (
            service_cpu(s) for s in ("temporal", "keystone", "kube", "mariadb")
        )
        with window(), ReadyWatch(osprov, KINDS, ready_at_any_generation) as ready:
            start = time.monotonic()
            for i in range(count):
                kind = KINDS[i % 2]
                osprov.apply(kind, f"r{i}", {"name": f"{kind.lower()}-{i}", "domain": domain})
            applied = time.monotonic() - start
            deadline = max(3600.0, 1.2 * count)  # 10,000 takes over an hour on this machine
            keys = [(KINDS[i % 2], f"r{i}") for i in range(count)]
            elapsed = ready.wait_ready(keys, f"{count} resources Ready", deadline) - start
        cpu = worker_cpu(osprov) - cpu0
        core_share = sdk_core_share(threads0, worker_threads(osprov))
        temporal = service_cpu("temporal") - temporal0
        keystone, kube, db = (
            service_cpu(s) - before
            for s, before in (("keystone", keystone0), ("kube", kube0), ("mariadb", db0))
        )
        requests = proxy.connections_seen - requests0
        peak_rss = worker_peak_rss_mib(osprov)
        longest: dict[str, Any] = {}
        workflows, events, _ = history_stats(env, osprov.namespace, set(), longest)
    return elapsed, {
        "applying alone s": round(applied),
        "resources/s": round(count / elapsed, 1),
        "Keystone requests per resource": round(requests / count, 1),
        "history events per workflow": round(events / workflows, 1),
        "worker CPU s": round(cpu),
        "Temporal dev server CPU s": round(temporal),
        # Where the two cores went, per resource (the plain loop's own figure is printed beside it):
        "CPU ms per resource: Temporal dev server": round(1000 * temporal / count),
        "CPU ms per resource: Keystone": round(1000 * keystone / count),
        "CPU ms per resource: osprov worker": round(1000 * cpu / count),
        "CPU ms per resource: Kubernetes API": round(1000 * kube / count),
        "CPU ms per resource: MariaDB": round(1000 * db / count),
        "worker CPU % on sdk-core's threads (Temporal's Rust core)": round(100 * core_share),
        # What the processes other than the worker spent, as wall time on this machine's cores: a run
        # cannot be shorter, whatever the worker does (measure() sets it beside the plain loop).
        "others' CPU over the cores s": round((temporal + keystone + kube + db) / CORES, 1),
        "worker peak RSS MiB": round(peak_rss),
        "longest history events": longest.get("events", 0),
        "longest history KiB": round(longest.get("bytes", 0) / 1024),
        "longest history kind": longest.get("kind", ""),
        "workflows": workflows,
        "worker workflow cache": Settings().workflow_cache,  # the worker's, from the same environment
    }


def run_plain_side(count: int, tag: str) -> tuple[float, dict[str, Any]]:
    """The API minimum: one exact lookup and one create per object, serially."""
    env = stack_env()
    ks = identity(env)
    domain = ks.create_domain(name=f"plain-{tag}")
    keystone0, client0 = service_cpu("keystone"), time.process_time()
    start = time.monotonic()
    for i in range(count):
        name = f"{KINDS[i % 2].lower()}-{i}"
        if i % 2 == 0:
            if not [p for p in ks.projects(name=name, domain_id=domain.id) if p.name == name]:
                ks.create_project(name=name, domain_id=domain.id)
        elif not [g for g in ks.groups(name=name, domain_id=domain.id) if g.name == name]:
            ks.create_group(name=name, domain_id=domain.id)
    elapsed = time.monotonic() - start
    return elapsed, {
        "plain loop CPU ms per resource: Keystone": round(
            1000 * (service_cpu("keystone") - keystone0) / count
        ),
        "plain loop CPU ms per resource: the script": round(1000 * (time.process_time() - client0) / count),
    }


def measure(counts: list[int], threads: int = 4) -> list[Figure]:
    """P3: N identity resources -> Ready against the plain lookup+create loop, one figure per N."""
    ks = identity(stack_env())
    figures = []
    for count in counts:
        tag = suffix()
        try:
            ours, extra = run_osprov_side(count, threads, tag)
            plain, plain_extra = run_plain_side(count, tag)
        finally:
            cleanup_keystone(ks, tag)
        figure = Figure(
            "P3",
            f"{count} Projects/Groups -> Ready",
            round(ours, 1),
            round(plain, 1),
            "ratio <= 1.5",
            baseline="plain openstacksdk loop (exact lookup + create, serial)",
            extra=extra
            | plain_extra
            | {
                "worker activity threads": threads,
                "others' CPU over the cores, as a ratio to the plain loop": round(
                    extra["others' CPU over the cores s"] / plain, 2
                ),
            },
        ).judged(1.5)
        figures.append(figure)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.identity_scale")
    parser.add_argument("--counts", type=int, nargs="+", default=[500, 2000])
    parser.add_argument("--threads", type=int, default=4, help="worker activity threads")
    args = parser.parse_args()
    print_figures(measure(args.counts, args.threads))


if __name__ == "__main__":
    main()
