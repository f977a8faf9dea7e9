"""LoadBalancer pass order (spec page octavia.md, step labels P1..P8, D1..D4) on the time-skipping server.

Stubbed Octavia/Neutron (fakes_octavia.py) model Octavia's lock: a mutation while the load balancer is
PENDING is a 409, so every test also proves the workflow waits for ACTIVE between mutating steps.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from osprov.api import octavia_io as io
from osprov.api.operations import RECONCILE_REQUESTED
from osprov.workflows.loadbalancer import LoadBalancerWorkflow
from tests.workflows.fakes import FakeCloud
from tests.workflows.fakes_octavia import FakeOctavia
from tests.workflows.harness import CONFIG, Harness, eventually, skip
from tests.workflows.history import (
    current_run,
    local_activity_results,
    reads_as_sentence,
    scheduled_activities,
    timeline,
)

FINALIZER = "octavia.osh.openstack.org/finalizer"
HTTP = {
    "name": "http",
    "protocol": "TCP",
    "port": 80,
    "allowedCIDRs": ["10.0.0.0/8"],
    "idleTimeoutSeconds": 60,
    "pool": {"proxyProtocolV2": True, "members": [{"address": "10.0.0.11", "port": 8080}]},
    "healthCheck": {"delaySeconds": 5, "timeoutSeconds": 3, "healthyThreshold": 2, "unhealthyThreshold": 3},
}
DNS = {
    "name": "dns",
    "protocol": "UDP",
    "port": 53,
    "pool": {"members": [{"address": "10.0.0.21", "port": 53}]},
    "healthCheck": {"delaySeconds": 10, "timeoutSeconds": 5, "healthyThreshold": 2, "unhealthyThreshold": 2},
}
SPEC: dict[str, Any] = {
    "project": {"name": "demo", "domain": "Default"},
    "vipNetworkID": "net-1",
    "vipSubnetID": "subnet-1",
    "publicIP": True,
    "deletionPolicy": "delete",
    "listeners": [HTTP, DNS],
}


@dataclass
class Env:
    h: Harness
    o: FakeOctavia
    uid: str = ""

    async def apply(self, spec: dict[str, Any], generation: int = 1) -> Any:
        self.uid = self.uid or str(uuid.uuid4())
        return await self.h.apply("LoadBalancer", spec, generation, uid=self.uid, finalizers=[FINALIZER])

    def available(self) -> dict[str, Any]:
        return self.h.last_ready()

    def status(self) -> dict[str, Any]:
        return self.h.cloud.statuses[-1]

    async def wait_reason(self, reason: str, generation: int = 1, deadline_s: float = 60.0) -> dict[str, Any]:
        """Wait (real-time deadline) while skipping the workflow's durable timers in server time."""

        async def reached() -> bool:
            st = self.h.cloud.statuses[-1] if self.h.cloud.statuses else {}
            if st.get("observedGeneration") == generation and self.available()["reason"] == reason:
                return True
            await self.h.env.sleep(0.5)  # time-skipping: lets the next requeue timer fire at once
            return False

        await eventually(reached, f"Available reason {reason} at generation {generation}", deadline_s)
        return self.available()

    def name(self, listener: str = "", kind: str = "") -> str:
        return f"lb-{self.uid}" + (f"-{listener}-{kind}" if listener else "")


@pytest_asyncio.fixture
async def env(tenv: WorkflowEnvironment) -> AsyncIterator[Env]:
    async for e in load_balancer_env(tenv):
        yield e


async def load_balancer_env(tenv: WorkflowEnvironment) -> AsyncIterator[Env]:
    """A worker running the LoadBalancer workflow against FakeCloud and a FakeOctavia."""
    cloud, octavia = FakeCloud(), FakeOctavia()
    queue = f"q-{uuid.uuid4()}"
    activities = cloud.activities() + octavia.activities()
    async with Worker(tenv.client, task_queue=queue, workflows=[LoadBalancerWorkflow], activities=activities):
        h = Harness(tenv, cloud, queue)
        yield Env(h, octavia)
        await h.close()


def with_listeners(*listeners: dict[str, Any], **changes: Any) -> dict[str, Any]:
    spec = copy.deepcopy(SPEC) | changes
    spec["listeners"] = [copy.deepcopy(x) for x in listeners]
    return spec


