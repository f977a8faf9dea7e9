"""Two bridges, one Lease: killing the leader mid-stream loses and doubles nothing.

The leader is killed -9 while resources are being applied; more are applied and some changed while no
bridge leads. The standby takes the Lease, lists everything afresh and signals it whole. Outcomes are
checked where they happen: every resource Ready at its latest generation, exactly one Keystone object
each, and Keystone's own request log shows one create per Service and no more updates than changes,
although Temporal shows the resources the old leader had signalled were signalled again by the new one
(the duplicates were sent, and changed nothing). The takeover time is measured and printed (leaseDuration 10 s, retryPeriod 2 s: at most
about 14 s after the leader's last renewal).
"""

from __future__ import annotations

import asyncio
import re
import socket
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, TypeAlias

import kubernetes
import pytest
from temporalio.client import Client

from devenv.testing import StackEnv
from tests.integration.test_identity_support import workflow_id
from tests.support.health import free_port, probe
from tests.support.osprov import Osprov, Proc, admin_connection, run_osprov
from tests.support.waiting import wait_for

pytestmark = pytest.mark.stack

Identity: TypeAlias = Any  # openstacksdk's identity proxy (v3)
LEASE = "osprov-bridge"


@pytest.fixture(scope="module")
def osprov(identity_stack: StackEnv, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Osprov]:
    """A worker and two bridges (each with its own health port) on one namespace."""
    tmp = tmp_path_factory.mktemp("bridge-ha")
    for o in run_osprov(identity_stack, tmp):
        o.bridge.stop()  # run_osprov starts one bridge; this module runs two with health endpoints
        bridges = [
            Proc(
                name,
                [sys.executable, "-m", "osprov.bridge"],
                o.bridge.env | {"OSPROV_HEALTH_PORT": str(free_port())},
                tmp / f"{name}.log",
            )
            for name in ("bridge-a", "bridge-b")
        ]
        o.procs = [o.worker, *bridges]
        o.bridge = bridges[0]
        yield o


@pytest.fixture(scope="module")
def ks(identity_stack: StackEnv) -> Iterator[Identity]:
    conn = admin_connection(identity_stack)
    yield conn.identity
    conn.close()


def port_of(bridge: Proc) -> int:
    return int(bridge.env["OSPROV_HEALTH_PORT"])


def health(bridge: Proc) -> dict[str, Any]:
    return probe(port_of(bridge))[1]


def role(bridge: Proc) -> str | None:
    """ "leader" or "standby" while the bridge is alive (/healthz passes), else None. A bridge that exited
    fails the test at once with its log (pytest.fail is not an Exception: wait_for does not swallow it)."""
    if bridge.popen is not None and (code := bridge.popen.poll()) is not None:
        pytest.fail(f"{bridge.name} exited with {code}; its log ends:\n{bridge.log_text()[-3000:]}")
    status, body = probe(port_of(bridge))
    return str(body["role"]) if status == 200 else None


def lease(o: Osprov) -> tuple[str, int, datetime]:
    """holderIdentity, leaseTransitions, acquireTime of the bridges' Lease."""
    spec = kubernetes.client.CoordinationV1Api(o.kube).read_namespaced_lease(LEASE, o.namespace).spec
    assert spec is not None and spec.lease_transitions is not None and spec.acquire_time is not None
    return spec.holder_identity or "", spec.lease_transitions, spec.acquire_time


def client_identity(bridge: Proc) -> str:
    """The Temporal client identity of a bridge process (the SDK's default: pid@host)."""
    assert bridge.popen is not None
    return f"{bridge.popen.pid}@{socket.gethostname()}"


def signal_identities(stack: StackEnv, wf_id: str) -> set[str]:
    """Who signalled the workflow (signal-with-start records the signal with the caller's identity)."""

    async def read() -> set[str]:
        client = await Client.connect(stack.temporal_address, namespace=stack.temporal_namespace)
        found: set[str] = set()
        async for wf in client.list_workflows(query=f"WorkflowId = '{wf_id}'"):
            history = await client.get_workflow_handle(wf.id, run_id=wf.run_id).fetch_history()
            for e in history.events:
                if e.HasField("workflow_execution_signaled_event_attributes"):
                    found.add(e.workflow_execution_signaled_event_attributes.identity)
        return found

    return asyncio.run(read())


def keystone_writes(stack: StackEnv, since: int) -> list[str]:
    """The service writes Keystone answered since byte `since` of its request log: "POST 201", "PATCH 200"."""
    with open(stack.state_dir / "logs" / "keystone.log", "rb") as log:
        log.seek(since)
        lines = log.read().decode(errors="replace").splitlines()
    found = (
        re.search(r"\] (POST|PATCH|DELETE) /v3/services\S* => .*\(HTTP/1\.1 (\d+)\)", line) for line in lines
    )
    return [f"{m.group(1)} {m.group(2)}" for m in found if m]


def service(name: str, description: str) -> dict[str, str]:
    return {"name": name, "type": "ha-test", "description": description}


def test_killing_the_leader_mid_stream_loses_and_doubles_nothing(
    osprov: Osprov, ks: Identity, identity_stack: StackEnv
) -> None:
    a, b = osprov.procs[1], osprov.procs[2]
    a.start()
    wait_for(lambda: role(a) == "leader", "bridge A leads", 60)
    b.start()
    wait_for(lambda: role(b) == "standby", "bridge B is an alive standby", 60)
    names = {i: f"ha-{uuid.uuid4().hex[:8]}" for i in range(10)}
    log_offset = (identity_stack.state_dir / "logs" / "keystone.log").stat().st_size
    # Signalled by A for sure: Ready before the kill.
    for i in range(3):
        osprov.apply("Service", f"svc-{i}", service(names[i], "v1"))
    for i in range(3):
        osprov.wait_ready("Service", f"svc-{i}")
    transitions = lease(osprov)[1]
    # Mid-stream: A is killed right after these are applied (some are still in its lanes or watch).
    for i in range(3, 7):
        osprov.apply("Service", f"svc-{i}", service(names[i], "v1"))
    a.kill()
    killed_at = datetime.now(UTC)
    # While nobody leads: new resources, and changes to resources A had signalled.
    for i in range(7, 10):
        osprov.apply("Service", f"svc-{i}", service(names[i], "v1"))
    for i in (0, 4):
        osprov.apply("Service", f"svc-{i}", service(names[i], "v2"))

    wait_for(lambda: role(b) == "leader", "the standby leads", 60)
    holder, after, acquired = lease(osprov)
    assert holder == health(b)["identity"] and after == transitions + 1
    takeover_s = (acquired - killed_at).total_seconds()
    print(f"\nstandby took the lease {takeover_s:.1f} s after the leader's kill -9")

    for i, name in names.items():
        obj = osprov.wait_ready("Service", f"svc-{i}", timeout_s=120)
        found = [s for s in ks.services() if s.name == name and s.type == "ha-test"]
        assert [s.id for s in found] == [obj["status"]["serviceID"]], f"{name}: {len(found)} in Keystone"
        assert found[0].description == ("v2" if i in (0, 4) else "v1")
    # What Keystone was asked to write: one create per Service and at most one update per change,
    # although the new leader signalled every resource again (below).
    writes = keystone_writes(identity_stack, log_offset)
    assert writes.count("POST 201") == len(names) and len(writes) <= len(names) + 2, writes
    for i in range(3):
        assert {client_identity(a), client_identity(b)} <= signal_identities(
            identity_stack, workflow_id(osprov, "Service", f"svc-{i}")
        )
