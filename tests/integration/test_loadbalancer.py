"""LoadBalancer end to end on the real local stack: CR → bridge → Temporal → worker → real Octavia + Neutron.

Outcomes are asserted in Octavia and Neutron (admin openstacksdk client) and in the resources' status. The
module uses its own Keystone project, where the controller's user is granted member and
load-balancer_member, so every Octavia/Neutron call runs with a token scoped to that project.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openstack.connection
import pytest
import yaml
from kubernetes.client.exceptions import ApiException
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError

from devenv.faults.cloud_state import octavia_force_provisioning_status
from devenv.openstack.catalog import VIP_NETWORK, VIP_SUBNET
from devenv.testing import StackEnv
from osprov.api import octavia, octavia_io
from osprov.api.errors import CONFLICT, NOT_FOUND
from osprov.api.registry import kind_info
from tests.support.osprov import Osprov, ensure_crd, run_osprov
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.stack, pytest.mark.fullstack]

KIND = "LoadBalancer"
NOT_OURS = {"name": "another-deployment"}  # admission-only resources: the controller leaves them alone
AVAILABLE = "Available"
CONTROLLER_USER = "admin"  # the user of the worker's clouds.yaml (cloud osprov-admin)
HTTP: dict[str, Any] = {
    "name": "http",
    "protocol": "TCP",
    "port": 80,
    "allowedCIDRs": ["10.0.0.0/8"],
    "idleTimeoutSeconds": 60,
    "pool": {"proxyProtocolV2": True, "members": [{"address": "10.20.0.11", "port": 8080}]},
    "healthCheck": {"delaySeconds": 5, "timeoutSeconds": 3, "healthyThreshold": 2, "unhealthyThreshold": 3},
}
DNS: dict[str, Any] = {
    "name": "dns",
    "protocol": "UDP",
    "port": 53,
    "pool": {"members": [{"address": "10.20.0.21", "port": 53}]},
    "healthCheck": {"delaySeconds": 10, "timeoutSeconds": 5, "healthyThreshold": 2, "unhealthyThreshold": 2},
}


@pytest.fixture(scope="module")
def project(admin: openstack.connection.Connection) -> Iterator[Any]:
    ident: Any = admin.identity
    proj = ident.create_project(name=f"lb-{uuid.uuid4().hex[:8]}", domain_id="default")
    user = ident.find_user(CONTROLLER_USER, domain_id="default", ignore_missing=False)
    for role_name in ("member", "load-balancer_member"):
        role = ident.find_role(role_name) or ident.create_role(name=role_name)
        ident.assign_project_role_to_user(proj.id, user, role)
    yield proj
    for lb in admin.load_balancer.load_balancers(project_id=proj.id):
        admin.load_balancer.delete_load_balancer(lb.id, cascade=True, ignore_missing=True)
    for fip in admin.network.ips(project_id=proj.id):
        admin.network.delete_ip(fip.id, ignore_missing=True)


@pytest.fixture(scope="module")
def osprov(full_stack: StackEnv, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Osprov]:
    ensure_crd(full_stack, KIND)
    yield from run_osprov(full_stack, tmp_path_factory.mktemp("loadbalancer"), resync_seconds=30)


@pytest.fixture(scope="module")
def vip(admin: openstack.connection.Connection) -> dict[str, str]:
    net = admin.network.find_network(VIP_NETWORK, ignore_missing=False)
    subnet = admin.network.find_subnet(VIP_SUBNET, ignore_missing=False)
    return {"vipNetworkID": net.id, "vipSubnetID": subnet.id}


def spec(project: Any, vip: dict[str, str], *listeners: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "project": {"name": project.name, "domain": "Default"},
        **vip,
        "deletionPolicy": "delete",
        "listeners": [copy.deepcopy(x) for x in listeners],
        **extra,
    }


class Cloud:
    """What Octavia and Neutron hold for one LoadBalancer resource, read with the admin client."""

    def __init__(self, admin: openstack.connection.Connection, project: Any, uid: str) -> None:
        self.lb_api, self.net, self.project_id, self.prefix = (
            admin.load_balancer,
            admin.network,
            project.id,
            f"lb-{uid}",
        )

    def lbs(self) -> list[Any]:
        return [x for x in self.lb_api.load_balancers(project_id=self.project_id) if x.name == self.prefix]

    def lb(self) -> Any:
        [lb] = self.lbs()
        return lb

    def named(self, kind: str, listener: str) -> list[Any]:
        name = f"{self.prefix}-{listener}-{kind}"
        items = {
            "listener": self.lb_api.listeners,
            "pool": self.lb_api.pools,
            "monitor": self.lb_api.health_monitors,
        }[kind](project_id=self.project_id)
        return [x for x in items if x.name == name]

    def one(self, kind: str, listener: str) -> Any:
        found = self.named(kind, listener)
        assert len(found) == 1, f"{len(found)} {kind}s for listener {listener}"
        return found[0]

    def owned_names(self) -> set[str]:
        return {
            x.name
            for items in (self.lb_api.listeners, self.lb_api.pools, self.lb_api.health_monitors)
            for x in items(project_id=self.project_id)
            if (x.name or "").startswith(self.prefix + "-")
        }

    def members(self, listener: str) -> set[tuple[str, int]]:
        return {(m.address, m.protocol_port) for m in self.lb_api.members(self.one("pool", listener).id)}

    def fips(self, port_id: str) -> list[Any]:
        return list(self.net.ips(port_id=port_id))


def create(
    osprov: Osprov, admin: Any, project: Any, name: str, body: dict[str, Any]
) -> tuple[dict[str, Any], Cloud]:
    osprov.apply(KIND, name, body)
    obj = osprov.wait_ready(KIND, name, ctype=AVAILABLE, timeout_s=300)
    return obj, Cloud(admin, project, obj["metadata"]["uid"])


def errored(osprov: Osprov, name: str) -> dict[str, Any] | None:
    cond = osprov.condition(KIND, name, AVAILABLE)
    return cond if cond and cond["reason"] == "Errored" else None


def test_full_create_converges_in_place_then_deletes_with_its_floating_ip(
    osprov: Osprov, admin: Any, project: Any, vip: dict[str, str]
) -> None:
    obj, cloud = create(osprov, admin, project, "web", spec(project, vip, HTTP, DNS, publicIP=True))
    lb = cloud.lb()
    assert lb.provisioning_status == "ACTIVE" and lb.project_id == project.id
    status = obj["status"]
    [fip] = cloud.fips(lb.vip_port_id)
    assert (status["loadBalancerID"], status["vipAddress"], status["publicIP"]) == (
        lb.id, lb.vip_address, fip.floating_ip_address)  # fmt: skip
    assert (osprov.condition(KIND, "web", AVAILABLE) or {})["reason"] == "Provisioned"
    http, dns = cloud.one("listener", "http"), cloud.one("listener", "dns")
    assert (http.protocol, http.protocol_port, dns.protocol, dns.protocol_port) == ("TCP", 80, "UDP", 53)
    assert http.allowed_cidrs == ["10.0.0.0/8"] and http.timeout_client_data == 60000
    assert (cloud.one("pool", "http").protocol, cloud.one("pool", "dns").protocol) == ("PROXYV2", "UDP")
    assert http.default_pool_id == cloud.one("pool", "http").id
    assert (cloud.one("monitor", "http").type, cloud.one("monitor", "dns").type) == ("TCP", "UDP-CONNECT")
    assert cloud.members("http") == {("10.20.0.11", 8080)}
    ids = {k: cloud.one(k, ls).id for k in ("listener", "pool", "monitor") for ls in ("http", "dns")}

    changed = copy.deepcopy(HTTP) | {
        "allowedCIDRs": ["192.168.0.0/16", "10.1.0.0/16"],
        "idleTimeoutSeconds": 300,
    }
    changed["pool"]["members"] = [
        {"address": "10.20.0.12", "port": 8080},
        {"address": "10.20.0.13", "port": 8080},
    ]
    changed["healthCheck"] = {
        "delaySeconds": 7,
        "timeoutSeconds": 7,
        "healthyThreshold": 4,
        "unhealthyThreshold": 5,
    }
    osprov.apply(KIND, "web", spec(project, vip, changed, DNS, publicIP=True))
    osprov.wait_ready(KIND, "web", ctype=AVAILABLE, generation=2, timeout_s=300)
    http = cloud.one("listener", "http")
    assert sorted(http.allowed_cidrs) == ["10.1.0.0/16", "192.168.0.0/16"]
    assert (http.timeout_client_data, http.timeout_member_data) == (300000, 300000)
    assert cloud.members("http") == {("10.20.0.12", 8080), ("10.20.0.13", 8080)}
    hm = cloud.one("monitor", "http")
    assert (hm.delay, hm.timeout, hm.max_retries, hm.max_retries_down) == (7, 7, 4, 5)
    assert {k: cloud.one(k, ls).id for k in ("listener", "pool", "monitor") for ls in ("http", "dns")} == ids
    assert cloud.lb().id == lb.id  # converged in place: same Octavia IDs everywhere
    delete_and_check_gone(osprov, admin, cloud, "web", [fip.id])  # delete with a floating IP


def test_pruning_and_public_ip_toggle_then_delete_without_floating_ip(
    osprov: Osprov, admin: Any, project: Any, vip: dict[str, str]
) -> None:
    _, cloud = create(osprov, admin, project, "prune", spec(project, vip, HTTP, DNS))
    port_id = cloud.lb().vip_port_id
    assert cloud.fips(port_id) == []
    # Rename http -> web on the same port, drop dns, and turn the public IP on.
    osprov.apply(KIND, "prune", spec(project, vip, HTTP | {"name": "web"}, publicIP=True))
    obj = osprov.wait_ready(KIND, "prune", ctype=AVAILABLE, generation=2, timeout_s=300)
    assert cloud.owned_names() == {f"{cloud.prefix}-web-{k}" for k in ("listener", "pool", "monitor")}
    assert cloud.one("listener", "web").protocol_port == 80
    [fip] = cloud.fips(port_id)
    assert obj["status"]["publicIP"] == fip.floating_ip_address
    # Public IP off: the floating IP is released and the status field cleared.
    osprov.apply(KIND, "prune", spec(project, vip, HTTP | {"name": "web"}, publicIP=False))
    obj = osprov.wait_ready(KIND, "prune", ctype=AVAILABLE, generation=3, timeout_s=300)
    assert cloud.fips(port_id) == [] and "publicIP" not in obj["status"]
    delete_and_check_gone(osprov, admin, cloud, "prune", [])  # delete without a floating IP


def delete_and_check_gone(osprov: Osprov, admin: Any, cloud: Cloud, name: str, fip_ids: list[str]) -> None:
    """Delete the resource: the finalizer goes only after the floating IP and the whole tree are gone."""
    osprov.delete(KIND, name)
    wait_for(lambda: osprov.get(KIND, name) is None, "the resource is gone (finalizer removed)", 120)
    assert cloud.lbs() == [] and cloud.owned_names() == set()
    assert all(admin.network.find_ip(i) is None for i in fip_ids)


def test_load_balancer_forced_to_error_is_errored_and_left_alone(
    osprov: Osprov, admin: Any, project: Any, vip: dict[str, str]
) -> None:
    _, cloud = create(osprov, admin, project, "broken", spec(project, vip, HTTP))
    lb = cloud.lb()
    octavia_force_provisioning_status(lb.id, "ERROR")
    changed = copy.deepcopy(HTTP)
    changed["pool"]["members"] = [{"address": "10.20.0.99", "port": 8080}]
    osprov.apply(KIND, "broken", spec(project, vip, changed, publicIP=True))
    cond = wait_for(lambda: errored(osprov, "broken"),
                    "Available=False/Errored", 60)  # fmt: skip
    assert cond is not None and cond["status"] == "False" and "provisioning status ERROR" in cond["message"]
    assert lb.id not in cond["message"] and "no safe next action" in cond["message"]
    # The next passes (retries) only read: wait for one more to have run, then check nothing changed.
    failed = osprov.worker.log_text().count("reconcile failed")
    wait_for(lambda: osprov.worker.log_text().count("reconcile failed") > failed, "a retried pass", 60)
    assert cloud.members("http") == {("10.20.0.11", 8080)} and cloud.fips(lb.vip_port_id) == []
    octavia_force_provisioning_status(lb.id, "ACTIVE")  # repaired by an operator: converges again
    osprov.wait_ready(KIND, "broken", ctype=AVAILABLE, generation=2, timeout_s=400)
    assert cloud.members("http") == {("10.20.0.99", 8080)}


def test_second_object_with_the_exact_name_is_a_consistency_error(
    osprov: Osprov, admin: Any, project: Any, vip: dict[str, str]
) -> None:
    _obj, cloud = create(osprov, admin, project, "twin", spec(project, vip))
    twin = admin.load_balancer.create_load_balancer(
        name=cloud.prefix,
        project_id=project.id,
        vip_subnet_id=vip["vipSubnetID"],
        vip_network_id=vip["vipNetworkID"],
    )
    osprov.apply(KIND, "twin", spec(project, vip, DNS))  # a change makes the next pass look again
    cond = wait_for(lambda: errored(osprov, "twin"),
                    "Errored for two exact matches", 60)  # fmt: skip
    assert cond is not None and f"2 Octavia objects are named exactly {cloud.prefix}" in cond["message"]
    assert cloud.owned_names() == set()  # nothing was built on either of them
    wait_for(
        lambda: admin.load_balancer.get_load_balancer(twin.id).provisioning_status == "ACTIVE",
        "twin ACTIVE",
        60,
    )
    admin.load_balancer.delete_load_balancer(twin.id, cascade=True)
    osprov.wait_ready(KIND, "twin", ctype=AVAILABLE, generation=2, timeout_s=400)


def test_worker_killed_after_each_create_call_duplicates_nothing(
    osprov: Osprov, admin: Any, project: Any, vip: dict[str, str]
) -> None:
    osprov.apply(KIND, "crash", spec(project, vip, HTTP))
    uid = (osprov.get(KIND, "crash") or {})["metadata"]["uid"]
    cloud = Cloud(admin, project, uid)
    steps = [("load balancer", cloud.lbs)] + [
        (f"{k} http", lambda k=k: cloud.named(k, "http")) for k in ("pool", "listener", "monitor")
    ]
    for what, exists in steps:
        wait_for(exists, f"the {what} created", 90, interval_s=0.05)
        osprov.worker.kill()  # kill -9 right after the create call landed
        osprov.worker.start()
    osprov.wait_ready(KIND, "crash", ctype=AVAILABLE, timeout_s=180)
    assert len(cloud.lbs()) == 1
    assert {k: len(cloud.named(k, "http")) for k in ("listener", "pool", "monitor")} == {
        "listener": 1, "pool": 1, "monitor": 1}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda x: x.update(protocol="UDP", idleTimeoutSeconds=None), octavia.LISTENER_KEY_IMMUTABLE_MESSAGE),
        (lambda x: x.update(port=8080), octavia.LISTENER_KEY_IMMUTABLE_MESSAGE),
        (lambda x: x["pool"].update(proxyProtocolV2=False), octavia.PROXY_IMMUTABLE_MESSAGE),
    ],
)
def test_admission_rejects_changes_octavia_cannot_make_in_place(
    osprov: Osprov, project: Any, vip: dict[str, str], change: Any, message: str
) -> None:
    name = f"adm-{uuid.uuid4().hex[:6]}"
    osprov.apply(KIND, name, spec(project, vip, HTTP, keystoneRef=NOT_OURS))
    changed = copy.deepcopy(HTTP)
    change(changed)
    changed = {k: v for k, v in changed.items() if v is not None}
    with pytest.raises(ApiException) as err:
        osprov.apply(KIND, name, spec(project, vip, changed, keystoneRef=NOT_OURS))
    assert err.value.status == 422 and message in str(err.value.body)
    osprov.delete(KIND, name)


@pytest.mark.parametrize(
    ("listener", "message"),
    [
        (DNS | {"idleTimeoutSeconds": 30}, octavia.UDP_IDLE_TIMEOUT_MESSAGE),
        (DNS | {"pool": {"proxyProtocolV2": True}}, octavia.UDP_PROXY_MESSAGE),
    ],
)
def test_admission_rejects_udp_listeners_with_tcp_only_options(
    osprov: Osprov, project: Any, vip: dict[str, str], listener: dict[str, Any], message: str
) -> None:
    with pytest.raises(ApiException) as err:
        osprov.apply(KIND, f"udp-{uuid.uuid4().hex[:6]}", spec(project, vip, listener, keystoneRef=NOT_OURS))
    assert err.value.status == 422 and message in str(err.value.body)


def osprov_plan(osprov: Osprov, path: Path) -> dict[str, Any]:
    run = subprocess.run(
        [sys.executable, "-m", "osprov", "plan", "-f", str(path), "-n", osprov.namespace, "-o", "json"],
        env=dict(os.environ) | osprov.stack.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    [line] = run.stdout.splitlines()
    return json.loads(line)  # type: ignore[no-any-return]


def member_batches(osprov: Osprov, workflow_id: str) -> list[dict[str, Any]]:
    """The requests of every member batch update the resource's workflow scheduled (its history)."""

    async def read() -> list[dict[str, Any]]:
        client = await Client.connect(
            osprov.stack.temporal_address,
            namespace=osprov.stack.temporal_namespace,
            data_converter=pydantic_data_converter,
        )
        sent = []
        async for e in client.get_workflow_handle(workflow_id).fetch_history_events():
            a = e.activity_task_scheduled_event_attributes
            if e.HasField("activity_task_scheduled_event_attributes") and (
                a.activity_type.name == octavia_io.REPLACE_MEMBERS.name
            ):
                [request] = await client.data_converter.decode(a.input.payloads, [octavia_io.ReplaceMembers])
                sent.append(request.model_dump(mode="json", exclude={"scope"}))
        return sent

    return asyncio.run(read())