def no_errors(e: Env) -> bool:
    """No pass failed: in particular no mutation hit Octavia's PENDING lock (a 409)."""
    return all(s["conditions"][0]["reason"] != "ReconcileError" for s in e.h.cloud.statuses)


async def test_P1_to_P8_full_create_is_provisioned_with_deterministic_names(env: Env) -> None:
    await env.apply(SPEC)
    cond = await env.wait_reason("Provisioned")
    o, lb = env.o, env.o.lb()
    assert cond["status"] == "True" and lb.name == env.name()
    http_pool = o.named(o.pools, env.name("http", "pool"))
    dns_pool = o.named(o.pools, env.name("dns", "pool"))
    assert (http_pool.protocol, dns_pool.protocol) == ("PROXYV2", "UDP")
    http = o.named(o.listeners, env.name("http", "listener"))
    dns = o.named(o.listeners, env.name("dns", "listener"))
    assert (http.default_pool_id, dns.default_pool_id) == (http_pool.id, dns_pool.id)
    assert http.allowed_cidrs == ["10.0.0.0/8"] and http.timeout_client_data == 60000
    assert dns.timeout_client_data == 50000  # UDP: Octavia's default, never managed
    hm_http = o.named(o.monitors, env.name("http", "monitor"))
    hm_dns = o.named(o.monitors, env.name("dns", "monitor"))
    assert (hm_http.type, hm_dns.type) == ("TCP", "UDP-CONNECT")
    assert (hm_http.delay, hm_http.timeout, hm_http.max_retries, hm_http.max_retries_down) == (5, 3, 2, 3)
    assert [(m.address, m.port) for m in o.members[http_pool.id]] == [("10.0.0.11", 8080)]
    [fip] = o.fips.values()
    assert fip.port_id == lb.vip_port_id
    shown = {k: env.status()[k] for k in ("loadBalancerID", "vipAddress", "publicIP")}
    assert shown == {"loadBalancerID": lb.id, "vipAddress": lb.vip_address, "publicIP": fip.address}
    assert o.scopes == {("demo", "Default")}  # every call in the resource's project
    assert o.count(io.CREATE_LOAD_BALANCER.name) == 1 and o.count(io.REPLACE_MEMBERS.name) == 2
    assert no_errors(env)


async def test_P3_pending_is_waited_out_inside_one_activity_per_mutation(env: Env) -> None:
    env.o.settle_reads = 4  # Octavia slow to settle: several PENDING reads after every mutation
    await env.apply(with_listeners(HTTP))
    await env.wait_reason("Provisioned")
    assert no_errors(env)
    # Each Octavia mutation was waited out (its PENDING reads inside one activity) before the next one,
    # none was refused, and the whole topology converged in one pass: no timer between the steps.
    octavia = [m for m in env.o.mutations() if m.startswith("octavia.")]
    assert env.o.count(io.AWAIT_LOAD_BALANCER.name) == len(octavia)
    assert (await env.h.state(env.h.started[-1])).passes == 1


async def test_P3_R0_each_wait_for_ACTIVE_ends_with_the_next_steps_read_in_the_same_activity(
    env: Env,
) -> None:
    """One activity per step: the wait after a mutation reads the tree (R0) once Octavia settled it, so no
    separate read follows it (before: a wait, then a read; two round trips per step)."""
    await env.apply(with_listeners(HTTP))
    await env.wait_reason("Provisioned")
    assert no_errors(env)
    events = (await current_run(env.h.env.client, env.h.started[-1].id)).events
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    mutations = [m for m in env.o.mutations() if m.startswith("octavia.")]
    assert len(mutations) >= 4  # the load balancer, a pool, a listener, the members at least
    assert scheduled.count(io.AWAIT_TOPOLOGY.name) == len(mutations)
    assert io.READ_TOPOLOGY.name not in scheduled  # the pass's first R0 is a local activity
    assert local_activity_results(events, io.READ_TOPOLOGY.name)  # ... and it is there
    assert io.AWAIT_LOAD_BALANCER.name not in scheduled


