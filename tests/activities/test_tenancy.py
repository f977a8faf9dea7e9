"""The operator's tenancy mapping (activities/tenancy.py): what a namespace may use, read from the file."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from osprov.activities import tenancy
from osprov.api.tenancy_io import IdentityRequest, PinningRequest, ProjectRequest

MAPPING = {
    "roles": ["member"],
    "namespaces": {
        "team-a": {"domain": "tenants", "projects": [{"name": "legacy", "domain": "Default"}]},
        "ops": {"any_project": True},
    },
}


@pytest.fixture
def mapped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "tenancy.yaml"
    path.write_text(yaml.safe_dump(MAPPING))
    monkeypatch.setenv(tenancy.TENANCY_FILE_ENV, str(path))
    return path


def allowed(namespace: str, project: str, domain: str = "Default") -> bool:
    return tenancy.project_allowed(
        ProjectRequest(namespace=namespace, project=project, domain=domain)
    ).allowed


def test_a_namespace_may_name_only_its_mapped_projects(mapped: Path) -> None:
    assert allowed("team-a", "legacy")
    assert not allowed("team-a", "legacy", "other") and not allowed("team-a", "victim")
    assert not allowed("team-b", "legacy")  # another namespace's project
    verdict = tenancy.project_allowed(ProjectRequest(namespace="team-b", project="legacy", domain="Default"))
    assert "team-b is not in the operator's tenancy mapping" in verdict.message


def test_any_project_is_an_explicit_opt_in(mapped: Path) -> None:
    assert allowed("ops", "whatever") and not allowed("team-a", "whatever")


def test_identities_only_where_a_domain_is_mapped(mapped: Path) -> None:
    policy = tenancy.identity_policy(IdentityRequest(namespace="team-a"))
    assert policy.allowed and policy.domain == "tenants" and policy.roles == ["member"]
    for namespace in ("ops", "team-b"):
        refused = tenancy.identity_policy(IdentityRequest(namespace=namespace))
        assert not refused.allowed and "must map a managed Keystone domain" in refused.message


def test_no_mapping_refuses_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(tenancy.TENANCY_FILE_ENV, raising=False)
    assert not allowed("team-a", "legacy")
    assert not tenancy.identity_policy(IdentityRequest(namespace="team-a")).allowed


def test_a_changed_file_is_read_again(mapped: Path) -> None:
    assert not allowed("team-a", "newer")
    changed = MAPPING | {"namespaces": {"team-a": {"projects": [{"name": "newer", "domain": "Default"}]}}}
    mapped.write_text(yaml.safe_dump(changed) + "\n# longer: a new size as well as a new mtime\n")
    assert allowed("team-a", "newer")


def test_pinning_only_where_the_operator_allows_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "tenancy.yaml"
    pinning = {"placement_preflight": True, "required_traits": ["CUSTOM_A"]}
    path.write_text(
        yaml.safe_dump({"namespaces": {"ops": {"any_project": True, "pinning": pinning}, "dev": {}}})
    )
    monkeypatch.setenv(tenancy.TENANCY_FILE_ENV, str(path))
    ops = tenancy.pinning_policy(PinningRequest(namespace="ops"))
    assert ops.allowed and ops.preflight and ops.required_traits == ["CUSTOM_A"]
    for ns in ("dev", "elsewhere"):
        refused = tenancy.pinning_policy(PinningRequest(namespace=ns))
        assert (
            not refused.allowed
            and "may not be pinned" in refused.message
            and "nothing was created" in refused.message
        )
