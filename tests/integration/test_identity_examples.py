"""The six charts' identity examples (examples/identity/*.yaml) turn Ready on the real Keystone.

The examples name the real catalog (cinderv3/volumev3 in RegionOne, the service domain, the admin
role); applied verbatim they would rewrite the catalog the local stack's own services use. So every
Keystone name, type and region in them gets this run's suffix, and every Secret a fresh test
password; the resources' shapes and the relations between them are the examples' own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from openstack.identity.v3._proxy import Proxy as Identity

from devenv.testing import StackEnv
from tests.integration.test_identity_support import (
    Passwords,
    assert_no_leaks,
    identity_client,
    now,
    ready_status,
)
from tests.support.osprov import REPO, Osprov, run_osprov

pytestmark = pytest.mark.stack

STARTED = now()
PASSWORDS = Passwords()
CHARTS = ["cinder", "glance", "placement", "nova", "neutron", "heat"]
RENAMED_KEYS = {"name", "domain", "type", "region"}
UNTOUCHED_KEYS = {"keystoneRef", "passwordSecret"}  # the deployment and the Secret keep their names


def localized(value: Any, suffix: str, key: str = "") -> Any:
    """The spec with every Keystone name/type/region suffixed (nested refs included)."""
    if isinstance(value, dict):
        return {k: v if k in UNTOUCHED_KEYS else localized(v, suffix, k) for k, v in value.items()}
    if isinstance(value, str) and key in RENAMED_KEYS:
        return f"{value}-{suffix}"
    return value


def load(chart: str) -> list[dict[str, Any]]:
    return [
        d for d in yaml.safe_load_all((REPO / "examples" / "identity" / f"{chart}.yaml").read_text()) if d
    ]


@pytest.fixture(scope="module")
def osprov(identity_stack: StackEnv, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Osprov]:
    tmp: Path = tmp_path_factory.mktemp("identity-examples")
    yield from run_osprov(identity_stack, tmp, resync_seconds=30)


@pytest.fixture(scope="module")
def ks(identity_stack: StackEnv) -> Iterator[Identity]:
    yield from identity_client(identity_stack)


@pytest.fixture(scope="module")
def applied(osprov: Osprov, ks: Identity) -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """Every chart's example applied (localized); yields the suffix and (kind, name) of each resource."""
    suffix = osprov.namespace.removeprefix("t-")
    resources: list[tuple[str, str]] = []
    for chart in CHARTS:
        for doc in load(chart):
            name = doc["metadata"]["name"]
            if doc["kind"] == "Secret":
                osprov.create_secret(name, {k: PASSWORDS.new() for k in doc["stringData"]})
                continue
            osprov.apply(doc["kind"], name, localized(doc["spec"], suffix))
            resources.append((doc["kind"], name))
    yield suffix, resources
    _remove_keystone_objects(ks, suffix)


def _remove_keystone_objects(ks: Identity, suffix: str) -> None:
    """Keystone outlives runs: delete what this module's suffix names (endpoints before services)."""
    for service in [s for s in ks.services() if str(s.name).endswith(suffix)]:
        for endpoint in ks.endpoints(service_id=service.id):
            ks.delete_endpoint(endpoint.id, ignore_missing=True)
        ks.delete_service(service.id, ignore_missing=True)
    for region in [r for r in ks.regions() if str(r.id).endswith(suffix)]:
        ks.delete_region(region.id, ignore_missing=True)
    for role in [r for r in ks.roles() if str(r.name).endswith(suffix)]:
        ks.delete_role(role.id, ignore_missing=True)
    for domain in [d for d in ks.domains() if str(d.name).endswith(suffix)]:
        ks.update_domain(domain.id, enabled=False)
        ks.delete_domain(domain.id, ignore_missing=True)


def test_every_chart_example_turns_ready(osprov: Osprov, applied: tuple[str, list[tuple[str, str]]]) -> None:
    _, resources = applied
    assert len(resources) == 71  # 12 per chart (Heat: 18, with heat_trustee) minus the 7 Secrets
    for kind, name in resources:
        osprov.wait_ready(kind, name, timeout_s=240)


def test_cinder_example_is_in_keystone(
    osprov: Osprov, ks: Identity, applied: tuple[str, list[tuple[str, str]]]
) -> None:
    suffix, _ = applied
    services = [s for s in ks.services(type=f"volumev3-{suffix}")]
    assert [s.name for s in services] == [f"cinderv3-{suffix}"]
    endpoints = [e for e in ks.endpoints(service_id=services[0].id) if e.region_id == f"RegionOne-{suffix}"]
    assert sorted(e.interface for e in endpoints) == ["admin", "internal", "public"]
    domain = ks.find_domain(f"service-{suffix}")
    assert domain is not None
    user = ks.find_user(f"cinder-{suffix}", domain_id=domain.id)
    project = ks.find_project(f"service-{suffix}", domain_id=domain.id)
    assert user is not None and project is not None and user.default_project_id == project.id
    granted = {a.role["id"] for a in ks.role_assignments(user_id=user.id, scope_project_id=project.id)}
    wanted = {ks.find_role(f"{r}-{suffix}").id for r in ("admin", "service", "member")}  # type: ignore[union-attr]
    assert granted == wanted


def test_heat_trustee_has_its_kubernetes_safe_name(
    osprov: Osprov, ks: Identity, applied: tuple[str, list[tuple[str, str]]]
) -> None:
    suffix, resources = applied
    assert ("User", "heat-heat-trustee") in resources
    uid = ready_status(osprov, "User", "heat-heat-trustee")["userID"]
    assert ks.get_user(uid).name == f"heat_trustee-{suffix}"


def test_zz_no_test_password_in_histories_logs_or_status(osprov: Osprov) -> None:
    """Runs last in this module: everything the module made is scanned."""
    assert assert_no_leaks(osprov, PASSWORDS, STARTED) > 100