async def test_R0_a_change_is_read_in_the_task_it_wakes_which_schedules_the_write(env: Env) -> None:
    """A pass's reads are local activities (patch loadbalancer-reads-local): a change's R0 read runs
    inside the workflow task the change woke, and that same task schedules the write. Before: the read
    was an activity task of its own, and a second workflow task scheduled the write."""
    wf = await env.apply(with_listeners(HTTP))
    await env.wait_reason("Provisioned")
    await env.h.signal(
        wf, 2, with_listeners(HTTP | {"allowedCIDRs": ["10.1.0.0/16"]}), finalizers=[FINALIZER]
    )
    await env.wait_reason("Provisioned", generation=2)
    assert env.o.named(env.o.listeners, env.name("http", "listener")).allowed_cidrs == ["10.1.0.0/16"]
    events = (await current_run(env.h.env.client, wf.id)).events
    signal = max(
        i for i, e in enumerate(events) if e.HasField("workflow_execution_signaled_event_attributes")
    )
    after = events[signal:]
    first = next(e for e in after if e.HasField("activity_task_scheduled_event_attributes"))
    assert first.activity_task_scheduled_event_attributes.activity_type.name == io.UPDATE_LISTENER.name
    before_put = after[: after.index(first)]
    assert local_activity_results(before_put, io.READ_TOPOLOGY.name)  # R0, read in the woken task
    assert sum(e.HasField("workflow_task_completed_event_attributes") for e in before_put) == 1


def _members_changed(address: str = "10.0.0.12") -> dict[str, Any]:
    changed = with_listeners(HTTP, DNS)
    changed["listeners"][0]["pool"]["members"] = [{"address": address, "port": 8080}]
    return changed


async def test_R0m_a_members_only_change_is_confirmed_by_reading_that_pools_members(env: Env) -> None:
    """A member change whose pass found everything else converged (patch loadbalancer-members-step-reads-
    members): once Octavia settled the batch, the wait reads that pool's members, not the whole tree again
    (one GET instead of six or more on real Octavia), and the status says Provisioned. Before: R0 again."""
    wf = await env.apply(with_listeners(HTTP, DNS))
    await env.wait_reason("Provisioned")
    since, statuses, events = len(env.o.calls), len(env.h.cloud.statuses), len(env.h.cloud.events)
    await env.h.signal(wf, 2, _members_changed(), finalizers=[FINALIZER])
    await env.wait_reason("Provisioned", generation=2)
    pool = env.o.named(env.o.pools, env.name("http", "pool"))
    assert [m.address for m in env.o.members[pool.id]] == ["10.0.0.12"]
    # Available stays True through the batch (the load balancer serves throughout): one status write,
    # when it is confirmed, and an Event that says what changed.
    [written] = env.h.cloud.statuses[statuses:]
    assert written["observedGeneration"] == 2 and written["conditions"][0]["reason"] == "Provisioned"
    [updated] = [e.event for e in env.h.cloud.events[events:]]
    assert (updated.reason, updated.note) == (
        "Updated",
        f"replaced the members of pool {pool.name}: 1 member(s)",
    )
    calls = env.o.calls[since:]
    put = calls.index(io.REPLACE_MEMBERS.name)
    assert calls[put + 1 :] == [io.AWAIT_LOAD_BALANCER.name, io.LIST_MEMBERS.name]
    waits = await scheduled_activities(env.h.env.client, wf.id, io.AWAIT_TOPOLOGY.name, io.AwaitTopology)
    assert waits[-1].input.members_of == [pool.id]
    assert all(w.input.members_of is None for w in waits[:-1])  # the create's steps: R0 after each
    assert no_errors(env)


async def test_R0m_an_answer_that_is_not_done_is_decided_on_a_full_R0(env: Env) -> None:
    """R0m's answer only ever ends a pass: a member someone added between the batch and the confirming read
    makes it not Done, so the next step starts with a full R0 (never a write decided from the partial read),
    and the pass converges the pool again."""
    wf = await env.apply(with_listeners(HTTP, DNS))
    await env.wait_reason("Provisioned")

    def someone_adds_a_member(o: FakeOctavia, pool_id: str) -> None:
        o.members[pool_id].append(
            io.MemberView(id="theirs", address="10.0.0.99", port=8080, provisioning_status=io.ACTIVE)
        )

    env.o.after_replace = someone_adds_a_member
    since = len(env.o.calls)
    await env.h.signal(wf, 2, _members_changed(), finalizers=[FINALIZER])
    await env.wait_reason("Provisioned", generation=2)
    pool = env.o.named(env.o.pools, env.name("http", "pool"))
    assert [m.address for m in env.o.members[pool.id]] == ["10.0.0.12"]
    calls = env.o.calls[since:]
    first, second = (i for i, c in enumerate(calls) if c == io.REPLACE_MEMBERS.name)
    between = calls[first + 1 : second]
    assert between[:2] == [io.AWAIT_LOAD_BALANCER.name, io.LIST_MEMBERS.name]  # R0m saw their member
    assert io.READ_TOPOLOGY.name in between[2:]  # ... so the second batch was decided on a full R0
    assert calls[second + 1 :] == [io.AWAIT_LOAD_BALANCER.name, io.LIST_MEMBERS.name]
    assert no_errors(env)


