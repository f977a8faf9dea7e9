"""examples/ are fresh, valid against the models and the CRDs' CEL rules, and the Cinder set is the seed's."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from examples import render_identity
from osprov.api.registry import KINDS
from tests.api.schema_check import violations
from tests.api.test_crds import load_crd

EXAMPLES = Path(render_identity.__file__).resolve().parent
REPO = EXAMPLES.parent
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


def example_files() -> list[Path]:
    return sorted(EXAMPLES.rglob("*.yaml"))


def load(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def test_identity_examples_are_fresh(capsys: pytest.CaptureFixture[str]) -> None:
    assert render_identity.main(["--check"]) == 0, capsys.readouterr().out


def test_one_identity_file_per_converted_chart() -> None:
    charts = {"glance", "cinder", "placement", "nova", "neutron", "heat"}
    assert {p.stem for p in (EXAMPLES / "identity").glob("*.yaml")} == charts


@pytest.mark.parametrize("path", example_files(), ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_example_resources_are_valid(path: Path) -> None:
    docs = load(path)
    assert docs
    secrets = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Secret"}
    for doc in docs:
        meta = doc["metadata"]
        assert "namespace" not in meta, "examples are applied with -n"
        assert DNS_SUBDOMAIN.match(meta["name"]), meta["name"]
        if doc["kind"] == "Secret":
            continue
        info = KINDS[doc["kind"]]
        assert doc["apiVersion"] == info.api_version
        info.spec_model.model_validate(doc["spec"])
        schema = load_crd(info)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        assert violations(schema["properties"]["spec"], doc["spec"]) == []
        if doc["kind"] == "User":
            ref = doc["spec"]["passwordSecret"]
            assert ref["key"] in secrets[ref["name"]]["stringData"], (
                "the User names a Secret in the same file"
            )
        if doc["kind"] == "Server":
            volumes = {d["metadata"]["name"] for d in docs if d["kind"] == "Volume"}
            assert {v["volume"] for v in doc["spec"].get("volumes", [])} <= volumes
        if doc["kind"] == "Domain":
            assert doc["spec"]["name"] != "Default", "Default always exists and is never rendered"


def test_heat_trustee_has_a_kubernetes_safe_name() -> None:
    users = {
        d["metadata"]["name"]: d["spec"]["name"]
        for d in load(EXAMPLES / "identity" / "heat.yaml")
        if d["kind"] == "User"
    }
    assert users == {"heat-heat": "heat", "heat-heat-trustee": "heat_trustee"}


def test_every_user_gets_member_and_its_chart_roles() -> None:
    for path in (EXAMPLES / "identity").glob("*.yaml"):
        docs = load(path)
        for user in (d for d in docs if d["kind"] == "User"):
            granted = {
                d["spec"]["role"]["name"]
                for d in docs
                if d["kind"] == "RoleAssignment" and d["spec"]["user"]["name"] == user["spec"]["name"]
            }
            assert {"admin", "member"} <= granted, path


def _seed_cinder_example() -> list[dict[str, Any]]:
    seeds = [REPO.parent / "shared" / "seeds", Path("/work/shared/seeds")]
    seed = next((p for d in seeds if d.is_dir() for p in d.glob("001_*.txt")), None)
    if seed is None:
        pytest.skip("seed 001 not found beside the repository")
    text = seed.read_text()
    start = text.index(
        "apiVersion: keystone.osh.openstack.org/v1alpha1\nkind: Domain\nmetadata:\n  name: cinder-service"
    )
    end = text.index("public: http://cinder.openstack.svc.cluster.local/v3", start)
    return [d for d in yaml.safe_load_all(text[start : text.index("\n", end)]) if d]


def test_cinder_example_is_exactly_the_seed_example_plus_its_secret() -> None:
    docs = load(EXAMPLES / "identity" / "cinder.yaml")
    seed = _seed_cinder_example()
    assert len(seed) == 11
    assert [d for d in docs if d["kind"] != "Secret"] == seed
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "Secret"] == ["cinder-keystone-user"]
