"""What the identity benchmarks share: the stack, a worker+bridge whose Keystone traffic goes through a
counting proxy, localized examples, worker CPU and history sizes.

Every benchmark uses names unique to its run (Keystone outlives runs, and the stack's own catalog
must never be touched) and removes what it made in Keystone at the end.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import tempfile
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import kubernetes
import yaml
from openstack.identity.v3._proxy import Proxy as Identity
from temporalio.api.enums.v1 import EventType, TimeoutType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from bench.observe import poll_until
from devenv import stack
from devenv.config import PORTS
from devenv.faults.proxy import FaultProxy
from devenv.testing import StackEnv
from tests.support.osprov import REPO, Osprov, admin_connection, run_osprov

RENAMED_KEYS = {"name", "domain", "type", "region"}
UNTOUCHED_KEYS = {"keystoneRef", "passwordSecret"}
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
CORES = len(os.sched_getaffinity(0))  # the cores this run's processes share


def stack_env() -> StackEnv:
    """The running local stack (start it with `osprov dev up`)."""
    env = stack.load_env()
    os.environ.update(env)
    return StackEnv.from_env(env)


def suffix() -> str:
    return uuid.uuid4().hex[:6]


def localized(value: Any, tag: str, key: str = "") -> Any:
    """A spec with every Keystone name/type/region suffixed with `tag` (nested references included)."""
    if isinstance(value, dict):
        return {k: v if k in UNTOUCHED_KEYS else localized(v, tag, k) for k, v in value.items()}
    if isinstance(value, str) and key in RENAMED_KEYS:
        return f"{value}-{tag}"
    return value


def example(chart: str) -> list[dict[str, Any]]:
    path = REPO / "examples" / "identity" / f"{chart}.yaml"
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def example_kinds(chart: str) -> set[str]:
    """The kinds of a chart's example's resources (its Secrets aside)."""
    return {d["kind"] for d in example(chart) if d["kind"] != "Secret"}


def apply_example(osprov: Osprov, chart: str, tag: str) -> list[tuple[str, str]]:
    """Apply a chart's example (localized, fresh random passwords); returns (kind, name) of each resource."""
    applied = []
    for doc in example(chart):
        name = doc["metadata"]["name"]
        if doc["kind"] == "Secret":
            osprov.create_secret(name, {k: uuid.uuid4().hex for k in doc["stringData"]})
        else:
            osprov.apply(doc["kind"], name, localized(doc["spec"], tag))
            applied.append((doc["kind"], name))
    return applied


def all_ready(osprov: Osprov, resources: list[tuple[str, str]]) -> bool:
    """Every resource Ready for its current generation."""
    for kind, name in resources:
        obj = osprov.get(kind, name) or {}
        status = obj.get("status") or {}
        cond = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
        current = status.get("observedGeneration") == (obj.get("metadata") or {}).get("generation")
        if not cond or cond["status"] != "True" or not current:
            return False
    return True


def wait(check: Callable[[], bool], what: str, timeout_s: float, interval_s: float = 0.2) -> float:
    """Poll until check() holds; returns the seconds waited (bench/observe.py's loop, raising
    TimeoutError, so `python -m bench` reports the metric as failed and goes on to the next)."""
    return poll_until(check, what, interval_s, timeout_s)


@contextmanager
def osprov_via_proxy(
    env: StackEnv, resync_seconds: float, threads: int = 4
) -> Iterator[tuple[Osprov, FaultProxy]]:
    """Worker + bridge in a fresh namespace; every Keystone request of the worker passes the proxy.

    Keystone's uwsgi answers with Connection: close, so the proxy's connection count is the number of
    HTTP requests the worker made.
    """
    with (
        tempfile.TemporaryDirectory(prefix="osprov-bench-") as tmp,
        FaultProxy("127.0.0.1", PORTS.keystone) as proxy,
    ):
        clouds = yaml.safe_load(env.clouds_yaml.read_text())
        entry = clouds["clouds"][env.cloud]
        entry["auth"]["auth_url"] = f"{proxy.url}/v3"
        entry["identity_endpoint_override"] = f"{proxy.url}/v3"
        path = Path(tmp) / "clouds.yaml"
        path.write_text(yaml.safe_dump(clouds))
        path.chmod(0o600)
        extra = {
            "OS_CLIENT_CONFIG_FILE": str(path),
            "OSPROV_ACTIVITY_THREADS": str(threads),
            "OSPROV_LOG_LEVEL": "WARNING",
        } | {
            k: v
            for k, v in os.environ.items()
            if k in ("OSPROV_WORKFLOW_RUNNER", "OSPROV_WORKFLOW_CACHE", "OSPROV_WORKFLOW_TASKS")
        }
        runner = cast(
            Generator[Osprov], run_osprov(env, Path(tmp), resync_seconds=resync_seconds, extra_env=extra)
        )
        osprov = next(runner)
        try:
            yield osprov, proxy
        finally:
            runner.close()
            discard_namespace(env, osprov.namespace)