async def test_R0s_a_members_change_after_a_converged_pass_is_sent_on_that_passs_read(env: Env) -> None:
    """A pass that only a spec change asked for, right after a pass that ended Done (patch loadbalancer-
    members-on-last-read): the members batch that ends the pass is decided on that pass's read and sent
    at once, without R0 first; R0m confirms it. Before: R0 read the whole tree again before the PUT."""
    wf = await env.apply(with_listeners(HTTP, DNS))
    await env.wait_reason("Provisioned")
    since, statuses = len(env.o.calls), len(env.h.cloud.statuses)
    await env.h.signal(wf, 2, _members_changed(), finalizers=[FINALIZER])
    await env.wait_reason("Provisioned", generation=2)
    pool = env.o.named(env.o.pools, env.name("http", "pool"))
    assert [m.address for m in env.o.members[pool.id]] == ["10.0.0.12"]
    assert env.o.calls[since:] == [io.REPLACE_MEMBERS.name, io.AWAIT_LOAD_BALANCER.name, io.LIST_MEMBERS.name]
    [written] = env.h.cloud.statuses[statuses:]
    assert written["observedGeneration"] == 2 and written["conditions"][0]["reason"] == "Provisioned"
    # The next change is sent on the read R0m confirmed this one with.
    since = len(env.o.calls)
    await env.h.signal(wf, 3, _members_changed("10.0.0.13"), finalizers=[FINALIZER])
    await env.wait_reason("Provisioned", generation=3)
    assert [m.address for m in env.o.members[pool.id]] == ["10.0.0.13"]
    assert env.o.calls[since:] == [io.REPLACE_MEMBERS.name, io.AWAIT_LOAD_BALANCER.name, io.LIST_MEMBERS.name]
    assert no_errors(env)


@pytest.mark.parametrize("meddle", ["pool deleted", "load balancer busy"])
async def test_R0s_a_batch_octavia_refuses_is_decided_again_on_R0(env: Env, meddle: str) -> None:
    """The last pass's read is out of date (someone deleted the pool, or Octavia is busy with their change):
    Octavia refuses the batch (404, 409), nothing was changed, and the same pass starts with R0 as
    before: the pool is made again with the declared members, or the pass waits for ACTIVE first. No pass
    fails (no ReconcileError status)."""
    wf = await env.apply(with_listeners(HTTP, DNS))
    await env.wait_reason("Provisioned")
    pool = env.o.named(env.o.pools, env.name("http", "pool"))
    lb = env.o.lb()
    if meddle == "pool deleted":  # Octavia deletes its members and monitor with it
        del env.o.pools[pool.id]
        env.o.members.pop(pool.id, None)
        for monitor in [m.id for m in env.o.monitors.values() if m.pool_id == pool.id]:
            del env.o.monitors[monitor]
    else:
        env.o.force(lb.id, "PENDING_UPDATE")
    since = len(env.o.calls)
    await env.h.signal(wf, 2, _members_changed(), finalizers=[FINALIZER])
    if meddle == "load balancer busy":
        await eventually(lambda: io.READ_TOPOLOGY.name in env.o.calls[since:], "R0 after the 409")
        env.o.unpin(lb.id)
    await env.wait_reason("Provisioned", generation=2)
    calls = env.o.calls[since:]
    assert calls[:2] == [io.REPLACE_MEMBERS.name, io.READ_TOPOLOGY.name]  # refused, then R0
    now = env.o.named(env.o.pools, env.name("http", "pool"))
    assert [m.address for m in env.o.members[now.id]] == ["10.0.0.12"]
    assert (now.id == pool.id) == (meddle == "load balancer busy")
    assert no_errors(env)