def test_osprov_plan_prints_exactly_the_member_batch_the_workflow_then_makes(
    osprov: Osprov, admin: Any, project: Any, vip: dict[str, str], tmp_path: Path
) -> None:
    obj, cloud = create(osprov, admin, project, "planned", spec(project, vip, HTTP))
    changed = copy.deepcopy(HTTP)
    changed["pool"]["members"] = [
        {"address": "10.20.0.12", "port": 8080},
        {"address": "10.20.0.13", "port": 8080},
    ]
    body = {"apiVersion": kind_info(KIND).api_version, "kind": KIND, "metadata": {"name": "planned"}}
    path = tmp_path / "planned.yaml"
    path.write_text(yaml.safe_dump(body | {"spec": spec(project, vip, changed)}))
    workflow = f"{KIND}/{osprov.namespace}/planned/{obj['metadata']['uid']}"
    before = member_batches(osprov, workflow)

    plan = osprov_plan(osprov, path)
    [call] = plan["calls"]
    assert call["rule"] == "P7c" and call["activity"] == octavia_io.REPLACE_MEMBERS.name
    assert call["request"] == {"pool_id": cloud.one("pool", "http").id, "members": changed["pool"]["members"]}
    assert cloud.members("http") == {("10.20.0.11", 8080)} and member_batches(osprov, workflow) == before

    osprov.apply(KIND, "planned", spec(project, vip, changed))
    osprov.wait_ready(KIND, "planned", ctype=AVAILABLE, generation=2, timeout_s=300)
    assert member_batches(osprov, workflow) == [*before, call["request"]]  # exactly the planned call
    assert cloud.members("http") == {("10.20.0.12", 8080), ("10.20.0.13", 8080)}
    delete_and_check_gone(osprov, admin, cloud, "planned", [])


