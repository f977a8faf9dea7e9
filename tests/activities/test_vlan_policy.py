"""The operator's provider-network policy (activities/vlan.provider_policy), read from the tenancy mapping."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from osprov.activities import tenancy, vlan
from osprov.api.vlan_io import ProviderRequest, VlanRange

MAPPING: dict[str, Any] = {
    "namespaces": {
        "team-a": {"domain": "tenants", "provider_networks": ["physnet1", "physnet2"]},
        "team-b": {"domain": "tenants"},
    },
    "vlan_ranges": {"physnet1": {"first": 100, "last": 199}},
}


@pytest.fixture
def mapped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "tenancy.yaml"
    path.write_text(yaml.safe_dump(MAPPING))
    monkeypatch.setenv(tenancy.TENANCY_FILE_ENV, str(path))
    return path


def test_an_allowed_physical_network_gets_its_range(mapped: Path) -> None:
    policy = vlan.provider_policy(ProviderRequest(namespace="team-a", physical_network="physnet1"))
    assert policy.allowed and policy.range == VlanRange(first=100, last=199)


def test_a_namespace_without_the_physical_network_is_refused_with_what_to_ask(mapped: Path) -> None:
    for ns, physnet in (("team-b", "physnet1"), ("team-c", "physnet1"), ("team-a", "physnet3")):
        policy = vlan.provider_policy(ProviderRequest(namespace=ns, physical_network=physnet))
        assert not policy.allowed and "provider_networks" in policy.message


def test_an_allowed_physical_network_without_a_range_is_refused(mapped: Path) -> None:
    policy = vlan.provider_policy(ProviderRequest(namespace="team-a", physical_network="physnet2"))
    assert not policy.allowed and "no VLAN range" in policy.message


def test_no_mapping_refuses_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(tenancy.TENANCY_FILE_ENV, raising=False)
    assert not vlan.provider_policy(ProviderRequest(namespace="team-a", physical_network="physnet1")).allowed