async def test_R0s_a_pass_an_operator_asked_for_reads_R0_first(env: Env) -> None:
    """A resync, a retry or a reconcile-requested-at annotation with the change: the pass reads R0 before
    anything else, as every pass did before R0s (drift repair acts on a fresh read)."""
    wf = await env.apply(with_listeners(HTTP, DNS))
    await env.wait_reason("Provisioned")
    since = len(env.o.calls)
    await env.h.signal(
        wf, 2, _members_changed(), finalizers=[FINALIZER], annotations={RECONCILE_REQUESTED: "now"}
    )
    await env.wait_reason("Provisioned", generation=2)
    calls = env.o.calls[since:]
    assert calls[0] == io.READ_TOPOLOGY.name and io.REPLACE_MEMBERS.name in calls
    assert no_errors(env)


async def test_P3_each_wait_keeps_the_cadence_of_the_task_that_saw_octavia_busy(env: Env) -> None:
    """Each wait follows a mutation Octavia accepted (or a read that found it PENDING): it carries the start
    of the workflow task that decided to wait, so its second read comes one interval after it
    (activities/cloud.py, poll), and the workflow's own round trip is not added to its reads."""
    await env.apply(with_listeners(HTTP))
    await env.wait_reason("Provisioned")
    waits = await scheduled_activities(
        env.h.env.client, env.h.started[-1].id, io.AWAIT_TOPOLOGY.name, io.AwaitTopology
    )
    assert len(waits) >= 4  # the load balancer, a pool, a listener, the members at least
    assert all(w.within_its_task(w.input.wait.busy_seen_at) for w in waits)


async def test_R0_tells_its_activity_the_ids_the_last_read_found(env: Env) -> None:
    """The IDs a read found go to the next R0 as its guess (io.KnownTopology: the real activity then reads
    in one round). A run's first read has none; a change's first read guesses what is there."""
    await env.apply(with_listeners(HTTP))
    await env.wait_reason("Provisioned")
    changed = with_listeners(HTTP | {"allowedCIDRs": ["10.1.0.0/16"]})
    first_change_read = len(env.o.reads)
    await env.apply(changed, generation=2)
    await env.wait_reason("Provisioned", generation=2)
    lb, pool = env.o.lb(), env.o.named(env.o.pools, env.name("http", "pool"))
    assert env.o.reads[0].known is None
    assert lb.vip_port_id is not None
    there = io.KnownTopology(load_balancer_id=lb.id, vip_port_id=lb.vip_port_id, pools={pool.name: pool.id})
    assert env.o.reads[first_change_read].known == there
    assert env.o.reads[-1].known == there


@pytest.mark.parametrize(
    ("step", "change", "check"),
    [
        (
            "P7b allowed CIDRs",
            lambda x: x.update(allowedCIDRs=["192.168.0.0/16", "10.1.0.0/16"]),
            lambda o, e: (
                o.named(o.listeners, e.name("http", "listener")).allowed_cidrs
                == ["10.1.0.0/16", "192.168.0.0/16"]
            ),
        ),
        (
            "P7b idle timeout",
            lambda x: x.update(idleTimeoutSeconds=300),
            lambda o, e: o.named(o.listeners, e.name("http", "listener")).timeout_member_data == 300000,
        ),
        (
            "P7c members in one batch",
            lambda x: x["pool"].update(
                members=[{"address": "10.0.0.12", "port": 8080}, {"address": "10.0.0.13", "port": 8080}]
            ),
            lambda o, e: (
                o.count(io.REPLACE_MEMBERS.name) == 2
                and {m.address for m in o.members[o.named(o.pools, e.name("http", "pool")).id]}
                == {"10.0.0.12", "10.0.0.13"}
            ),
        ),
        (
            "P7d monitor thresholds",
            lambda x: x.update(
                healthCheck={
                    "delaySeconds": 7,
                    "timeoutSeconds": 7,
                    "healthyThreshold": 4,
                    "unhealthyThreshold": 5,
                }
            ),
            lambda o, e: (lambda m: (m.delay, m.timeout, m.max_retries, m.max_retries_down) == (7, 7, 4, 5))(
                o.named(o.monitors, e.name("http", "monitor"))
            ),
        ),
    ],
)
async def test_P7_mutable_fields_converge_in_place(env: Env, step: str, change: Any, check: Any) -> None:
    await env.apply(with_listeners(HTTP))
    await env.wait_reason("Provisioned")
    ids = {*env.o.listeners, *env.o.pools, *env.o.monitors, *env.o.lbs}
    http = copy.deepcopy(HTTP)
    change(http)
    await env.h.signal(env.h.started[0], 2, with_listeners(http), finalizers=[FINALIZER])
    await env.wait_reason("Provisioned", generation=2)
    assert check(env.o, env), step
    assert {*env.o.listeners, *env.o.pools, *env.o.monitors, *env.o.lbs} == ids  # same Octavia IDs
    assert env.o.count(io.CREATE_LOAD_BALANCER.name) == 1 and no_errors(env)


