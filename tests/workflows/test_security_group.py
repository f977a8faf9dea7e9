"""The SecurityGroup workflow (workflows/security_group.py) on the time-skipping server with a stubbed Neutron.

Tests are named by the step labels of the tables: G (group), R (rules), D (delete).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from osprov.api import security_group_io as io
from osprov.workflows.security_group import WAIT_MAX_SECONDS, wait_delay
from osprov.workflows.security_group_decisions import IN_USE_MESSAGE
from tests.workflows.fakes_security_group import (
    DEFAULT_EGRESS,
    FINALIZER,
    SSH,
    SecurityGroupHarness,
    security_group_harness,
)

UID = "5e1f0c3a-0000-4000-8000-0000000000sg"
NAME = io.security_group_name(UID)
HTTPS = {"direction": "ingress", "protocol": "tcp", "portRangeMin": 443, "portRangeMax": 443}


def key(rule: dict[str, Any], remote: str | None = None) -> io.RuleKey:
    return io.rule_key(
        direction=rule["direction"],
        ethertype=rule.get("ethertype", "IPv4"),
        protocol=rule.get("protocol"),
        port_range_min=rule.get("portRangeMin"),
        port_range_max=rule.get("portRangeMax"),
        remote_ip_prefix=rule.get("remoteIPPrefix"),
        remote_group_id=remote,
    )


def spec(*rules: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "project": {"name": "p", "domain": "Default"},
        "deletionPolicy": "delete",
        "rules": list(rules),
    } | extra


@pytest_asyncio.fixture
async def h(tenv: WorkflowEnvironment) -> AsyncIterator[SecurityGroupHarness]:
    async for hs in security_group_harness(tenv):
        yield hs


async def converged(
    h: SecurityGroupHarness, *rules: dict[str, Any], **extra: Any
) -> WorkflowHandle[Any, Any]:
    h.neutron.add_project()
    wf = await h.apply("SecurityGroup", spec(*rules, **extra), uid=UID, name="web")
    await h.until(lambda: h.condition().get("reason") == "Provisioned", "group converged")
    return wf


def keys(h: SecurityGroupHarness) -> set[io.RuleKey]:
    [group] = h.neutron.named(NAME)
    return set(group.rules.values())


def test_wait_delay_starts_short_and_is_capped() -> None:
    delays = [wait_delay(n) for n in range(10)]
    assert delays[:3] == [2.0, 4.0, 8.0] and delays[-1] == WAIT_MAX_SECONDS


async def test_G3_R1_R2_R3_a_new_group_holds_exactly_the_spec_rules(h: SecurityGroupHarness) -> None:
    await converged(h, SSH, description="web tier")
    [group] = h.neutron.named(NAME)
    assert keys(h) == {key(SSH)}  # Neutron's default egress rules were removed: the spec is the whole set
    assert group.description == "web tier"
    assert h.status()["securityGroupID"] == group.id and h.status()["ruleCount"] == 1
    assert h.condition()["message"] == "Neutron security group holds exactly the 1 declared rule"
    assert h.neutron.count(io.CREATE_GROUP.name) == 1 and h.neutron.count(io.CREATE_RULE.name) == 1
    assert h.neutron.count(io.DELETE_RULE.name) == len(DEFAULT_EGRESS)
    assert {"Created", "RuleAdded", "RuleRemoved"} <= set(h.cloud.reasons())


async def test_G4_an_existing_exact_name_group_is_adopted_not_duplicated(h: SecurityGroupHarness) -> None:
    existing = h.neutron.add(NAME, h.neutron.add_project(), key(SSH))
    await converged(h, SSH)
    assert h.neutron.count(io.CREATE_GROUP.name) == 0 and h.neutron.count(io.CREATE_RULE.name) == 0
    assert [g.id for g in h.neutron.named(NAME)] == [existing.id]


async def test_R1_R2_rules_change_in_place_the_group_is_never_recreated(h: SecurityGroupHarness) -> None:
    wf = await converged(h, SSH)
    [group] = h.neutron.named(NAME)
    await h.signal(wf, 2, spec(HTTPS, description="now https"), finalizers=[FINALIZER])
    await h.until(lambda: h.status().get("observedGeneration") == 2, "generation 2 converged")
    assert keys(h) == {key(HTTPS)} and group.description == "now https"
    assert [g.id for g in h.neutron.named(NAME)] == [group.id] and h.status()["securityGroupID"] == group.id
    assert h.neutron.count(io.CREATE_GROUP.name) == 1
    # The new rule was added before the old one went: no pass left the group with neither.
    calls = [c for c in h.neutron.calls if c in (io.CREATE_RULE.name, io.DELETE_RULE.name)]
    assert calls[-2:] == [io.CREATE_RULE.name, io.DELETE_RULE.name]


async def test_R1_R2_drift_made_by_hand_is_repaired_on_the_resync(h: SecurityGroupHarness) -> None:
    await converged(h, SSH, HTTPS)
    [group] = h.neutron.named(NAME)
    ssh_id = next(i for i, k in group.rules.items() if k == key(SSH))
    del group.rules[ssh_id]  # deleted out of band
    group.rules["r-hand"] = key({"direction": "ingress", "protocol": "udp"})  # added out of band
    finds = h.neutron.count(io.FIND_GROUP.name)
    await h.env.sleep(601)
    await h.until(lambda: h.neutron.count(io.FIND_GROUP.name) > finds, "resync read")
    await h.until(lambda: keys(h) == {key(SSH), key(HTTPS)}, "drift repaired")
    assert "r-hand" not in group.rules and h.neutron.count(io.CREATE_GROUP.name) == 1


async def test_R1_a_rule_accepted_but_unanswered_is_adopted_not_duplicated(h: SecurityGroupHarness) -> None:
    h.neutron.lost_rule_answers = 1
    await converged(h, SSH)
    [group] = h.neutron.named(NAME)
    assert list(group.rules.values()) == [key(SSH)]


async def test_R1_remote_group_self_names_the_group_itself(h: SecurityGroupHarness) -> None:
    peers = {"direction": "ingress", "remoteGroup": "self"}
    await converged(h, peers)
    [group] = h.neutron.named(NAME)
    assert keys(h) == {key(peers, remote=group.id)}


async def test_R0_a_rule_naming_another_group_waits_for_it_then_converges(h: SecurityGroupHarness) -> None:
    scope = h.neutron.add_project()
    peers = {"direction": "ingress", "protocol": "tcp", "portRangeMin": 5432, "portRangeMax": 5432}
    wf = await h.apply("SecurityGroup", spec(peers | {"remoteGroup": "app"}), uid=UID, name="db")
    await h.until(lambda: "SecurityGroup app" in h.condition().get("message", ""), "waits for app")
    assert h.condition()["reason"] == "Provisioning"
    app = h.neutron.add(io.security_group_name("app"), scope)
    await h.until(lambda: h.condition().get("reason") == "Provisioned", "converged once app exists", 900)
    assert keys(h) == {key(peers, remote=app.id)}
    assert wf.id.startswith("SecurityGroup/")


async def test_G2_two_exact_matches_fail_closed(h: SecurityGroupHarness) -> None:
    scope = h.neutron.add_project()
    h.neutron.add(NAME, scope)
    h.neutron.add(NAME, scope)
    await h.apply("SecurityGroup", spec(SSH), uid=UID, name="web")
    await h.until(lambda: h.condition().get("reason") == "Errored", "duplicates refused")
    assert "2 Neutron security groups are named" in h.condition()["message"]
    assert h.neutron.count(io.CREATE_RULE.name) == 0 and h.neutron.count(io.CREATE_GROUP.name) == 0


async def test_G1_a_missing_project_is_reported_and_nothing_is_created(h: SecurityGroupHarness) -> None:
    await h.apply("SecurityGroup", spec(SSH), uid=UID, name="web")
    await h.until(lambda: "does not exist in Keystone yet" in h.condition().get("message", ""), "reported")
    assert h.neutron.count(io.CREATE_GROUP.name) == 0


async def test_D5_D4_D2_delete_waits_while_ports_use_the_group_then_removes_it(
    h: SecurityGroupHarness,
) -> None:
    wf = await converged(h, SSH)
    [group] = h.neutron.named(NAME)
    group.ports = 2
    await h.signal(wf, 1, spec(SSH), deleting=True, finalizers=[FINALIZER])
    await h.until(lambda: h.condition().get("message") == IN_USE_MESSAGE, "delete waits for the ports")
    assert h.condition()["reason"] == "Deprovisioning" and h.neutron.named(NAME) == [group]
    group.ports = 0
    await wf.result()
    assert h.neutron.named(NAME) == []


async def test_O1_OG1_unmanaged_observes_the_imported_group_and_writes_nothing(
    h: SecurityGroupHarness,
) -> None:
    legacy = h.neutron.add("legacy", h.neutron.add_project(), *DEFAULT_EGRESS)
    body = spec(
        deletionPolicy="retain", managementPolicy="unmanaged", **{"import": {"filter": {"name": "legacy"}}}
    )
    wf = await h.apply("SecurityGroup", body, uid=UID, name="web")
    await h.until(lambda: h.condition().get("reason") == "Provisioned", "observed")
    assert h.status()["securityGroupID"] == legacy.id and h.status()["ruleCount"] == 2
    assert set(h.neutron.calls) == {io.FIND_GROUP.name}  # read only: the default rules stay
    assert set(legacy.rules.values()) == set(DEFAULT_EGRESS)
    await h.signal(wf, 1, body, deleting=True)
    await wf.result()
    assert h.neutron.groups[legacy.id] is legacy  # deleting the resource leaves the group


async def test_O3_an_import_that_matches_nothing_is_errored(h: SecurityGroupHarness) -> None:
    h.neutron.add_project()
    body = spec(deletionPolicy="retain", managementPolicy="unmanaged", **{"import": {"id": "sg-missing"}})
    await h.apply("SecurityGroup", body, uid=UID, name="web")
    await h.until(lambda: h.condition().get("reason") == "Errored", "nothing to observe")
    assert "nothing to observe" in h.condition()["message"]


async def test_plan_lists_every_rule_change_and_writes_nothing(h: SecurityGroupHarness) -> None:
    from osprov.api.plan import UPDATE_PLAN, Plan

    wf = await converged(h, SSH)
    calls = list(h.neutron.calls)
    plan = await wf.execute_update(UPDATE_PLAN, spec(HTTPS, description="https"), result_type=Plan)
    assert [(c.rule, c.activity) for c in plan.calls] == [
        ("G5", io.UPDATE_GROUP.name),
        ("R1", io.CREATE_RULE.name),
        ("R2", io.DELETE_RULE.name),
    ]
    assert plan.then.startswith("then R3:")
    assert [c for c in h.neutron.calls[len(calls) :] if c != io.FIND_GROUP.name] == []  # reads only
    assert keys(h) == {key(SSH)}
    same = await wf.execute_update(UPDATE_PLAN, None, result_type=Plan)
    assert same.calls == [] and same.then.startswith("R3:")
