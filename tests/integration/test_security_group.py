"""SecurityGroup end to end on the real local stack: CR → bridge → Temporal → worker → real Neutron → status.

Outcomes are asserted in Neutron (admin openstacksdk client) and in the resources' status. The module uses its
own Keystone project, in which the controller's user is granted the member role, so every Neutron call runs
with a token scoped to that project (spec.project, allowed by the test's tenancy mapping).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import openstack.connection
import pytest

from devenv.config import PORTS
from devenv.faults.proxy import Fault, FaultProxy
from devenv.testing import StackEnv
from osprov.api.security_group_io import security_group_name
from osprov.workflows.security_group_decisions import IN_USE_MESSAGE
from tests.support.osprov import Osprov, clouds_env, endpoint_override, ensure_crd, run_osprov
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.stack, pytest.mark.fullstack]

AVAILABLE = "Available"
CONTROLLER_USER = "admin"  # the user of the worker's clouds.yaml (cloud osprov-admin)
SSH = {
    "direction": "ingress",
    "protocol": "tcp",
    "portRangeMin": 22,
    "portRangeMax": 22,
    "remoteIPPrefix": "10.0.0.0/8",
}
HTTPS = {"direction": "ingress", "protocol": "tcp", "portRangeMin": 443, "portRangeMax": 443}
PING6 = {"direction": "ingress", "ethertype": "IPv6", "protocol": "icmp"}
EGRESS4 = {"direction": "egress"}
# A rule as Neutron reports it: (direction, ethertype, protocol, port min, port max, remote prefix, group).
Row = tuple[str, str, str | None, int | None, int | None, str | None, str | None]


def row(rule: dict[str, Any], remote_group: str | None = None) -> Row:
    """A spec rule as Neutron stores it (IPv6 icmp is ipv6-icmp; any is no protocol)."""
    protocol = rule.get("protocol")
    if protocol == "icmp" and rule.get("ethertype") == "IPv6":
        protocol = "ipv6-icmp"
    return (
        rule["direction"],
        rule.get("ethertype", "IPv4"),
        protocol,
        rule.get("portRangeMin"),
        rule.get("portRangeMax"),
        rule.get("remoteIPPrefix"),
        remote_group,
    )


def neutron_rows(admin: openstack.connection.Connection, group_id: str) -> set[Row]:
    rules = admin.network.security_group_rules(security_group_id=group_id)
    return {
        (
            r.direction,
            r.ether_type,
            r.protocol,
            r.port_range_min,
            r.port_range_max,
            r.remote_ip_prefix,
            r.remote_group_id,
        )
        for r in rules
    }


def identity(conn: openstack.connection.Connection) -> Any:
    return conn.identity  # Identity v3 (the SDK types it as a v2/v3 union)


@pytest.fixture(scope="module")
def project(admin: openstack.connection.Connection) -> Iterator[Any]:
    proj = identity(admin).create_project(name=f"sg-{uuid.uuid4().hex[:8]}", domain_id="default")
    user = identity(admin).find_user(CONTROLLER_USER, domain_id="default", ignore_missing=False)
    role = identity(admin).find_role("member", ignore_missing=False)
    identity(admin).assign_project_role_to_user(proj.id, user, role)
    yield proj
    for port in admin.network.ports(project_id=proj.id):
        admin.network.delete_port(port.id, ignore_missing=True)
    for net in admin.network.networks(project_id=proj.id):
        admin.network.delete_network(net.id, ignore_missing=True)
    for group in admin.network.security_groups(project_id=proj.id):
        if group.name != "default":
            admin.network.delete_security_group(group.id, ignore_missing=True)


@pytest.fixture(scope="module")
def neutron_proxy() -> Iterator[FaultProxy]:
    """The worker reaches Neutron through this proxy (crash windows on demand); it passes by default."""
    with FaultProxy("127.0.0.1", PORTS.neutron) as proxy:
        yield proxy


@pytest.fixture(scope="module")
def osprov(
    full_stack: StackEnv, tmp_path_factory: pytest.TempPathFactory, neutron_proxy: FaultProxy
) -> Iterator[Osprov]:
    ensure_crd(full_stack, "SecurityGroup")
    tmp = tmp_path_factory.mktemp("secgroup")
    neutron = endpoint_override("network", neutron_proxy.url, "2")  # the SDK appends /v2.0
    # A short resync, so drift made by hand is repaired within seconds.
    yield from run_osprov(full_stack, tmp, resync_seconds=5, extra_env=clouds_env(full_stack, tmp, neutron))


def spec(project: Any, *rules: dict[str, Any], **extra: Any) -> dict[str, Any]:
    where = {"name": project.name, "domain": "Default"}
    return {"project": where, "deletionPolicy": "delete", "rules": list(rules), **extra}


def converged(osprov: Osprov, name: str, generation: int | None = None) -> dict[str, Any]:
    osprov.wait_ready("SecurityGroup", name, ctype=AVAILABLE, timeout_s=90, generation=generation)
    obj = osprov.get("SecurityGroup", name)
    assert obj is not None and "securityGroupID" in obj["status"]
    return obj


def test_group_holds_exactly_the_spec_changes_in_place_repairs_drift_and_is_deleted(
    osprov: Osprov, admin: openstack.connection.Connection, project: Any
) -> None:
    osprov.apply("SecurityGroup", "web", spec(project, SSH, PING6, EGRESS4, description="web tier"))
    obj = converged(osprov, "web")
    gid = obj["status"]["securityGroupID"]
    group = admin.network.get_security_group(gid)
    assert group.name == security_group_name(obj["metadata"]["uid"]) and group.project_id == project.id
    assert group.description == "web tier"
    # Exactly the declared rules: Neutron's default IPv6 egress rule is gone, its IPv4 one kept (declared).
    assert neutron_rows(admin, gid) == {row(SSH), row(PING6), row(EGRESS4)}
    assert obj["status"]["ruleCount"] == 3

    # A rule added and one removed in the spec: changed in place, the same group.
    osprov.apply("SecurityGroup", "web", spec(project, SSH, HTTPS, EGRESS4, description="web tier"))
    obj = converged(osprov, "web", generation=2)
    assert obj["status"]["securityGroupID"] == gid
    assert neutron_rows(admin, gid) == {row(SSH), row(HTTPS), row(EGRESS4)}
    assert [g.id for g in admin.network.security_groups(name=group.name)] == [gid]

    # Drift made by hand: a declared rule deleted and a foreign one added are repaired on the resync.
    ssh = next(r for r in admin.network.security_group_rules(security_group_id=gid) if r.port_range_min == 22)
    admin.network.delete_security_group_rule(ssh.id)
    admin.network.create_security_group_rule(
        security_group_id=gid, direction="ingress", ethertype="IPv4", protocol="udp", project_id=project.id
    )
    wait_for(
        lambda: neutron_rows(admin, gid) == {row(SSH), row(HTTPS), row(EGRESS4)},
        "the resync repaired the rules",
        60,
    )

    # Delete: while a port uses the group, Neutron refuses (409) and the resource says why; then it goes.
    net = admin.network.create_network(name=f"sg-net-{uuid.uuid4().hex[:6]}", project_id=project.id)
    port = admin.network.create_port(network_id=net.id, project_id=project.id, security_group_ids=[gid])
    osprov.delete("SecurityGroup", "web")
    wait_for(
        lambda: (osprov.condition("SecurityGroup", "web", AVAILABLE) or {}).get("message") == IN_USE_MESSAGE,
        "the deletion waits for the port",
        60,
    )
    assert admin.network.find_security_group(gid) is not None
    admin.network.delete_port(port.id)
    wait_for(lambda: osprov.get("SecurityGroup", "web") is None, "the SecurityGroup resource is gone", 90)
    assert admin.network.find_security_group(gid) is None


def test_a_rule_naming_another_security_group_uses_its_neutron_id(
    osprov: Osprov, admin: openstack.connection.Connection, project: Any
) -> None:
    db_port = {"direction": "ingress", "protocol": "tcp", "portRangeMin": 5432, "portRangeMax": 5432}
    osprov.apply(
        "SecurityGroup",
        "db",
        spec(project, db_port | {"remoteGroup": "app"}, {"direction": "ingress", "remoteGroup": "self"}),
    )
    wait_for(
        lambda: (
            "SecurityGroup app"
            in ((osprov.condition("SecurityGroup", "db", AVAILABLE) or {}).get("message") or "")
        ),
        "db waits for app's group",
        60,
    )
    osprov.apply("SecurityGroup", "app", spec(project))
    app = converged(osprov, "app")["status"]["securityGroupID"]
    db = converged(osprov, "db")["status"]["securityGroupID"]
    assert neutron_rows(admin, db) == {
        row(db_port, remote_group=app),
        row({"direction": "ingress"}, remote_group=db),
    }
    assert neutron_rows(admin, app) == set()  # an empty spec: no rules at all
    osprov.delete("SecurityGroup", "db")
    osprov.delete("SecurityGroup", "app")
    wait_for(
        lambda: osprov.get("SecurityGroup", "db") is None and osprov.get("SecurityGroup", "app") is None,
        "gone",
        90,
    )
    assert admin.network.find_security_group(db) is None and admin.network.find_security_group(app) is None


def named(admin: openstack.connection.Connection, name: str) -> list[Any]:
    return [g for g in admin.network.security_groups(name=name) if g.name == name]


def uid_of(osprov: Osprov, name: str) -> str:
    return str((osprov.get("SecurityGroup", name) or {})["metadata"]["uid"])


def test_worker_killed_after_a_group_create_was_accepted_adopts_it(
    osprov: Osprov, admin: openstack.connection.Connection, project: Any, neutron_proxy: FaultProxy
) -> None:
    names = [f"crash-{i}" for i in range(3)]
    # Neutron accepts every group create, but its answers never reach the worker: the window is held open.
    with neutron_proxy.holding(("POST",), containing=b'"security_group": {'):
        for name in names:
            osprov.apply("SecurityGroup", name, spec(project, SSH))
        uids = {name: uid_of(osprov, name) for name in names}
        first = wait_for(
            lambda: [n for n, u in uids.items() if named(admin, security_group_name(u))], "a first group", 60
        )
        osprov.worker.kill()
    # The window under test: Neutron made a group whose ID no status holds yet.
    assert all(
        "securityGroupID" not in ((osprov.get("SecurityGroup", n) or {}).get("status") or {}) for n in first
    )
    osprov.worker.start()
    for name in names:
        obj = converged(osprov, name)
        found = named(admin, security_group_name(uids[name]))
        assert [g.id for g in found] == [obj["status"]["securityGroupID"]], f"{name}: {len(found)} groups"
        assert neutron_rows(admin, found[0].id) == {row(SSH)}
        osprov.delete("SecurityGroup", name)
    wait_for(
        lambda: all(osprov.get("SecurityGroup", n) is None for n in names), "the crash groups are gone", 90
    )


def test_a_rule_create_whose_answer_was_lost_is_adopted_from_neutrons_409(
    osprov: Osprov, admin: openstack.connection.Connection, project: Any, neutron_proxy: FaultProxy
) -> None:
    with neutron_proxy.holding(("POST",), containing=b'"security_group_rule": {'):
        osprov.apply("SecurityGroup", "lost", spec(project, HTTPS))
        uid = uid_of(osprov, "lost")

        def made() -> bool:
            groups = named(admin, security_group_name(uid))
            return bool(groups) and row(HTTPS) in neutron_rows(admin, groups[0].id)

        wait_for(made, "Neutron made the rule", 60)
        # The answer is lost: the worker's connection is cut, Temporal retries the create, Neutron answers 409.
        neutron_proxy.set_fault(Fault.PASS, drop_existing=True)
    obj = converged(osprov, "lost")
    gid = obj["status"]["securityGroupID"]
    assert neutron_rows(admin, gid) == {row(HTTPS)}
    assert "neutron security group rule exists: adopted" in osprov.worker.log_text()  # the 409 path ran
    osprov.delete("SecurityGroup", "lost")
    wait_for(lambda: osprov.get("SecurityGroup", "lost") is None, "gone", 90)


def test_an_unmanaged_security_group_observes_an_existing_group_and_never_writes_it(
    osprov: Osprov, admin: openstack.connection.Connection, project: Any
) -> None:
    name = f"legacy-{uuid.uuid4().hex[:6]}"
    legacy = admin.network.create_security_group(name=name, project_id=project.id)
    admin.network.create_security_group_rule(
        security_group_id=legacy.id,
        direction="ingress",
        ethertype="IPv4",
        protocol="tcp",
        port_range_min=8080,
        port_range_max=8080,
        project_id=project.id,
    )
    before = neutron_rows(admin, legacy.id)
    where = {"name": project.name, "domain": "Default"}
    osprov.apply(
        "SecurityGroup",
        "legacy",
        {"project": where, "managementPolicy": "unmanaged", "import": {"filter": {"name": name}}},
    )
    obj = converged(osprov, "legacy")
    assert obj["status"]["securityGroupID"] == legacy.id and obj["status"]["ruleCount"] == len(before)
    assert neutron_rows(admin, legacy.id) == before  # Neutron's default rules and the hand-made one stay
    osprov.delete("SecurityGroup", "legacy")
    wait_for(lambda: osprov.get("SecurityGroup", "legacy") is None, "the resource is gone", 60)
    assert admin.network.get_security_group(legacy.id).name == name  # the observed group stays
    admin.network.delete_security_group(legacy.id)