async def test_P6_P8_removed_listener_is_pruned_with_its_pool_and_monitor(env: Env) -> None:
    await env.apply(SPEC)
    await env.wait_reason("Provisioned")
    await env.h.signal(env.h.started[0], 2, with_listeners(HTTP), finalizers=[FINALIZER])
    await env.wait_reason("Provisioned", generation=2)
    names = {x.name for x in env.o.listeners.values()} | {x.name for x in env.o.pools.values()}
    names |= {x.name for x in env.o.monitors.values()}
    assert names == {env.name("http", k) for k in ("listener", "pool", "monitor")}
    assert env.o.count(io.DELETE.name) == 2  # listener, then pool: its monitor went with the pool (P8)
    assert no_errors(env)


async def test_P6_renamed_listener_on_the_same_port_replaces_the_old_one(env: Env) -> None:
    await env.apply(with_listeners(HTTP))
    await env.wait_reason("Provisioned")
    old = env.o.named(env.o.listeners, env.name("http", "listener")).id
    await env.h.signal(env.h.started[0], 2, with_listeners(HTTP | {"name": "web"}), finalizers=[FINALIZER])
    await env.wait_reason("Provisioned", generation=2)
    new = env.o.named(env.o.listeners, env.name("web", "listener"))
    assert new.port == 80 and new.id != old and old not in env.o.listeners
    assert {p.name for p in env.o.pools.values()} == {env.name("web", "pool")}
    assert no_errors(env)  # the fake refuses a second listener on port 80: the old one went first


async def test_P8_removed_health_check_prunes_the_monitor(env: Env) -> None:
    await env.apply(with_listeners(HTTP))
    await env.wait_reason("Provisioned")
    http = {k: v for k, v in HTTP.items() if k != "healthCheck"}
    await env.h.signal(env.h.started[0], 2, with_listeners(http), finalizers=[FINALIZER])
    await env.wait_reason("Provisioned", generation=2)
    assert env.o.monitors == {}


async def test_P5_public_ip_off_deletes_the_floating_ip_and_clears_status(env: Env) -> None:
    await env.apply(SPEC)
    await env.wait_reason("Provisioned")
    assert env.status()["publicIP"]
    await env.h.signal(env.h.started[0], 2, SPEC | {"publicIP": False}, finalizers=[FINALIZER])
    await env.wait_reason("Provisioned", generation=2)
    assert env.o.fips == {} and env.status()["publicIP"] is None


@pytest.mark.parametrize("target", ["loadbalancer", "listener"])
async def test_P3_error_status_is_a_consistency_error_and_nothing_is_mutated(env: Env, target: str) -> None:
    await env.apply(with_listeners(HTTP))
    await env.wait_reason("Provisioned")
    obj = (
        env.o.lb() if target == "loadbalancer" else env.o.named(env.o.listeners, env.name("http", "listener"))
    )
    env.o.force(obj.id, "ERROR")
    before = list(env.o.mutations())
    changed: dict[str, Any] = copy.deepcopy(HTTP)
    changed["pool"] = {"proxyProtocolV2": True, "members": []}
    await env.h.signal(env.h.started[0], 2, with_listeners(changed, publicIP=False), finalizers=[FINALIZER])
    cond = await env.wait_reason("Errored", generation=2)
    assert cond["status"] == "False" and "provisioning status ERROR" in cond["message"]
    assert obj.id not in cond["message"]  # user-safe: names, not provider IDs
    await env.h.env.sleep(60)  # retries on durable timers: still read-only
    assert env.o.mutations() == before and len(env.o.fips) == 1


async def test_P1_two_load_balancers_with_the_exact_name_are_a_consistency_error(env: Env) -> None:
    env.uid = str(uuid.uuid4())
    env.o.add_lb(env.name())
    env.o.add_lb(env.name())
    env.o.add_lb(env.name() + "0")  # a fuzzy-filter neighbour: never counted
    await env.apply(SPEC)
    cond = await env.wait_reason("Errored")
    assert "2 Octavia objects are named exactly" in cond["message"]
    assert env.o.mutations() == []


