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
from typing import Any

from bench.identity_common import (
    cleanup_keystone,
    history_stats,
    identity,
    osprov_via_proxy,
    service_cpu,
    stack_env,
    suffix,
    wait,
    worker_cpu,
    worker_peak_rss_mib,
)
from bench.report import Figure, print_figures
from osprov.api.registry import kind_info
from osprov.runtime.settings import Settings
from tests.support.osprov import Osprov

KINDS = ("Project", "Group")


def ready_count(osprov: Osprov) -> int:
    total = 0
    for kind in KINDS:
        info = kind_info(kind)
        listed: dict[str, Any] = osprov.custom.list_namespaced_custom_object(  # type: ignore[assignment]
            info.group, info.version, osprov.namespace, info.plural
        )
        for item in listed["items"]:
            conds = (item.get("status") or {}).get("conditions") or []
            total += any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)
    return total


def run_osprov_side(count: int, threads: int, tag: str) -> tuple[float, dict[str, Any]]:
    env = stack_env()
    with osprov_via_proxy(env, resync_seconds=3600, threads=threads) as (osprov, proxy):
        domain = f"scale-{tag}"
        osprov.apply("Domain", "scale", {"name": domain})
        wait(
            lambda: bool((osprov.condition("Domain", "scale") or {}).get("status") == "True"),
            "the domain",
            120,
        )
        requests0, cpu0 = proxy.connections_seen, worker_cpu(osprov)
        temporal0, keystone0, kube0, db0 = (
            service_cpu(s) for s in ("temporal", "keystone", "kube", "mariadb")
        )
        start = time.monotonic()
        for i in range(count):
            kind = KINDS[i % 2]
            osprov.apply(kind, f"r{i}", {"name": f"{kind.lower()}-{i}", "domain": domain})
        applied = time.monotonic() - start
        wait(lambda: ready_count(osprov) >= count, f"{count} resources Ready", 3600, interval_s=2)
        elapsed = time.monotonic() - start
        cpu = worker_cpu(osprov) - cpu0
        temporal = service_cpu("temporal") - temporal0
        keystone, kube, db = (
            service_cpu(s) - before
            for s, before in (("keystone", keystone0), ("kube", kube0), ("mariadb", db0))
        )
        requests = proxy.connections_seen - requests0
        peak_rss = worker_peak_rss_mib(osprov)
        workflows, events, _ = history_stats(env, osprov.namespace, set())
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
        "worker peak RSS MiB": round(peak_rss),
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
            extra=extra | plain_extra | {"worker activity threads": threads},
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
