"""The SecurityGroup decision tables (workflows/security_group_decisions.py, docs/security-group.md), one row
per rule by step label, and the rule key both sides compare by.

Pure functions, no Temporal; test_security_group.py proves the workflow executes these decisions.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from osprov.api import security_group_io as io
from osprov.api.common import AvailableReason as R
from osprov.api.security_group import SecurityGroupSpec
from osprov.workflows.security_group_decisions import (
    DELETE_WAIT,
    IN_USE_MESSAGE,
    Converged,
    Done,
    Fail,
    Observation,
    Target,
    Wait,
    converge,
    delete,
    deleted,
    found,
    observe_import,
    rule_added,
    rule_removed,
)

NAME = io.security_group_name("u1")
SCOPE = io.Scope(project="p", domain="Default")
TARGET = Target(name=NAME, namespace="ns", scope=SCOPE)
SSH = {"direction": "ingress", "protocol": "tcp", "portRangeMin": 22, "portRangeMax": 22}
SSH_KEY = io.rule_key(
    direction="ingress",
    ethertype="IPv4",
    protocol="tcp",
    port_range_min=22,
    port_range_max=22,
    remote_ip_prefix=None,
    remote_group_id=None,
)
# Neutron's default egress rules of a new group (its default security-group rule templates).
EGRESS4 = io.Rule(id="r-e4", key=io.RuleKey(direction="egress", ethertype="IPv4"))
EGRESS6 = io.Rule(id="r-e6", key=io.RuleKey(direction="egress", ethertype="IPv6"))


def spec(*rules: dict[str, Any], **extra: Any) -> SecurityGroupSpec:
    body = {"project": {"name": "p", "domain": "Default"}, "rules": list(rules)} | extra
    return SecurityGroupSpec.model_validate(body)


def group(*rules: io.Rule, gid: str = "sg-1", description: str = "") -> io.Group:
    return io.Group(id=gid, name=NAME, description=description, rules=list(rules))


def read(*groups: io.Group, project: bool = True) -> Observation:
    return found(Observation(), io.GroupLookup(project_found=project, groups=list(groups)))


# --- the rule key: Neutron's duplicate test ---------------------------------------------------------------
def test_rule_key_treats_names_and_numbers_all_ports_and_any_address_as_neutron_does() -> None:
    def key(**kw: Any) -> io.RuleKey:
        base: dict[str, Any] = {
            "direction": "ingress",
            "ethertype": "IPv4",
            "protocol": None,
            "port_range_min": None,
            "port_range_max": None,
            "remote_ip_prefix": None,
            "remote_group_id": None,
        }
        return io.rule_key(**(base | kw))

    assert key(protocol="tcp") == key(protocol="6")
    assert key(protocol="any") == key(protocol=None)
    assert key(protocol="tcp", port_range_min=1, port_range_max=65535) == key(protocol="tcp")
    assert key(remote_ip_prefix="0.0.0.0/0") == key()
    assert key(ethertype="IPv6", protocol="icmp") == key(ethertype="IPv6", protocol="ipv6-icmp")
    assert key(ethertype="IPv6", protocol="1") == key(ethertype="IPv6", protocol="58")
    assert key(protocol="tcp") != key(protocol="udp")
    assert key(remote_ip_prefix="10.0.0.0/8") != key()


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"direction": "ingress", "portRangeMin": 1, "portRangeMax": 2}, "only with protocol tcp or udp"),
        ({"direction": "ingress", "protocol": "tcp", "portRangeMin": 22}, "set both portRangeMin"),
        ({"direction": "ingress", "protocol": "udp", "portRangeMin": 9, "portRangeMax": 8}, "not be greater"),
        ({"direction": "ingress", "remoteIPPrefix": "10.0.0.1/8"}, "not a network CIDR"),
        ({"direction": "ingress", "ethertype": "IPv6", "remoteIPPrefix": "10.0.0.0/8"}, "ethertype"),
        ({"direction": "ingress", "remoteIPPrefix": "10.0.0.0/8", "remoteGroup": "self"}, "at most one"),
        ({"direction": "sideways"}, "direction"),
        ({"direction": "ingress", "protocol": "256"}, "protocol"),
    ],
)
def test_a_rule_neutron_would_refuse_is_refused_with_what_to_fix(rule: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        spec(rule)


def test_the_same_rule_twice_is_refused() -> None:
    with pytest.raises(ValidationError, match="rules 0 and 1 are the same rule"):
        spec({"direction": "ingress", "protocol": "icmp"}, {"direction": "ingress", "protocol": "1"})


# --- converge ---------------------------------------------------------------------------------------------
def test_G1_reads_the_group_by_its_deterministic_name() -> None:
    d = converge(spec(), TARGET, Observation())
    assert d.rule == "G1" and d.action == io.FindGroup(scope=SCOPE, name=NAME)


def test_G1_project_missing_fails_provisioning() -> None:
    d = converge(spec(), TARGET, read(project=False))
    assert d.rule == "G1" and isinstance(d.action, Fail) and d.action.reason == R.PROVISIONING
    assert "does not exist in Keystone yet" in d.action.message


def test_G2_two_exact_matches_fail_closed() -> None:
    d = converge(spec(), TARGET, read(group(gid="sg-1"), group(gid="sg-2")))
    assert d.rule == "G2" and isinstance(d.action, Fail) and d.action.reason == R.ERRORED
    assert "2 Neutron security groups are named" in d.action.message
    assert [g.id for g in d.action.groups] == ["sg-1", "sg-2"]


def test_G3_no_match_creates_the_group_with_its_description() -> None:
    d = converge(spec(description="web"), TARGET, read())
    assert d.rule == "G3" and d.action == io.CreateGroup(scope=SCOPE, name=NAME, description="web")


def test_G4_one_match_is_adopted_and_G5_updates_its_description_once() -> None:
    obs = read(group(description="old"))
    d = converge(spec(description="new"), TARGET, obs)
    assert d.rule == "G5" and d.action == io.UpdateGroup(scope=SCOPE, id="sg-1", description="new")
    after = converge(
        spec(description="new"), TARGET, Observation(lookup=obs.lookup, group=obs.group, updated=True)
    )
    assert after.rule == "R3"


def test_R1_a_missing_spec_rule_is_created_before_any_rule_is_removed() -> None:
    d = converge(spec(SSH), TARGET, read(group(EGRESS4, EGRESS6)))
    assert d.rule == "R1" and d.action == io.CreateRule(scope=SCOPE, group_id="sg-1", key=SSH_KEY)


def test_R2_rules_not_in_the_spec_are_removed_neutron_defaults_included() -> None:
    obs = rule_added(read(group(EGRESS4, EGRESS6)), io.Rule(id="r-ssh", key=SSH_KEY))
    d = converge(spec(SSH), TARGET, obs)
    assert d.rule == "R2" and d.action == io.DeleteRule(scope=SCOPE, group_id="sg-1", rule_id="r-e4")
    obs = rule_removed(obs, "r-e4")
    d = converge(spec(SSH), TARGET, obs)
    assert d.rule == "R2" and isinstance(d.action, io.DeleteRule) and d.action.rule_id == "r-e6"
    d = converge(spec(SSH), TARGET, rule_removed(obs, "r-e6"))
    assert d.rule == "R3" and d.observed is not None and [r.id for r in d.observed.rules] == ["r-ssh"]


def test_R2_a_declared_default_egress_rule_is_kept() -> None:
    d = converge(spec({"direction": "egress"}), TARGET, read(group(EGRESS4, EGRESS6)))
    assert d.rule == "R2" and isinstance(d.action, io.DeleteRule) and d.action.rule_id == "r-e6"


def test_R2_a_second_rule_with_the_same_key_is_removed_lowest_id_kept() -> None:
    twin = io.Rule(id="r-b", key=SSH_KEY)
    d = converge(spec(SSH), TARGET, read(group(io.Rule(id="r-a", key=SSH_KEY), twin)))
    assert d.rule == "R2" and isinstance(d.action, io.DeleteRule) and d.action.rule_id == "r-b"


def test_R3_exactly_the_spec_is_converged_and_reported() -> None:
    d = converge(spec(SSH), TARGET, read(group(io.Rule(id="r-ssh", key=SSH_KEY))))
    assert d.rule == "R3" and isinstance(d.action, Converged)
    assert d.action.message == "Neutron security group holds exactly the 1 declared rule"
    empty = converge(spec(), TARGET, read(group()))
    assert empty.rule == "R3"  # an empty spec: a group without rules


def test_R1_remote_group_self_is_the_group_itself() -> None:
    d = converge(spec({"direction": "ingress", "remoteGroup": "self"}), TARGET, read(group()))
    assert d.rule == "R1" and isinstance(d.action, io.CreateRule) and d.action.key.remote_group_id == "sg-1"


def test_R0_other_groups_are_resolved_first_and_a_missing_one_fails_naming_it() -> None:
    s = spec({"direction": "ingress", "remoteGroup": "db"}, {"direction": "ingress", "remoteGroup": "app"})
    obs = read(group())
    d = converge(s, TARGET, obs)
    assert d.rule == "R0" and d.action == io.ResolveGroups(scope=SCOPE, namespace="ns", names=["app", "db"])
    missing = Observation(
        lookup=obs.lookup,
        group=obs.group,
        resolved=io.Resolved(ids={"db": "sg-db"}, missing={"app": "has no Neutron security group yet"}),
    )
    d = converge(s, TARGET, missing)
    assert d.rule == "R0" and isinstance(d.action, Fail) and d.action.reason == R.PROVISIONING
    assert "SecurityGroup app, which has no Neutron security group yet" in d.action.message
    ready = Observation(
        lookup=obs.lookup, group=obs.group, resolved=io.Resolved(ids={"db": "sg-db", "app": "sg-app"})
    )
    d = converge(s, TARGET, ready)
    assert d.rule == "R1" and isinstance(d.action, io.CreateRule) and d.action.key.remote_group_id == "sg-db"


# --- delete -----------------------------------------------------------------------------------------------
def test_D1_reads_first_and_a_missing_project_is_done() -> None:
    assert delete(TARGET, Observation()).rule == "D1"
    d = delete(TARGET, read(project=False))
    assert d.rule == "D1" and isinstance(d.action, Done)


def test_D2_no_match_is_done() -> None:
    d = delete(TARGET, read())
    assert d.rule == "D2" and isinstance(d.action, Done)


def test_D3_duplicates_fail_closed() -> None:
    d = delete(TARGET, read(group(gid="a"), group(gid="b")))
    assert d.rule == "D3" and isinstance(d.action, Fail) and d.action.reason == R.DEPROVISIONING


def test_D4_one_match_is_deleted_then_a_fresh_read_confirms_D2() -> None:
    d = delete(TARGET, read(group()))
    assert d.rule == "D4" and d.action == io.DeleteGroup(scope=SCOPE, id="sg-1")
    after = deleted(io.DeleteResult(outcome="deleted"))
    d = delete(TARGET, after)
    assert d.rule == "D2" and isinstance(d.action, io.FindGroup)
    d = delete(TARGET, found(after, io.GroupLookup(project_found=True)))
    assert d.rule == "D2" and isinstance(d.action, Done)
    still = delete(TARGET, found(after, io.GroupLookup(project_found=True, groups=[group()])))
    assert still.rule == "D4" and still.action == Wait(DELETE_WAIT)  # never a second delete in one pass


def test_D5_in_use_waits_with_what_to_do() -> None:
    d = delete(TARGET, deleted(io.DeleteResult(outcome="in_use")))
    assert d.rule == "D5" and d.action == Wait(IN_USE_MESSAGE)
    assert "remove it from them" in IN_USE_MESSAGE


# --- observe only -------------------------------------------------------------------------------------------
def observed(how: dict[str, Any]) -> SecurityGroupSpec:
    return spec(managementPolicy="unmanaged", **{"import": how})


def test_O1_reads_the_import_by_id_or_by_exact_name() -> None:
    by_id = observe_import(observed({"id": "sg-9"}), TARGET, Observation())
    assert by_id.rule == "O1" and by_id.action == io.FindGroup(scope=SCOPE, name="", id="sg-9")
    by_name = observe_import(observed({"filter": {"name": "legacy"}}), TARGET, Observation())
    assert by_name.action == io.FindGroup(scope=SCOPE, name="legacy")


def test_O2_O3_O4_OG1_observe_rows() -> None:
    s = observed({"filter": {"name": "legacy"}})
    o2 = observe_import(s, TARGET, read(project=False))
    assert o2.rule == "O2" and isinstance(o2.action, Fail) and o2.action.reason == R.PROVISIONING
    o3 = observe_import(s, TARGET, read())
    assert o3.rule == "O3" and isinstance(o3.action, Fail) and "nothing to observe" in o3.action.message
    o4 = observe_import(s, TARGET, read(group(gid="a"), group(gid="b")))
    assert o4.rule == "O4" and isinstance(o4.action, Fail) and o4.action.reason == R.ERRORED
    og1 = observe_import(s, TARGET, read(group(EGRESS4, EGRESS6, gid="sg-9")))
    assert og1.rule == "OG1" and isinstance(og1.action, Converged) and og1.observed is not None
    assert og1.action.message == "observing Neutron security group sg-9: 2 rules"


def test_an_observed_group_takes_no_rules() -> None:
    with pytest.raises(ValidationError, match="never writes its rules"):
        spec(SSH, managementPolicy="unmanaged", **{"import": {"id": "sg-9"}})