async def test_P2_requested_vip_differing_from_the_actual_is_a_consistency_error(env: Env) -> None:
    env.uid = str(uuid.uuid4())
    env.o.add_lb(env.name())  # made earlier with the fake's VIP 10.20.0.5
    await env.apply(SPEC | {"vipAddress": "10.20.0.99"})
    cond = await env.wait_reason("Errored")
    assert "not the requested 10.20.0.99" in cond["message"] and env.o.mutations() == []


async def test_P1_existing_load_balancer_is_adopted_not_duplicated(env: Env) -> None:
    env.uid = str(uuid.uuid4())
    lb = env.o.add_lb(env.name())
    await env.apply(with_listeners(DNS))
    await env.wait_reason("Provisioned")
    assert list(env.o.lbs) == [lb.id] and env.o.count(io.CREATE_LOAD_BALANCER.name) == 0


async def test_D1_to_D4_delete_removes_the_floating_ip_first_then_cascades(env: Env) -> None:
    wf = await env.apply(SPEC)
    await env.wait_reason("Provisioned")
    await env.h.signal(wf, 1, SPEC, finalizers=[FINALIZER], deleting=True)
    assert await wf.result() == "deleted"
    assert env.o.lbs == {} and env.o.fips == {} and env.o.listeners == {}
    deletes = [c for c in env.o.calls if c in (io.DELETE_FLOATING_IP.name, io.DELETE.name)]
    assert deletes == [io.DELETE_FLOATING_IP.name, io.DELETE.name]


async def test_D_never_realised_load_balancer_deletes_without_cloud_calls(env: Env) -> None:
    env.uid = str(uuid.uuid4())
    wf = await env.h.apply("LoadBalancer", SPEC, 1, uid=env.uid, finalizers=[FINALIZER], deleting=True)
    assert await wf.result() == "deleted"
    assert env.o.calls == []


async def test_D4_stuck_delete_keeps_every_run_short_and_ends_when_octavia_does(env: Env) -> None:
    """A cascade delete Octavia never finishes: re-checked one pass at a time, and continue-as-new keeps
    each run's history bounded however long it takes (half a simulated hour here)."""
    passes = 10
    config = CONFIG.model_copy(update={"max_passes_per_run": passes})
    env.uid = str(uuid.uuid4())
    wf = await env.h.apply("LoadBalancer", SPEC, 1, uid=env.uid, finalizers=[FINALIZER], config=config)
    await env.wait_reason("Provisioned")
    env.o.stuck_deletes = True
    first = await current_run(env.h.env.client, wf.id)
    await env.h.signal(wf, 1, SPEC, finalizers=[FINALIZER], deleting=True)
    await skip(env.h.env, 30 * 60)
    run = await current_run(env.h.env.client, wf.id)
    assert run.run_id != first.run_id  # the delete went on across runs
    assert len(run.events) < passes * 15, len(run.events)  # a pass is about ten events
    assert env.o.count(io.DELETE.name) == 1  # the cascade was sent once; D4 waited since
    assert env.o.lbs and env.available()["reason"] == "Deprovisioning"
    env.o.finish_deletes()
    assert await wf.result() == "deleted"
    assert env.o.lbs == {} and env.o.fips == {}


