"""Models of the Keystone kinds: defaults, clear validation errors, camelCase round trips, durations."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from osprov.api.common import Condition, DeletionPolicy, find_condition, parse_duration, set_condition
from osprov.api.keystone import (
    DomainSpec,
    EndpointInterface,
    EndpointSpec,
    EndpointStatus,
    RoleAssignmentSpec,
    UserSpec,
    UserStatus,
)
from osprov.api.registry import IDENTITY_KINDS, kind_info


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30s", timedelta(seconds=30)),
        ("1m30s", timedelta(seconds=90)),
        ("1.5h", timedelta(minutes=90)),
        ("250ms", timedelta(milliseconds=250)),
        ("2h0m5s", timedelta(hours=2, seconds=5)),
    ],
)
def test_parse_duration(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "30", "-5s", "1d", "s", "1m 30s", "PT30S"])
def test_parse_duration_rejects_with_the_accepted_form(text: str) -> None:
    with pytest.raises(ValueError, match="use a number with a unit"):
        parse_duration(text)


def test_defaults() -> None:
    domain = DomainSpec.model_validate({"name": "service"})
    assert domain.deletion_policy is DeletionPolicy.RETAIN
    assert domain.enabled is True and domain.keystone_ref is None and domain.retry_interval_delta() is None
    user = UserSpec.model_validate(
        {"name": "cinder", "domain": "service", "passwordSecret": {"name": "cinder-keystone-user"}}
    )
    assert user.password_secret.key == "OS_PASSWORD"


def test_camel_case_round_trip_of_the_seed_user() -> None:
    wire = {
        "keystoneRef": {"name": "keystone"},
        "deletionPolicy": "retain",
        "retryInterval": "1m30s",
        "name": "cinder",
        "domain": "service",
        "description": "Service User for RegionOne/service/cinder",
        "enabled": True,
        "defaultProject": {"name": "service", "domain": "service"},
        "passwordSecret": {"name": "cinder-keystone-user", "key": "OS_PASSWORD"},
    }
    spec = UserSpec.model_validate(wire)
    assert spec.default_project is not None and spec.default_project.name == "service"
    assert spec.keystone_ref_name() == "keystone"
    assert spec.retry_interval_delta() == timedelta(seconds=90)
    assert spec.to_k8s() == wire | {
        "managementPolicy": "managed",
        "approvalPolicy": "automatic",
    }  # defaults written
    # snake_case works from Python too
    assert UserSpec(
        name="cinder",
        domain="service",
        password_secret={"name": "s"},  # type: ignore[arg-type]
    ).to_k8s()["passwordSecret"] == {"name": "s", "key": "OS_PASSWORD"}


def test_status_uses_the_keystone_id_field_names() -> None:
    now = datetime(2026, 8, 24, 19, 20, tzinfo=UTC)
    ready = Condition(
        type="Ready", status="True", reason="Reconciled", message="created", last_transition_time=now
    )
    status = UserStatus(observed_generation=3, user_id="9a0e", conditions=[ready])
    wire = status.to_k8s()
    assert wire["userID"] == "9a0e"
    assert wire["conditions"][0]["lastTransitionTime"] == "2026-08-24T19:20:00Z"
    assert UserStatus.model_validate(wire) == status
    endpoints = EndpointStatus(endpoint_ids={EndpointInterface.PUBLIC: "e1"})
    assert endpoints.to_k8s()["endpointIDs"] == {"public": "e1"}


def test_set_condition_keeps_transition_time_when_status_is_unchanged() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    t1 = t0 + timedelta(minutes=5)
    first = Condition(
        type="Ready", status="False", reason="ReconcileError", message="a", last_transition_time=t0
    )
    same = first.model_copy(update={"message": "b", "last_transition_time": t1})
    conditions = set_condition([first], same)
    current = find_condition(conditions, "Ready")
    assert current is not None and current.message == "b" and current.last_transition_time == t0
    flipped = same.model_copy(update={"status": "True", "reason": "Reconciled"})
    current = find_condition(set_condition(conditions, flipped), "Ready")
    assert current is not None and current.last_transition_time == t1


def _error(model: type[BaseModel], data: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(data)
    return str(caught.value)


def test_role_assignment_errors_say_what_to_fix() -> None:
    base = {"role": {"name": "admin"}, "project": {"name": "service", "domain": "service"}}
    assert "set exactly one subject: spec.user or spec.group" in _error(RoleAssignmentSpec, base)
    both = {**base, "user": {"name": "u", "domain": "d"}, "group": {"name": "g", "domain": "d"}}
    assert "set exactly one subject" in _error(RoleAssignmentSpec, both)
    no_scope = {"role": {"name": "admin"}, "user": {"name": "u", "domain": "d"}}
    assert "set exactly one scope: spec.project, spec.domain or spec.system" in _error(
        RoleAssignmentSpec, no_scope
    )
    assert "Input should be 'all'" in _error(RoleAssignmentSpec, {**no_scope, "system": "everything"})
    ok = RoleAssignmentSpec.model_validate({**no_scope, "system": "all"})
    assert ok.system == "all"


def test_endpoint_errors_say_what_to_fix() -> None:
    base = {"service": {"name": "cinderv3", "type": "volumev3"}, "region": "RegionOne"}
    assert "at least one of admin, internal or public" in _error(EndpointSpec, {**base, "urls": {}})
    bad_key = _error(EndpointSpec, {**base, "urls": {"publc": "http://x"}})
    assert "urls.publc" in bad_key and "'admin', 'internal' or 'public'" in bad_key
    assert "must be an http(s) URL" in _error(EndpointSpec, {**base, "urls": {"public": "cinder:8776"}})


def test_common_field_errors() -> None:
    assert "deletionPolicy" in _error(DomainSpec, {"name": "d", "deletionPolicy": "Delete"})
    assert "retryInterval" in _error(DomainSpec, {"name": "d", "retryInterval": "30"})
    assert "at least 1s" in _error(DomainSpec, {"name": "d", "retryInterval": "10ms"})
    assert "Extra inputs are not permitted" in _error(DomainSpec, {"name": "d", "enable": False})
    assert "name" in _error(DomainSpec, {"name": ""})


def test_registry_entries_of_the_identity_kinds() -> None:
    assert [k.kind for k in IDENTITY_KINDS] == [
        "Domain", "Project", "Role", "Group", "User", "RoleAssignment", "Service", "Endpoint"
    ]  # fmt: skip
    user = kind_info("User")
    assert user.api_version == "keystone.osh.openstack.org/v1alpha1"
    assert (user.id_field, user.id_attribute, user.ready_condition) == ("userID", "user_id", "Ready")
    assert kind_info("RoleAssignment").id_field is None
    with pytest.raises(KeyError, match="known: Domain"):
        kind_info("Nope")