def discard_namespace(env: StackEnv, namespace: str) -> None:
    """Terminate the benchmark namespace's workflows (no worker serves them any more) and delete it."""

    async def terminate() -> None:
        client = await Client.connect(env.temporal_address, namespace=env.temporal_namespace)
        async for wf in client.list_workflows(query="ExecutionStatus = 'Running'"):
            if not ours(wf.id, namespace):
                continue
            try:
                await client.get_workflow_handle(wf.id, run_id=wf.run_id).terminate(
                    reason="benchmark finished"
                )
            except RPCError as err:  # visibility lags: it completed (e.g. deleted) since it was listed
                if err.status != RPCStatusCode.NOT_FOUND:
                    raise

    asyncio.run(terminate())
    kube = kubernetes.config.new_client_from_config(config_file=str(env.kubeconfig))
    kubernetes.client.CoreV1Api(kube).delete_namespace(namespace)


def cpu_seconds(pid: int) -> float:
    """User+system CPU of a process and its reaped children."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(fields[i]) for i in (11, 12, 13, 14))
    return (utime + stime + cutime + cstime) / CLOCK_TICKS


def _parents() -> dict[int, int]:
    """Every running process's parent, from one scan of /proc."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError):
                continue  # exited meanwhile
    return parents


def service_pid(name: str) -> int:
    """The PID the local stack recorded for a service (e.g. "temporal", "keystone")."""
    return int(json.loads((stack_env().state_dir / "pids" / f"{name}.json").read_text())["pid"])


def service_cpu(name: str) -> float:
    """CPU seconds of a local-stack service (e.g. "temporal", "keystone") from its recorded PID, with its
    running children (Keystone's uwsgi workers answer the requests, not its master)."""
    children: dict[int, list[int]] = {}
    for pid, parent in _parents().items():
        children.setdefault(parent, []).append(pid)
    total, todo = 0.0, [service_pid(name)]
    while todo:
        pid = todo.pop()
        try:
            total += cpu_seconds(pid)
        except OSError:
            continue  # exited meanwhile
        todo += children.get(pid, [])
    return total


def worker_cpu(osprov: Osprov) -> float:
    assert osprov.worker.popen is not None
    return cpu_seconds(osprov.worker.popen.pid)


# The threads temporalio's Rust core (sdk-core) starts, by the name the kernel shows (`comm`, 15 bytes):
# its tokio runtime, its workflow state machines and its host metrics. Every other thread of the worker
# is a Python thread (the asyncio loop, the workflow and activity executors), named like the process.
SDK_CORE_THREADS = ("tokio-rt-worker", "workflow-proces", "temporal-real-s")


def thread_cpu(pid: int) -> dict[int, tuple[str, float]]:
    """CPU seconds of each live thread of a process, with its name."""
    threads = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited meanwhile
        threads[int(task.name)] = (name, (int(fields[11]) + int(fields[12])) / CLOCK_TICKS)
    return threads


def worker_threads(osprov: Osprov) -> dict[int, tuple[str, float]]:
    assert osprov.worker.popen is not None
    return thread_cpu(osprov.worker.popen.pid)


def sdk_core_share(before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]) -> float:
    """The share of a worker's CPU between two `thread_cpu` readings spent on sdk-core's threads: Temporal's
    own client-side work (polling, history and state machines, gRPC), whatever osprov's code does."""
    spent = {tid: (name, cpu - before.get(tid, (name, 0.0))[1]) for tid, (name, cpu) in after.items()}
    total = sum(cpu for _, cpu in spent.values())
    core = sum(cpu for name, cpu in spent.values() if name in SDK_CORE_THREADS)
    return core / total if total > 0 else 0.0