async def test_web_ui_timeline_reads_as_sentences(env: Env) -> None:
    """Every activity and timer of a LoadBalancer's life (create with PENDING waits, a change, a slow
    delete) carries a summary that says what it does or waits for, as the Web UI shows it."""
    env.o.settle_reads = 2
    wf = await env.apply(with_listeners(HTTP))
    await env.wait_reason("Provisioned")
    members = [{"address": "10.0.0.11", "port": 8080}, {"address": "10.0.0.12", "port": 8080}]
    http = HTTP | {"pool": {"proxyProtocolV2": True, "members": members}}
    await env.h.signal(wf, 2, with_listeners(http), finalizers=[FINALIZER])
    await env.wait_reason("Provisioned", generation=2)
    env.o.stuck_deletes = True
    await env.h.signal(wf, 2, with_listeners(http), finalizers=[FINALIZER], deleting=True)
    await env.wait_reason("Deprovisioning", generation=2)
    await env.h.env.sleep(30)  # server time: Octavia is still deleting at the next re-checks (D4)
    env.o.finish_deletes()
    assert await wf.result() == "deleted"
    labels = await timeline(env.h.env.client, wf.id)
    unreadable = [(kind, text) for kind, text in labels if not reads_as_sentence(text)]
    assert labels and unreadable == []
    texts = [text for _, text in labels]
    lb = env.name()
    assert (texts[0] or "").startswith("check the tenancy mapping allows project")  # before any cloud call
    assert texts[1] == f"R0: read load balancer {lb} with its listeners, pools, monitors and members"
    assert texts[-1] == "remove finalizer octavia.osh.openstack.org/finalizer"
    assert (
        f"wait for Octavia: load balancer {lb} to be ACTIVE (a read every 0.2 s), then R0: read its tree"
        in texts
    )
    assert (
        f"P7c: replace the members of pool {env.name('http', 'pool')} with 2 member(s)"
        " (R0s: decided on the last pass's read)"
    ) in texts
    assert f"wait for Octavia: load balancer {lb} to be gone (a read every 0.2 s)" in texts
    assert f"re-check: D4: waiting for load balancer {lb} to go (PENDING_DELETE)" in texts


def test_a_bare_number_is_not_a_sentence() -> None:
    assert not reads_as_sentence("24")
    assert not reads_as_sentence(None)
    assert not reads_as_sentence("list lb-1-*listener")
    assert reads_as_sentence("re-check: P7a: create pool lb-1-http-pool (TCP); waiting for ACTIVE")


# --- observe only (managementPolicy unmanaged + import): rows O1…O4, OL1…OL3 (workflows/observe_import.py) ---
def imported(chosen: dict[str, Any]) -> dict[str, Any]:
    return with_listeners(HTTP, managementPolicy="unmanaged", deletionPolicy="retain", **{"import": chosen})


@pytest.mark.parametrize("by", ["id", "filter"])
async def test_O1_OL1_an_imported_load_balancer_is_mirrored_never_changed_and_outlives_its_resource(
    env: Env, by: str
) -> None:
    """The status mirrors a load balancer osprov did not create: no listener, pool, member, monitor or
    floating IP is made for the spec, nothing is deleted when the resource goes."""
    theirs = env.o.add_lb("legacy-lb")
    wf = await env.h.apply(
        "LoadBalancer", imported({"id": theirs.id} if by == "id" else {"filter": {"name": "legacy-lb"}})
    )
    assert (await env.wait_reason("Provisioned"))["status"] == "True"
    assert env.status()["loadBalancerID"] == theirs.id and env.status()["vipAddress"] == env.o.vip_address
    env.o.force(theirs.id, "ERROR")  # OL2 at the next resync
    await skip(env.h.env, 3600)
    await env.wait_reason("Errored")
    env.o.force(theirs.id, "PENDING_UPDATE")  # OL3: re-read soon until it settles
    await skip(env.h.env, 3600)
    await env.wait_reason("Provisioning")
    env.o._forced.pop(theirs.id)
    await env.wait_reason("Provisioned")
    await env.h.signal(wf, 1, imported({"id": theirs.id}), deleting=True)
    assert await wf.result() == "deleted"
    assert env.o.mutations() == [] and env.o.fips == {} and list(env.o.lbs) == [theirs.id]


async def test_O3_O4_an_import_that_matches_nothing_another_projects_or_two_creates_nothing(env: Env) -> None:
    foreign = env.o.add_lb("theirs")
    env.o.foreign.add(foreign.id)
    env.o.add_lb("twin")
    env.o.add_lb("twin")
    for name, chosen, shown in (
        ("missing", {"id": "lb-404"}, "no Octavia load balancer with ID lb-404"),
        ("foreign", {"id": foreign.id}, f"no Octavia load balancer with ID {foreign.id}"),
        ("twins", {"filter": {"name": "twin"}}, "2 Octavia load balancers are named twin"),
    ):
        await env.h.apply("LoadBalancer", imported(chosen), name=name)
        await eventually(_says(env, shown), f"{name}: refused", 30)
        assert env.available()["reason"] == "Errored"
    assert env.o.mutations() == [] and len(env.o.lbs) == 3


def _says(env: Env, text: str) -> Callable[[], bool]:
    return lambda: bool(env.h.cloud.statuses) and text in env.available().get("message", "")
