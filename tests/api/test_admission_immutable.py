"""Fields that cannot change in place are refused on update, naming the field; nothing is accepted and ignored.

Issue 12: the identifying fields of every Keystone kind (name, domain, service type, an endpoint's service and
region, a grant's role, subject and scope) never re-target a resource. Issue 13: a Server's keypair and
userData (create-time parameters Nova keeps on rebuild) and a LoadBalancer's VIP network, subnet and address.
Each row runs through the CRD's CEL transition rules offline and through the kube emulator with the official
client (create, then an update of the whole spec). Transition rules need the old object, so they are the
CRD's alone: the models accept both specs. On the old CRDs every row here was accepted.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client

from tests.api.admission import (
    VALID,
    create,
    emulator_with,
    model_errors,
    rejection,
    replace_spec,
    with_value,
    without,
)
from tests.api.schema_check import violations
from tests.api.test_crds import spec_schema

NS = "immutable"
KEYSTONE = "is immutable: create a new resource to manage another Keystone object"
SHRINK = "spec.size cannot shrink: Cinder only extends a volume"


@dataclass(frozen=True)
class Change:
    id: str
    kind: str
    new: dict[str, Any]
    field: str  # the field the apiserver names
    message: str  # in its message
    old: dict[str, Any] | None = None  # default: VALID[kind]

    def old_spec(self) -> dict[str, Any]:
        return VALID[self.kind] if self.old is None else self.old


GROUP_SUBJECT = {"name": "admins", "domain": "service"}
REFUSED = [
    Change("domain-name", "Domain", with_value("Domain", ["name"], "other"), "spec.name", KEYSTONE),
    Change("project-name", "Project", with_value("Project", ["name"], "other"), "spec.name", KEYSTONE),
    Change("project-domain", "Project", with_value("Project", ["domain"], "other"), "spec.domain", KEYSTONE),
    Change("role-name", "Role", with_value("Role", ["name"], "reader"), "spec.name", KEYSTONE),
    Change("role-domain", "Role", with_value("Role", ["domain"], "other"), "spec.domain", KEYSTONE),
    Change("role-domain-removed", "Role", without("Role", "domain"), "spec.domain", KEYSTONE),
    Change(
        "role-domain-added", "Role", VALID["Role"], "spec.domain", KEYSTONE, old=without("Role", "domain")
    ),
    Change("group-name", "Group", with_value("Group", ["name"], "other"), "spec.name", KEYSTONE),
    Change("group-domain", "Group", with_value("Group", ["domain"], "other"), "spec.domain", KEYSTONE),
    Change("user-name", "User", with_value("User", ["name"], "admin"), "spec.name", KEYSTONE),
    Change("user-domain", "User", with_value("User", ["domain"], "Default"), "spec.domain", KEYSTONE),
    Change("service-name", "Service", with_value("Service", ["name"], "keystone"), "spec.name", KEYSTONE),
    Change("service-type", "Service", with_value("Service", ["type"], "identity"), "spec.type", KEYSTONE),
    Change(
        "endpoint-service",
        "Endpoint",
        with_value("Endpoint", ["service", "type"], "identity"),
        "spec.service",
        KEYSTONE,
    ),
    Change("endpoint-region", "Endpoint", with_value("Endpoint", ["region"], "RegionTwo"), "spec.region", KEYSTONE),
    Change(
        "grant-role", "RoleAssignment", with_value("RoleAssignment", ["role", "name"], "member"), "spec.role", KEYSTONE
    ),
    Change(
        "grant-user",
        "RoleAssignment",
        with_value("RoleAssignment", ["user", "name"], "admin"),
        "spec.user",
        KEYSTONE,
    ),
    Change(
        "grant-subject-to-group",
        "RoleAssignment",
        {**without("RoleAssignment", "user"), "group": GROUP_SUBJECT},
        "spec.group",
        KEYSTONE,
    ),
    Change(
        "grant-scope-to-system",
        "RoleAssignment",
        {**without("RoleAssignment", "project"), "system": "all"},
        "spec.system",
        KEYSTONE,
    ),
    Change(
        "grant-project",
        "RoleAssignment",
        with_value("RoleAssignment", ["project", "domain"], "Default"),
        "spec.project",
        KEYSTONE,
    ),
    Change("server-keypair", "Server", with_value("Server", ["keypair"], "other"), "spec.keypair", "spec.keypair cannot change"),
    Change("server-keypair-removed", "Server", without("Server", "keypair"), "spec.keypair", "create a new Server"),
    Change(
        "server-keypair-added", "Server", VALID["Server"], "spec.keypair", "create a new Server", old=without("Server", "keypair")
    ),
    Change("server-user-data", "Server", with_value("Server", ["userData"], "#!/bin/sh\n"), "spec.userData", "spec.userData cannot change"),
    Change("server-user-data-removed", "Server", without("Server", "userData"), "spec.userData", "create a new Server"),
    # Issue 18: the SSH mode is a create-time decision (Nova keeps it on a rebuild), like keypair and userData.
    Change(
        "server-ssh-mode", "Server", {**without("Server", "keypair"), "ssh": {"mode": "none"}}, "spec.ssh",
        "spec.ssh cannot change", old={**without("Server", "keypair"), "ssh": {"mode": "ca"}},
    ),
    Change(
        "server-ssh-added", "Server", {**without("Server", "keypair"), "ssh": {"mode": "ca"}}, "spec.ssh",
        "create a new Server", old=without("Server", "keypair"),
    ),
    Change(
        "identity-ssh-key", "Identity", {"sshPublicKey": "ssh-ed25519 BBBB other"}, "spec.sshPublicKey",
        "spec.sshPublicKey cannot change", old={"sshPublicKey": "ssh-ed25519 AAAA me"},
    ),
    Change(
        "lb-vip-network",
        "LoadBalancer",
        with_value("LoadBalancer", ["vipNetworkID"], "net-2"),
        "spec.vipNetworkID",
        "spec.vipNetworkID cannot change",
    ),
    Change(
        "lb-vip-network-resource",
        "LoadBalancer",
        {**without("LoadBalancer", "vipNetworkID"), "vipNetwork": "net-b"},
        "spec.vipNetwork",
        "spec.vipNetwork cannot change",
        old={**without("LoadBalancer", "vipNetworkID"), "vipNetwork": "net-a"},
    ),
    Change(
        "lb-vip-subnet",
        "LoadBalancer",
        with_value("LoadBalancer", ["vipSubnetID"], "subnet-2"),
        "spec.vipSubnetID",
        "spec.vipSubnetID cannot change",
    ),
    Change("lb-vip-subnet-removed", "LoadBalancer", without("LoadBalancer", "vipSubnetID"), "spec.vipSubnetID", "create a new LoadBalancer"),
    Change(
        "lb-vip-address",
        "LoadBalancer",
        with_value("LoadBalancer", ["vipAddress"], "10.0.0.20"),
        "spec.vipAddress",
        "spec.vipAddress cannot change",
    ),
    Change(
        "lb-vip-address-added",
        "LoadBalancer",
        VALID["LoadBalancer"],
        "spec.vipAddress",
        "create a new LoadBalancer",
        old=without("LoadBalancer", "vipAddress"),
    ),
    # Issue 19: a Volume grows in place but never shrinks (Cinder has no shrink); refused before any workflow.
    Change(
        "volume-size-shrink", "Volume", VALID["Volume"], "spec.size", SHRINK, old=with_value("Volume", ["size"], 2)
    ),
]  # fmt: skip

# What may change still does, on the same objects: the rules guard fields, not whole specs.
ALLOWED = [
    Change("domain-description", "Domain", with_value("Domain", ["description"], "renamed"), "", ""),
    Change("project-disabled", "Project", with_value("Project", ["enabled"], False), "", ""),
    Change("role-deletion-policy", "Role", with_value("Role", ["deletionPolicy"], "delete"), "", ""),
    Change("group-description", "Group", with_value("Group", ["description"], "other"), "", ""),
    Change("user-email", "User", with_value("User", ["email"], "c@example.org"), "", ""),
    Change("service-description", "Service", with_value("Service", ["description"], "x"), "", ""),
    Change("endpoint-urls", "Endpoint", with_value("Endpoint", ["urls"], {"public": "https://x/v3"}), "", ""),
    Change("grant-retry", "RoleAssignment", with_value("RoleAssignment", ["retryInterval"], "1m"), "", ""),
    Change("server-image", "Server", with_value("Server", ["imageID"], "img-2"), "", ""),
    Change("identity-ssh-key-added", "Identity", {"sshPublicKey": "ssh-ed25519 AAAA me"}, "", "", old={}),
    Change("server-tags", "Server", with_value("Server", ["tags"], {"tier": "web"}), "", ""),
    Change("lb-public-ip", "LoadBalancer", with_value("LoadBalancer", ["publicIP"], True), "", ""),
    Change("volume-tags", "Volume", with_value("Volume", ["tags"], {}), "", ""),
    Change("volume-size-grow", "Volume", with_value("Volume", ["size"], 2), "", ""),
]


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[client.ApiClient]:
    with emulator_with(tmp_path_factory.mktemp("kube"), NS) as api:
        yield api


@pytest.mark.parametrize("change", REFUSED, ids=lambda c: c.id)
def test_the_crd_refuses_the_change_and_the_models_take_both(change: Change) -> None:
    found = violations(spec_schema(change.kind), change.new, change.old_spec())
    assert any(change.message in message for message in found), found
    assert model_errors(change.kind, change.old_spec()) == {} and model_errors(change.kind, change.new) == {}


@pytest.mark.parametrize("change", REFUSED, ids=lambda c: c.id)
def test_the_apiserver_refuses_the_change_naming_the_field(
    emulator: client.ApiClient, change: Change
) -> None:
    create(emulator, NS, change.kind, change.id, change.old_spec(), dry=False)
    with pytest.raises(client.ApiException) as caught:
        replace_spec(emulator, NS, change.kind, change.id, change.new)
    causes = rejection(caught.value)
    assert change.field in causes, causes
    assert change.message in causes[change.field]


@pytest.mark.parametrize("change", ALLOWED, ids=lambda c: c.id)
def test_mutable_fields_still_change(emulator: client.ApiClient, change: Change) -> None:
    assert violations(spec_schema(change.kind), change.new, change.old_spec()) == []
    create(emulator, NS, change.kind, change.id, change.old_spec(), dry=False)
    replace_spec(emulator, NS, change.kind, change.id, change.new)