def worker_peak_rss_mib(osprov: Osprov) -> float:
    """The worker's peak resident memory (VmHWM): what its workflow cache and activities cost."""
    assert osprov.worker.popen is not None
    for line in Path(f"/proc/{osprov.worker.popen.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def ours(workflow_id: str, namespace: str) -> bool:
    """A workflow of the benchmark's controller: its resources' (Kind/namespace/…), and the Keystone
    objects' and the sweep's, which are keyed by its task queue (osprov-<namespace>, tests/support)."""
    return f"/{namespace}/" in workflow_id or workflow_id.split("/")[2:3] == [f"osprov-{namespace}"]


_UWSGI_MSECS = re.compile(r"generated \d+ bytes in (\d+) msecs")


def keystone_log_size() -> int:
    return (stack_env().state_dir / "logs" / "keystone.log").stat().st_size


def keystone_busy_since(offset: int) -> tuple[float, int]:
    """(seconds Keystone spent answering, requests answered) since byte `offset` of its uwsgi log: the
    cloud's own share of a run (the log is Keystone's: every client's requests are in it)."""
    with open(stack_env().state_dir / "logs" / "keystone.log", "rb") as log:
        log.seek(offset)
        found = [int(m.group(1)) for m in _UWSGI_MSECS.finditer(log.read().decode(errors="replace"))]
    return sum(found) / 1000, len(found)


BREAKDOWN_ENV = "BENCH_HISTORY_BREAKDOWN"


def history_stats(
    env: StackEnv, namespace: str, activity_names: set[str], longest: dict[str, Any] | None = None
) -> tuple[int, int, int]:
    """(workflows, history events, scheduled activities named in `activity_names`) over every run.
    With BENCH_HISTORY_BREAKDOWN=<file>, also writes the events counted by workflow kind and event type
    (activities, signals and markers by name) to that file: where a figure's events go. `longest`, if
    given, gets the longest run's events, bytes and workflow kind (what bounds history size at scale)."""
    breakdown: dict[str, Counter[str]] | None = (
        defaultdict(Counter) if os.environ.get(BREAKDOWN_ENV) else None
    )

    async def collect() -> tuple[int, int, int]:
        client = await Client.connect(env.temporal_address, namespace=env.temporal_namespace)
        ids: set[str] = set()
        events = writes = 0
        sem = asyncio.Semaphore(16)

        async def one(wf_id: str, run_id: str) -> tuple[int, int]:
            async with sem:
                history = await client.get_workflow_handle(wf_id, run_id=run_id).fetch_history()
            if breakdown is not None:
                _count_events(breakdown, wf_id, history.events)
            if longest is not None and len(history.events) > longest.get("events", 0):
                longest.update(
                    events=len(history.events),
                    bytes=sum(e.ByteSize() for e in history.events),
                    kind=wf_id.split("/", 1)[0],
                )
            named = sum(
                1
                for e in history.events
                if e.HasField("activity_task_scheduled_event_attributes")
                and e.activity_task_scheduled_event_attributes.activity_type.name in activity_names
            )
            return len(history.events), named

        tasks = []
        async for wf in client.list_workflows(query="WorkflowType != 'none'"):
            if ours(wf.id, namespace):
                ids.add(wf.id)
                tasks.append(one(wf.id, wf.run_id))
        for n_events, n_named in await asyncio.gather(*tasks):
            events += n_events
            writes += n_named
        return len(ids), events, writes

    stats = asyncio.run(collect())
    if breakdown is not None:
        path = Path(os.environ[BREAKDOWN_ENV])
        path.write_text(json.dumps({k: dict(v.most_common()) for k, v in breakdown.items()}, indent=1))
        print(f"history events by workflow kind and event: {path}")
    return stats


def _count_events(breakdown: dict[str, Counter[str]], wf_id: str, events: Iterable[HistoryEvent]) -> None:
    kind = wf_id.split("/", 1)[0]
    counter = breakdown[kind]
    counter["(runs)"] += 1
    n_events = 0
    for e in events:
        name = EventType.Name(e.event_type).removeprefix("EVENT_TYPE_")
        if e.HasField("activity_task_scheduled_event_attributes"):
            name += " " + e.activity_task_scheduled_event_attributes.activity_type.name
        if e.HasField("workflow_execution_signaled_event_attributes"):
            name += " " + e.workflow_execution_signaled_event_attributes.signal_name
        if e.HasField("signal_external_workflow_execution_initiated_event_attributes"):
            name += " " + e.signal_external_workflow_execution_initiated_event_attributes.signal_name
        if e.HasField("marker_recorded_event_attributes"):
            name += " " + e.marker_recorded_event_attributes.marker_name
        if e.HasField("workflow_task_timed_out_event_attributes"):
            name += " " + TimeoutType.Name(e.workflow_task_timed_out_event_attributes.timeout_type)
        counter[name] += 1
        n_events += 1
    # How the runs' lengths spread: a few long histories (a parent's) or many middling ones.
    counter[f"(runs of {n_events // 10 * 10}-{n_events // 10 * 10 + 9} events)"] += 1


WRITE_ACTIVITIES = {
    "keystone.create",
    "keystone.update",
    "keystone.delete",
    "keystone.put_grant",
    "keystone.revoke_grant",
    "keystone.set_password",
}


def identity(env: StackEnv) -> Identity:
    return cast(Identity, admin_connection(env).identity)


def cleanup_keystone(ks: Identity, tag: str) -> None:
    """Delete what names ending in `tag` denote: endpoints, services, regions, roles, domains (with content)."""
    for service in [s for s in ks.services() if str(s.name).endswith(tag)]:
        for endpoint in ks.endpoints(service_id=service.id):
            ks.delete_endpoint(endpoint.id, ignore_missing=True)
        ks.delete_service(service.id, ignore_missing=True)
    for region in [r for r in ks.regions() if str(r.id).endswith(tag)]:
        ks.delete_region(region.id, ignore_missing=True)
    for role in [r for r in ks.roles() if str(r.name).endswith(tag)]:
        ks.delete_role(role.id, ignore_missing=True)
    for domain in [d for d in ks.domains() if str(d.name).endswith(tag)]:
        ks.update_domain(domain.id, enabled=False)
        ks.delete_domain(domain.id, ignore_missing=True)