def _settled(admin: Any, lb_id: str) -> bool:
    return bool(admin.load_balancer.get_load_balancer(lb_id).provisioning_status == "ACTIVE")


@pytest.fixture
def activities_octavia(full_stack: StackEnv, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """osprov's Octavia activities, called in this process with the worker's environment (the stack)."""
    from osprov.activities import cloud as activities_cloud
    from osprov.activities import octavia

    for key, value in full_stack.env.items():
        monkeypatch.setenv(key, value)
    yield octavia
    activities_cloud.close_thread_connections()


def test_r0_with_the_last_reads_ids_reads_at_once_what_the_rounds_read(
    activities_octavia: Any,
    admin: Any,
    project: Any,
    vip: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """R0 given the IDs the last read found (octavia_io.KnownTopology) makes its calls in one round, and its
    answer is the rounds' answer; a guess the fresh lookup contradicts (another load balancer, a pool that is
    gone or was never guessed) is read again, never believed."""
    from osprov.activities import cloud as activities_cloud

    lb_api, name = admin.load_balancer, f"lb-r0-{uuid.uuid4().hex[:8]}"
    lb = lb_api.create_load_balancer(
        name=name, project_id=project.id, vip_network_id=vip["vipNetworkID"], vip_subnet_id=vip["vipSubnetID"]
    )
    wait_for(lambda: _settled(admin, lb.id), "the load balancer ACTIVE", timeout_s=120)
    pools = {}
    for pool_name, addresses in (("a", ["10.20.0.31", "10.20.0.32"]), ("b", ["10.20.0.33"])):
        pool = lb_api.create_pool(
            name=f"{name}-{pool_name}-pool", loadbalancer_id=lb.id, protocol="TCP", lb_algorithm="ROUND_ROBIN"
        )
        wait_for(lambda: _settled(admin, lb.id), "the pool ACTIVE", timeout_s=120)
        for address in addresses:
            lb_api.create_member(pool.id, address=address, protocol_port=80)
            wait_for(lambda: _settled(admin, lb.id), "the member ACTIVE", timeout_s=120)
        pools[pool.name] = pool.id
    vip_port = lb_api.get_load_balancer(lb.id).vip_port_id
    scope = octavia_io.Scope(project=project.name, domain="Default")
    req = octavia_io.ReadTopology(scope=scope, name=name, prefix=f"{name}-", pools=tuple(sorted(pools)))
    calls: list[str] = []  # "guessed": a guessed pool's members; "members": any members read

    def spy(name: str, label: str) -> None:
        real = getattr(activities_octavia, name)

        def counted(ref: octavia_io.PoolRef) -> Any:
            calls.append(label)
            return real(ref)

        monkeypatch.setattr(activities_octavia, name, counted)

    spy("_members_if_pool", "guessed")
    spy("list_members", "members")

    async def read_topology(r: octavia_io.ReadTopology) -> octavia_io.Topology:
        return await activities_octavia.read_topology(r)

    def read(**known: Any) -> tuple[octavia_io.Topology, dict[str, int]]:
        guess = octavia_io.KnownTopology(**{"load_balancer_id": lb.id, "vip_port_id": vip_port} | known)
        calls.clear()
        try:
            got = asyncio.run(read_topology(req.model_copy(update={"known": guess})))
        finally:
            activities_cloud.close_thread_connections()
        return got, {label: calls.count(label) for label in ("guessed", "members")}

    expected = asyncio.run(read_topology(req))
    assert [v.id for v in expected.found] == [lb.id]
    assert {p.name for p in expected.pools or []} == set(pools)
    assert {i: sorted(m.address for m in ms) for i, ms in (expected.members or {}).items()} == {
        pools[f"{name}-a-pool"]: ["10.20.0.31", "10.20.0.32"],
        pools[f"{name}-b-pool"]: ["10.20.0.33"],
    }
    # Every pool guessed right: its members were read beside the lookup, none after it.
    assert read(pools=pools) == (expected, {"guessed": 2, "members": 2})
    # A pool the guess missed: read after the lookup.
    missed = {f"{name}-a-pool": pools[f"{name}-a-pool"]}
    assert read(pools=missed) == (expected, {"guessed": 1, "members": 2})
    # A guessed pool that does not exist (Octavia: 404): ignored, the real one read after.
    gone = missed | {f"{name}-b-pool": str(uuid.uuid4())}
    assert read(pools=gone) == (expected, {"guessed": 2, "members": 3})
    # Another load balancer guessed: the whole guess is dropped and the read made in rounds.
    assert read(pools=pools, load_balancer_id=str(uuid.uuid4())) == (expected, {"guessed": 2, "members": 4})

    # R0m: a wait that confirms a members-only last step reads, once ACTIVE, only those pools' members;
    # its `found` is the wait's own read by ID. A pool that is gone gets the whole R0 instead.
    def await_members(*pool_ids: str) -> octavia_io.Topology | None:
        wait = octavia_io.AwaitLoadBalancer(scope=scope, id=lb.id, within_seconds=30)
        awaited = octavia_io.AwaitTopology(wait=wait, read=req, members_of=list(pool_ids))
        try:
            return asyncio.run(activities_octavia.await_topology(awaited)).topology
        finally:
            activities_cloud.close_thread_connections()

    pool_a = pools[f"{name}-a-pool"]
    confirmed = await_members(pool_a)
    assert confirmed == octavia_io.Topology(
        found=expected.found, members={pool_a: (expected.members or {})[pool_a]}
    )
    assert await_members(pool_a, str(uuid.uuid4())) == expected

    # R0s: a batch decided on the last pass's read is refused, changing nothing, when that read is out of
    # date: a pool that is gone (404: NotFound) or a load balancer busy with a change (409: Conflict).
    # The workflow then reads R0 (tests/workflows/test_loadbalancer.py, test_R0s_*).
    def batch(pool_id: str, address: str) -> str | None:
        members = [octavia_io.Member(address=address, port=80)]
        try:
            activities_octavia.replace_members(
                octavia_io.ReplaceMembers(scope=scope, pool_id=pool_id, members=members)
            )
        except ApplicationError as err:
            return err.type
        finally:
            activities_cloud.close_thread_connections()
        return None

    assert batch(str(uuid.uuid4()), "10.20.0.34") == NOT_FOUND
    assert batch(pool_a, "10.20.0.34") is None
    assert batch(pool_a, "10.20.0.35") == CONFLICT  # the first batch leaves it PENDING_UPDATE
    wait_for(lambda: _settled(admin, lb.id), "the batch ACTIVE", timeout_s=120)
    assert [m.address for m in lb_api.members(pool_a)] == ["10.20.0.34"]
    # The module's project fixture deletes the load balancer.


def test_listener_lookups_stay_on_their_load_balancer(
    activities_octavia: Any, admin: Any, project: Any, vip: dict[str, str]
) -> None:
    """A listener of another load balancer in the project, even named as this one's would be, is neither
    listed as this load balancer's nor adopted by its create-if-absent (openstacksdk once dropped the
    listing's load balancer filter, so both looked at every listener of the project)."""
    lb_api, name = admin.load_balancer, f"lb-own-{uuid.uuid4().hex[:8]}"
    ours, other = (
        lb_api.create_load_balancer(
            name=f"{name}{n}",
            project_id=project.id,
            vip_network_id=vip["vipNetworkID"],
            vip_subnet_id=vip["vipSubnetID"],
        )
        for n in ("", "-other")
    )
    wait_for(lambda: _settled(admin, ours.id) and _settled(admin, other.id), "both ACTIVE", timeout_s=120)
    listener_name = f"{name}-http-listener"  # the name ours would give its listener
    decoy = lb_api.create_listener(
        name=listener_name, loadbalancer_id=other.id, protocol="TCP", protocol_port=80
    )
    wait_for(lambda: _settled(admin, other.id), "the other's listener ACTIVE", timeout_s=120)
    pool = lb_api.create_pool(
        name=f"{name}-http-pool", loadbalancer_id=ours.id, protocol="TCP", lb_algorithm="ROUND_ROBIN"
    )
    wait_for(lambda: _settled(admin, ours.id), "our pool ACTIVE", timeout_s=120)
    scope = octavia_io.Scope(project=project.name, domain="Default")
    listed = activities_octavia.list_listeners(
        octavia_io.ListChildren(scope=scope, load_balancer_id=ours.id, prefix=f"{name}-")
    )
    created = activities_octavia.create_listener(
        octavia_io.CreateListener(
            scope=scope,
            load_balancer_id=ours.id,
            name=listener_name,
            protocol="TCP",
            port=80,
            default_pool_id=pool.id,
        )
    )
    assert listed == []
    assert created.id != decoy.id
    assert [lb["id"] for lb in lb_api.get_listener(created.id).load_balancers] == [ours.id]
    assert [lb["id"] for lb in lb_api.get_listener(decoy.id).load_balancers] == [other.id]
    wait_for(lambda: _settled(admin, ours.id), "our listener ACTIVE", timeout_s=120)  # deletable again
    # The module's project fixture deletes both load balancers.
