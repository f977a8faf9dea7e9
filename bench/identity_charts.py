"""Benchmark: the six charts' identity examples (examples/identity/*.yaml: 71 resources and 7 Secrets) applied at
once to a fresh namespace → all Ready, against the ks-user, ks-service and ks-endpoints CLI calls of the six
charts run one chart after another. P1 asks for this figure measured and reported; it has no ratio goal.

"Cold": none of the examples' Keystone objects exist before the apply (names carry this run's suffix) and the
namespace's workflows are new. The worker and bridge are started for the run and have served one warm-up
Domain, as in P1, so the figure times the convergence and not the processes' start.

    .venv/bin/python -m bench.identity_charts
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from bench.identity_cinder import run_calls
from bench.identity_common import (
    CORES,
    all_ready,
    apply_example,
    cleanup_keystone,
    example,
    example_kinds,
    identity,
    localized,
    osprov_via_proxy,
    service_cpu,
    stack_env,
    suffix,
    wait,
    worker_cpu,
)
from bench.observe import ReadyWatch, ready_for_its_generation
from bench.report import Figure, print_figures

CHARTS = ["cinder", "glance", "placement", "nova", "neutron", "heat"]
INTERFACES = ("admin", "internal", "public")  # the order the ks-endpoints job creates them in


def _named(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d["spec"] for d in docs if d["kind"] == kind]


def cli_calls(docs: list[dict[str, Any]], passwords: dict[str, str]) -> list[list[str]]:
    """The openstack CLI calls helm-toolkit's ks-user, ks-service and ks-endpoints jobs make for one chart,
    in order, from its (localized) example: per user, its domain, project, user, password and each role it
    is granted (create, add, list); per service, a list and the create; per endpoint, its region, a list
    of services, and per interface a list and the create. `passwords`: by user name."""
    domains = {s["name"]: s for s in _named(docs, "Domain")}
    projects = {(s["name"], s["domain"]): s for s in _named(docs, "Project")}
    calls: list[list[str]] = []
    for user in _named(docs, "User"):
        dom, name, project = user["domain"], user["name"], user["defaultProject"]
        proj, pdom = project["name"], project["domain"]
        password = passwords[name]
        calls += [
            [
                "domain",
                "create",
                "--or-show",
                "--enable",
                "--description",
                domains[pdom]["description"],
                pdom,
            ],
            [
                "project",
                "create",
                "--or-show",
                "--enable",
                "--description",
                projects[(proj, pdom)]["description"],
                "--domain",
                pdom,
                proj,
            ],
            [
                "user",
                "create",
                "--or-show",
                "--enable",
                "--domain",
                dom,
                "--project-domain",
                pdom,
                "--project",
                proj,
                "--description",
                user["description"],
                "--password",
                password,
                name,
            ],
            ["user", "set", "--password", password, "--domain", dom, name],
        ]
        scope = ["--user", name, "--user-domain", dom, "--project-domain", pdom, "--project", proj]
        for grant in _named(docs, "RoleAssignment"):
            if grant["user"] != {"name": name, "domain": dom}:
                continue
            role = grant["role"]["name"]
            calls += [
                ["role", "create", "--or-show", role],
                ["role", "add", *scope, role],
                ["role", "assignment", "list", *scope, "--names"],
            ]
    for service in _named(docs, "Service"):
        calls += [
            ["service", "list", "-f", "csv"],
            [
                "service",
                "create",
                "--name",
                service["name"],
                "--description",
                service["description"],
                "--enable",
                service["type"],
            ],
        ]
    for endpoint in _named(docs, "Endpoint"):
        svc, region = endpoint["service"]["name"], endpoint["region"]
        calls += [["region", "create", region], ["service", "list", "-f", "csv"]]
        for interface in INTERFACES:
            calls += [
                [
                    "endpoint",
                    "list",
                    "--service",
                    svc,
                    "--interface",
                    interface,
                    "--region",
                    region,
                    "-f",
                    "csv",
                ],
                ["endpoint", "create", "--region", region, svc, interface, endpoint["urls"][interface]],
            ]
    return calls


def chart_calls(chart: str, tag: str) -> list[list[str]]:
    docs = [d | {"spec": localized(d["spec"], tag)} for d in example(chart) if d["kind"] != "Secret"]
    users = [s["name"] for s in _named(docs, "User")]
    return cli_calls(docs, {u: uuid.uuid4().hex for u in users})


def measure() -> list[Figure]:
    env = stack_env()
    ks = identity(env)
    tags: list[str] = []
    try:
        with osprov_via_proxy(env, resync_seconds=600) as (osprov, proxy):
            warm = suffix()
            tags.append(warm)
            osprov.apply("Domain", "warmup", {"name": f"warmup-{warm}"})
            wait(lambda: all_ready(osprov, [("Domain", "warmup")]), "the warm-up domain", 120)
            tag = suffix()
            tags.append(tag)
            before = proxy.connections_seen
            cpu0, temporal0 = worker_cpu(osprov), service_cpu("temporal")
            keystone0, kube0 = service_cpu("keystone"), service_cpu("kube")
            kinds = {k for chart in CHARTS for k in example_kinds(chart)}
            with ReadyWatch(osprov, kinds, ready_for_its_generation) as ready:
                start = time.monotonic()
                resources = [r for chart in CHARTS for r in apply_example(osprov, chart, tag)]
                applied = time.monotonic() - start
                ours = ready.wait_ready(resources, "the six charts' examples Ready", 600) - start
            requests = proxy.connections_seen - before
            worker = worker_cpu(osprov) - cpu0
            temporal = service_cpu("temporal") - temporal0
            keystone = service_cpu("keystone") - keystone0
            kube = service_cpu("kube") - kube0
        cli_tag = suffix()
        tags.append(cli_tag)
        calls = [argv for chart in CHARTS for argv in chart_calls(chart, cli_tag)]
        # Keystone answers a second create of a region with 409: the six charts share RegionOne.
        cli = run_calls(env, calls, may_fail=("region create",))
    finally:
        for t in tags:
            cleanup_keystone(ks, t)
    return [
        Figure(
            "P1",
            f"six charts' examples, {len(resources)} resources, cold apply -> Ready",
            round(ours, 2),
            round(cli, 2),
            "measured and reported (no ratio goal)",
            baseline=f"the six charts' ks-* CLI sequences, one after another ({len(calls)} processes)",
            extra={
                "applying alone s": round(applied, 2),
                "Keystone requests": requests,
                "osprov worker CPU s": round(worker, 2),
                "Temporal dev server CPU s": round(temporal, 2),
                "Keystone CPU s": round(keystone, 2),
                "Kubernetes API CPU s": round(kube, 2),
                # the dev server's, Keystone's and the Kubernetes API's CPU as wall time on the cores
                "others' CPU over the cores s": round((temporal + keystone + kube) / CORES, 2),
            },
        )
    ]


def main() -> None:
    print_figures(measure())


if __name__ == "__main__":
    main()
