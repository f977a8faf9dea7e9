"""The LoadBalancer decision tables (docs/loadbalancer.md), one row per rule, named by step label.

Pure functions, no Temporal: each row is an observation (what a pass has read so far) and the decision
expected for it. test_loadbalancer.py proves the workflow executes these decisions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from osprov.api import octavia_io as io
from osprov.api.octavia import LoadBalancerSpec
from osprov.workflows.loadbalancer_decisions import (
    Action,
    Done,
    Fail,
    Observation,
    PublicIp,
    ReadMembers,
    ReadTree,
    Tree,
    Wait,
    converge,
    delete,
    fold_members,
    members_end_the_pass,
)

UID = "u1"
LB = io.lb_name(UID)
SCOPE = io.Scope(project="demo", domain="Default")
VIP, PORT, FIP = "10.20.0.5", "port-1", "172.24.4.10"
HTTP: dict[str, Any] = {
    "name": "http",
    "protocol": "TCP",
    "port": 80,
    "allowedCIDRs": ["10.0.0.0/8"],
    "idleTimeoutSeconds": 60,
    "pool": {"proxyProtocolV2": True, "members": [{"address": "10.0.0.11", "port": 8080}]},
    "healthCheck": {"delaySeconds": 5, "timeoutSeconds": 3, "healthyThreshold": 2, "unhealthyThreshold": 3},
}
DNS: dict[str, Any] = {"name": "dns", "protocol": "UDP", "port": 53, "healthCheck": HTTP["healthCheck"]}


def spec(*listeners: dict[str, Any], **fields: Any) -> LoadBalancerSpec:
    body = {
        "project": {"name": "demo", "domain": "Default"},
        "vipNetworkID": "net-1",
        "vipSubnetID": "subnet-1",
        "publicIP": True,
        "listeners": list(listeners) if listeners else [HTTP],
    }
    return LoadBalancerSpec.model_validate(body | fields)


def name(listener: str, kind: str) -> str:
    return f"{LB}-{listener}-{kind}"


def lb(status: str = io.ACTIVE, vip: str | None = VIP, port: str | None = PORT) -> io.LoadBalancerView:
    return io.LoadBalancerView(
        id="lb-id", name=LB, provisioning_status=status, vip_address=vip, vip_port_id=port
    )


def pool(listener: str = "http", status: str = io.ACTIVE, **fields: Any) -> io.PoolView:
    base = {"protocol": "PROXYV2", "lb_algorithm": io.LB_ALGORITHM} | fields
    return io.PoolView(id=f"pool-{listener}", name=name(listener, "pool"), provisioning_status=status, **base)


def listener(ls: str = "http", status: str = io.ACTIVE, **fields: Any) -> io.ListenerView:
    base: dict[str, Any] = {
        "protocol": "TCP",
        "port": 80,
        "allowed_cidrs": ["10.0.0.0/8"],
        "default_pool_id": f"pool-{ls}",
        "timeout_client_data": 60000,
        "timeout_member_data": 60000,
    }
    return io.ListenerView(
        id=f"listener-{ls}", name=name(ls, "listener"), provisioning_status=status, **(base | fields)
    )


def monitor(ls: str = "http", status: str = io.ACTIVE, **fields: Any) -> io.MonitorView:
    base: dict[str, Any] = {
        "type": "TCP",
        "pool_id": f"pool-{ls}",
        "delay": 5,
        "timeout": 3,
        "max_retries": 2,
        "max_retries_down": 3,
    }
    return io.MonitorView(
        id=f"monitor-{ls}", name=name(ls, "monitor"), provisioning_status=status, **(base | fields)
    )


def member(address: str = "10.0.0.11", port: int = 8080, status: str = io.ACTIVE) -> io.MemberView:
    return io.MemberView(id=f"m-{address}", address=address, port=port, provisioning_status=status)


def fip(fid: str = "fip-1", address: str = FIP) -> io.FloatingIpView:
    return io.FloatingIpView(id=fid, address=address, port_id=PORT)


def converged(**tree: Any) -> Observation:
    """The HTTP listener fully in place: every row below changes one thing of this."""
    base = Tree(listeners=(listener(),), pools=(pool(),), monitors=(monitor(),), floating_ips=(fip(),))
    return Observation(found=(lb(),), tree=replace(base, **tree), members={"pool-http": (member(),)})


def with_members(obs: Observation, **members: tuple[io.MemberView, ...]) -> Observation:
    return replace(obs, members=members)


def fail(text: str) -> Callable[[Action], bool]:
    return lambda a: isinstance(a, Fail) and text in a.message


CHILDREN = io.ListChildren(scope=SCOPE, load_balancer_id="lb-id", prefix=f"{LB}-")
HTTP_ORPHAN_MONITOR = monitor("old", pool_id="pool-http")

# id, spec, observation, rule, expected action (or a predicate on it)
CONVERGE_ROWS: list[tuple[str, LoadBalancerSpec, Observation, str, Action | Callable[[Action], bool]]] = [
    ("P1-find-by-exact-name", spec(), Observation(), "P1", io.FindLoadBalancer(scope=SCOPE, name=LB)),
    (
        "P1-create-when-absent",
        spec(vipAddress="10.20.0.7"),
        Observation(found=()),
        "P1",
        io.CreateLoadBalancer(
            scope=SCOPE, name=LB, vip_network_id="net-1", vip_subnet_id="subnet-1", vip_address="10.20.0.7"
        ),
    ),
    (
        "P1-two-exact-matches-fail",
        spec(),
        Observation(found=(lb(), lb())),
        "P1",
        fail(f"2 Octavia objects are named exactly {LB}"),
    ),
    (
        "P2-requested-vip-differs-fails",
        spec(vipAddress="10.20.0.99"),
        Observation(found=(lb(),)),
        "P2",
        fail("not the requested 10.20.0.99"),
    ),
    (
        "P2-requested-vip-unset-fails",
        spec(vipAddress=VIP),
        Observation(found=(lb(vip=None),)),
        "P2",
        fail("VIP is unset"),
    ),
    ("P3-pending-waits", spec(), Observation(found=(lb("PENDING_UPDATE"),)), "P3", Wait()),
    ("P3-pending-create-waits", spec(), Observation(found=(lb("PENDING_CREATE"),)), "P3", Wait()),
    ("P3-error-fails", spec(), Observation(found=(lb("ERROR"),)), "P3", fail("provisioning status ERROR")),
    (
        "P4-no-vip-port-fails",
        spec(),
        Observation(found=(lb(port=None),)),
        "P4",
        fail("no VIP address or VIP port"),
    ),
    (
        "R1-read-children-and-floating-ips",
        spec(vipAddress=VIP),
        Observation(found=(lb(),)),
        "R1",
        ReadTree(children=CHILDREN, floating_ips=io.FindFloatingIps(scope=SCOPE, port_id=PORT)),
    ),
    (
        "P3b-pending-listener-waits",
        spec(),
        converged(listeners=(listener(status="PENDING_UPDATE"),)),
        "P3b",
        Wait(),
    ),
    (
        "P3b-error-pool-fails",
        spec(),
        converged(pools=(pool(status="ERROR"),)),
        "P3b",
        fail(f"{name('http', 'pool')} in provisioning status ERROR"),
    ),
    (
        "P3b-error-orphan-monitor-fails",
        spec(),
        converged(monitors=(monitor(), monitor("old", "ERROR"))),
        "P3b",
        fail("ERROR"),
    ),
    (
        "R2-read-members-of-the-spec-pools-only",
        spec(),
        replace(converged(pools=(pool(), pool("old"))), members=None),
        "R2",
        ReadMembers(SCOPE, (pool(),)),
    ),
    (
        "P3b-pending-member-waits",
        spec(),
        with_members(converged(), **{"pool-http": (member(status="PENDING_CREATE"),)}),
        "P3b",
        Wait(),
    ),
    (
        "P3b-error-member-fails",
        spec(),
        with_members(converged(), **{"pool-http": (member(status="ERROR"),)}),
        "P3b",
        fail("member 10.0.0.11:8080"),
    ),
    (
        "P5-two-floating-ips-fail",
        spec(),
        converged(floating_ips=(fip(), fip("fip-2", "172.24.4.11"))),
        "P5",
        fail("2 floating IPs"),
    ),
    (
        "P5-unwanted-floating-ip-is-deleted",
        spec(publicIP=False),
        converged(),
        "P5",
        io.DeleteFloatingIp(scope=SCOPE, id="fip-1"),
    ),
    (
        "P5-wanted-floating-ip-is-created",
        spec(),
        converged(floating_ips=()),
        "P5",
        io.CreateFloatingIp(scope=SCOPE, port_id=PORT),
    ),
    (
        "P6-prune-orphan-listener",
        spec(),
        converged(listeners=(listener(), listener("old", port=81))),
        "P6",
        io.DeleteObject(scope=SCOPE, kind="listener", id="listener-old"),
    ),
    (
        "P6-prune-before-creating-the-renamed-listener",
        spec(HTTP | {"name": "web"}),
        with_members(converged(pools=(pool(),), monitors=()), **{"pool-http": (member(),)}),
        "P6",
        io.DeleteObject(scope=SCOPE, kind="listener", id="listener-http"),
    ),
    (
        "P7a-create-pool-proxyv2",
        spec(),
        converged(pools=(), listeners=(), monitors=()),
        "P7a",
        io.CreatePool(scope=SCOPE, load_balancer_id="lb-id", name=name("http", "pool"), protocol="PROXYV2"),
    ),
    (
        "P7a-create-pool-udp",
        spec(DNS),
        with_members(
            converged(pools=(), listeners=(), monitors=()),
        ),
        "P7a",
        io.CreatePool(scope=SCOPE, load_balancer_id="lb-id", name=name("dns", "pool"), protocol="UDP"),
    ),
    (
        "P7a-two-pools-with-the-name-fail",
        spec(),
        converged(pools=(pool(), pool().model_copy(update={"id": "pool-2"}))),
        "P7a",
        fail("2 Octavia objects are named exactly"),
    ),
    (
        "P7a-protocol-differs-fails",
        spec(),
        converged(pools=(pool(protocol="TCP"),)),
        "P7a",
        fail("has protocol TCP, not PROXYV2"),
    ),
    (
        "P7a-lb-algorithm-drift-is-fixed",
        spec(),
        converged(pools=(pool(lb_algorithm="LEAST_CONNECTIONS"),)),
        "P7a",
        io.UpdatePool(scope=SCOPE, id="pool-http", lb_algorithm=io.LB_ALGORITHM),
    ),
    (
        "P7b-create-listener-linked-to-its-pool",
        spec(),
        converged(listeners=(), monitors=()),
        "P7b",
        io.CreateListener(
            scope=SCOPE,
            load_balancer_id="lb-id",
            name=name("http", "listener"),
            protocol="TCP",
            port=80,
            default_pool_id="pool-http",
            allowed_cidrs=["10.0.0.0/8"],
            timeout_client_data=60000,
            timeout_member_data=60000,
        ),
    ),
    (
        "P7b-port-differs-fails",
        spec(),
        converged(listeners=(listener(port=8080),)),
        "P7b",
        fail("is TCP/8080, not TCP/80"),
    ),
    (
        "P7b-allowed-cidrs-drift-is-updated",
        spec(),
        converged(listeners=(listener(allowed_cidrs=[]),)),
        "P7b",
        io.UpdateListener(scope=SCOPE, id="listener-http", allowed_cidrs=["10.0.0.0/8"]),
    ),
    (
        "P7b-default-pool-and-idle-timeouts-are-relinked",
        spec(),
        converged(listeners=(listener(default_pool_id=None, timeout_client_data=50000),)),
        "P7b",
        io.UpdateListener(
            scope=SCOPE,
            id="listener-http",
            default_pool_id="pool-http",
            timeout_client_data=60000,
            timeout_member_data=60000,
        ),
    ),
    (
        "P7c-members-replaced-in-one-batch",
        spec(),
        with_members(converged(), **{"pool-http": (member("10.0.0.99"),)}),
        "P7c",
        io.ReplaceMembers(
            scope=SCOPE, pool_id="pool-http", members=[io.Member(address="10.0.0.11", port=8080)]
        ),
    ),
    (
        "P7c-no-members-left-is-an-empty-batch",
        spec(HTTP | {"pool": {"proxyProtocolV2": True, "members": []}}),
        converged(),
        "P7c",
        io.ReplaceMembers(scope=SCOPE, pool_id="pool-http", members=[]),
    ),
    (
        "P7d-create-monitor",
        spec(),
        converged(monitors=()),
        "P7d",
        io.CreateMonitor(
            scope=SCOPE,
            pool_id="pool-http",
            name=name("http", "monitor"),
            type="TCP",
            delay=5,
            timeout=3,
            max_retries=2,
            max_retries_down=3,
        ),
    ),
    (
        "P7d-type-differs-fails",
        spec(),
        converged(monitors=(monitor(type="HTTP"),)),
        "P7d",
        fail("does not match its listener"),
    ),
    (
        "P7d-on-another-pool-fails",
        spec(),
        converged(monitors=(monitor(pool_id="pool-x"),)),
        "P7d",
        fail("does not match its listener"),
    ),
    (
        "P7d-thresholds-drift-is-updated",
        spec(),
        converged(monitors=(monitor(max_retries_down=9),)),
        "P7d",
        io.UpdateMonitor(
            scope=SCOPE, id="monitor-http", delay=5, timeout=3, max_retries=2, max_retries_down=3
        ),
    ),
    (
        "P8-prune-monitor-of-a-removed-health-check",
        spec({k: v for k, v in HTTP.items() if k != "healthCheck"}),
        converged(),
        "P8",
        io.DeleteObject(scope=SCOPE, kind="healthmonitor", id="monitor-http"),
    ),
    (
        "P8-prune-orphan-pool-and-leave-its-monitor-to-the-cascade",
        spec(),
        converged(pools=(pool(), pool("old")), monitors=(monitor(), monitor("old", pool_id="pool-old"))),
        "P8",
        io.DeleteObject(scope=SCOPE, kind="pool", id="pool-old"),
    ),
    (
        "P8-prune-orphan-monitor-first",
        spec(),
        converged(pools=(pool(), pool("old")), monitors=(monitor(), HTTP_ORPHAN_MONITOR)),
        "P8",
        io.DeleteObject(scope=SCOPE, kind="healthmonitor", id="monitor-old"),
    ),
    (
        "P8-nothing-left-is-provisioned",
        spec(),
        converged(),
        "P8",
        Done(f"load balancer {LB} is ACTIVE with 1 listener(s), VIP {VIP}, public IP {FIP}"),
    ),
    (
        "P8-zero-listeners-is-provisioned",
        spec(listeners=[], publicIP=False),
        Observation(found=(lb(),), tree=Tree(), members={}),
        "P8",
        Done(f"load balancer {LB} is ACTIVE with 0 listener(s), VIP {VIP}"),
    ),
]


@pytest.mark.parametrize(
    ("row", "lb_spec", "obs", "rule", "expected"), CONVERGE_ROWS, ids=[r[0] for r in CONVERGE_ROWS]
)
def test_converge_rule(
    row: str,
    lb_spec: LoadBalancerSpec,
    obs: Observation,
    rule: str,
    expected: Action | Callable[[Action], bool],
) -> None:
    d = converge(lb_spec, UID, obs)
    assert d.rule == rule, d
    if callable(expected) and not isinstance(expected, type):
        assert expected(d.action), d.action
    else:
        assert d.action == expected


def test_the_pass_goes_on_in_spec_order_listener_by_listener() -> None:
    # P7 finishes the first listener (here: its monitor) before it creates the second one's pool.
    obs = with_members(converged(monitors=()), **{"pool-http": (member(),)})
    assert converge(spec(HTTP, DNS), UID, obs).rule == "P7d"
    done_http = converged()
    assert converge(spec(HTTP, DNS), UID, done_http).action == io.CreatePool(
        scope=SCOPE, load_balancer_id="lb-id", name=name("dns", "pool"), protocol="UDP"
    )


def test_public_ip_is_recorded_only_past_P5() -> None:
    assert converge(spec(), UID, Observation(found=(lb("PENDING_UPDATE"),))).public_ip is None
    assert converge(spec(), UID, converged(floating_ips=())).public_ip is None  # P5 creates it first
    assert converge(spec(), UID, converged()).public_ip == PublicIp(FIP)
    assert converge(spec(), UID, converged(monitors=())).public_ip == PublicIp(FIP)  # P7d also records it
    assert converge(spec(publicIP=False), UID, converged(floating_ips=())).public_ip == PublicIp(None)


def test_folding_a_floating_ip_call_settles_P5() -> None:
    created = converged(floating_ips=()).with_floating_ip(fip())
    assert converge(spec(), UID, created).rule == "P8"
    deleted = converged().without_floating_ip("fip-1")
    assert converge(spec(publicIP=False), UID, deleted).public_ip == PublicIp(None)


def test_R0m_a_members_batch_ends_the_pass_only_when_the_rest_of_its_read_is_converged() -> None:
    """R0m: the wait after a member batch reads only that pool's members when, with them in place, the
    decisions on the rest of the pass's read say Done; a second change still due (another pool's members,
    a listener field) keeps the whole R0."""
    moved = HTTP | {"pool": HTTP["pool"] | {"members": [{"address": "10.0.0.12", "port": 8080}]}}
    obs = converged()
    d = converge(spec(moved), UID, obs)
    assert d.rule == "P7c" and isinstance(d.action, io.ReplaceMembers)
    assert members_end_the_pass(spec(moved), UID, obs, d.action)
    cidrs = moved | {"allowedCIDRs": ["192.168.0.0/16"]}
    first = converge(spec(cidrs), UID, obs)
    assert first.rule == "P7b"  # the listener first: its batch comes after, and ends the pass
    later = converge(spec(cidrs), UID, converged(listeners=(listener(allowed_cidrs=["192.168.0.0/16"]),)))
    assert isinstance(later.action, io.ReplaceMembers)
    assert not members_end_the_pass(spec(cidrs), UID, obs, later.action)  # the CIDRs still differ in obs
    second = moved | {"name": "alt", "port": 8080}
    both = replace(
        obs,
        tree=replace(
            obs.tree or Tree(),
            listeners=(listener(), listener("alt", port=8080)),
            pools=(pool(), pool("alt")),
            monitors=(monitor(), monitor("alt")),
        ),
        members={"pool-http": (member(),), "pool-alt": (member(),)},
    )
    two = converge(spec(moved, second), UID, both)
    assert isinstance(two.action, io.ReplaceMembers) and two.action.pool_id == "pool-http"
    assert not members_end_the_pass(spec(moved, second), UID, both, two.action)  # the other pool's next
    done_first = replace(both, members={"pool-http": (member("10.0.0.12"),), "pool-alt": (member(),)})
    last = converge(spec(moved, second), UID, done_first)
    assert isinstance(last.action, io.ReplaceMembers) and last.action.pool_id == "pool-alt"
    assert members_end_the_pass(spec(moved, second), UID, done_first, last.action)
    assert members_end_the_pass(spec(moved), UID, Observation(found=(lb(),)), d.action) is False  # unread


def test_R0m_its_answer_folds_into_the_pass_s_read() -> None:
    """The confirmation's answer replaces the load balancer's read and the changed pool's members; the
    rest stays what R0 read. Members as the batch made them: Done; anything else is not."""
    moved = HTTP | {"pool": HTTP["pool"] | {"members": [{"address": "10.0.0.12", "port": 8080}]}}
    read = io.Topology(found=[lb()], members={"pool-http": [member("10.0.0.12")]})
    assert converge(spec(moved), UID, fold_members(converged(), read)).rule == "P8"
    extra = io.Topology(found=[lb()], members={"pool-http": [member("10.0.0.12"), member("10.0.0.99")]})
    assert converge(spec(moved), UID, fold_members(converged(), extra)).rule == "P7c"
    busy = io.Topology(found=[lb()], members={"pool-http": [member("10.0.0.12", status="PENDING_CREATE")]})
    assert isinstance(converge(spec(moved), UID, fold_members(converged(), busy)).action, Wait)


@pytest.mark.parametrize("status", ["ERROR", "DEGRADED", "PENDING_UPDATE"])
def test_nothing_is_mutated_while_any_object_is_not_active(status: str) -> None:
    """Every mutation leaves Octavia PENDING: no mutation is decided over a non-ACTIVE object."""
    drifted = spec(HTTP | {"allowedCIDRs": ["192.168.0.0/16"]}, publicIP=False)
    for obs in (
        converged(listeners=(listener(status=status),)),
        converged(pools=(pool(status=status),)),
        converged(monitors=(monitor(status=status),)),
        with_members(converged(), **{"pool-http": (member(status=status),)}),
        Observation(found=(lb(status),)),
    ):
        action = converge(drifted, UID, obs).action
        assert isinstance(action, Wait if status.startswith("PENDING") else Fail), (obs, action)


FOUND = Observation(found=(lb(),))
NO_FIPS = replace(FOUND, tree=Tree())
DELETE_ROWS: list[tuple[str, bool, Observation, str, Action | Callable[[Action], bool]]] = [
    ("D1-never-realised-is-done-without-a-call", False, Observation(), "D1", Done()),
    ("D1-find-by-exact-name", True, Observation(), "D1", io.FindLoadBalancer(scope=SCOPE, name=LB)),
    ("D1-gone-is-done", True, Observation(found=()), "D1", Done()),
    ("D1-two-exact-matches-fail", True, Observation(found=(lb(), lb())), "D1", fail("2 Octavia objects")),
    ("D4-pending-delete-waits", True, Observation(found=(lb("PENDING_DELETE"),)), "D4", Wait()),
    ("D4-pending-update-waits", True, Observation(found=(lb("PENDING_UPDATE"),)), "D4", Wait()),
    (
        "D2-read-floating-ips-of-the-vip-port",
        True,
        FOUND,
        "D2",
        io.FindFloatingIps(scope=SCOPE, port_id=PORT),
    ),
    (
        "D2-floating-ip-goes-before-the-cascade",
        True,
        replace(FOUND, tree=Tree(floating_ips=(fip(), fip("fip-2")))),
        "D2",
        io.DeleteFloatingIp(scope=SCOPE, id="fip-1"),
    ),
    (
        "D3-cascade-delete",
        True,
        NO_FIPS,
        "D3",
        io.DeleteObject(scope=SCOPE, kind="loadbalancer", id="lb-id", cascade=True),
    ),
    (
        "D3-cascade-delete-in-error",
        True,
        replace(NO_FIPS, found=(lb("ERROR"),)),
        "D3",
        io.DeleteObject(scope=SCOPE, kind="loadbalancer", id="lb-id", cascade=True),
    ),
    (
        "D3-no-vip-port-cascades-without-a-floating-ip-read",
        True,
        Observation(found=(lb(port=None),)),
        "D3",
        io.DeleteObject(scope=SCOPE, kind="loadbalancer", id="lb-id", cascade=True),
    ),
]


@pytest.mark.parametrize(
    ("row", "realised", "obs", "rule", "expected"), DELETE_ROWS, ids=[r[0] for r in DELETE_ROWS]
)
def test_delete_rule(
    row: str, realised: bool, obs: Observation, rule: str, expected: Action | Callable[[Action], bool]
) -> None:
    d = delete(spec(), UID, realised, obs)
    assert d.rule == rule, d
    if callable(expected) and not isinstance(expected, type):
        assert expected(d.action), d.action
    else:
        assert d.action == expected


def test_delete_takes_every_floating_ip_before_the_cascade() -> None:
    obs = replace(FOUND, tree=Tree(floating_ips=(fip(), fip("fip-2"))))
    sent = []
    while not isinstance((d := delete(spec(), UID, True, obs)).action, io.DeleteObject):
        assert isinstance(d.action, io.DeleteFloatingIp)
        sent.append(d.action.id)
        obs = obs.without_floating_ip(d.action.id)
    assert sent == ["fip-1", "fip-2"]


def test_every_step_reads_as_a_sentence() -> None:
    for _, lb_spec, obs, _, _ in CONVERGE_ROWS:
        step = converge(lb_spec, UID, obs).step
        assert step.split(": ", 1)[1][0].isalpha() and len(step.split()) >= 3, step


def test_P1_a_vip_network_named_by_resource_is_handed_to_the_create_to_resolve() -> None:
    by_name = spec(vipNetworkID=None, vipSubnetID=None, vipNetwork="front")
    d = converge(by_name, UID, Observation(found=()), SCOPE, namespace="team-a")
    assert d.rule == "P1" and "of Network front" in d.what
    assert d.action == io.CreateLoadBalancer(
        scope=SCOPE, name=LB, vip_network="front", namespace="team-a", vip_address=None
    )
