"""The checked-in CRDs are generated, fresh, structural, and their CEL rules say what they promise."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from osprov.api import crdgen
from osprov.api.registry import ALL_KINDS, KindInfo, kind_info
from tests.api.schema_check import all_rules, compile_rule, structural_problems, violations


def load_crd(info: KindInfo) -> dict[str, Any]:
    text = (crdgen.DEFAULT_OUT / crdgen.file_name(info)).read_text()
    return yaml.safe_load(text)


def spec_schema(kind: str) -> dict[str, Any]:
    crd = load_crd(kind_info(kind))
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]


def test_checked_in_crds_are_fresh() -> None:
    problems = crdgen.stale_report(crdgen.DEFAULT_OUT)
    assert not problems, "".join(problems) + "\nrun `python -m api.crdgen` and commit deploy/crds/"


def test_check_reports_a_stale_file_with_a_diff(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert crdgen.main(["--out", str(tmp_path)]) == 0
    assert crdgen.main(["--check", "--out", str(tmp_path)]) == 0
    domain = tmp_path / crdgen.file_name(kind_info("Domain"))
    domain.write_text(domain.read_text().replace("default: retain", "default: delete"))
    (tmp_path / "leftover.example.org.yaml").write_text("kind: CustomResourceDefinition\n")
    capsys.readouterr()

    assert crdgen.main(["--check", "--out", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "-                default: delete" in out and "+                default: retain" in out
    assert "leftover.example.org.yaml: not generated" in out
    assert "are stale" in out


@pytest.mark.parametrize("info", ALL_KINDS, ids=lambda i: i.kind)
def test_crd_is_structural_namespaced_with_status_and_columns(info: KindInfo) -> None:
    crd = load_crd(info)
    assert crd["metadata"]["name"] == f"{info.plural}.{info.group}"
    assert crd["spec"]["scope"] == "Namespaced"
    names = crd["spec"]["names"]
    plural = (
        info.kind.lower().removesuffix("y") + "ies" if info.kind.endswith("y") else info.kind.lower() + "s"
    )
    assert names["kind"] == info.kind and names["plural"] == plural
    assert set(info.categories) <= set(names["categories"])
    version = crd["spec"]["versions"][0]
    assert version["subresources"] == {"status": {}}
    columns = [c["name"] for c in version["additionalPrinterColumns"]]
    assert columns[:2] == [info.ready_condition, "Reason"] and columns[-1] == "Age"
    assert ("ID" in columns) == (info.id_field is not None)
    schema = version["schema"]["openAPIV3Schema"]
    assert structural_problems(schema) == []
    status = schema["properties"]["status"]["properties"]
    assert {"observedGeneration", "conditions"} <= set(status)
    if info.id_field:
        assert info.id_field in status
    for rule in all_rules(schema):
        compile_rule(rule)  # every rule is valid CEL for the emulator too


def test_keystone_kinds_share_the_keystone_category_and_default_retain() -> None:
    for info in ALL_KINDS:
        if info.group != "keystone.osh.openstack.org":
            continue
        assert "keystone" in info.categories
        assert spec_schema(info.kind)["properties"]["deletionPolicy"]["default"] == "retain"


ASSIGNMENT = {"role": {"name": "admin"}, "user": {"name": "cinder", "domain": "service"}}
PROJECT = {"project": {"name": "service", "domain": "service"}}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({**ASSIGNMENT, **PROJECT}, []),
        ({**ASSIGNMENT, "domain": {"name": "service"}}, []),
        ({**ASSIGNMENT, "system": "all"}, []),
        ({"role": {"name": "admin"}, "group": {"name": "g", "domain": "d"}, **PROJECT}, []),
        ({**ASSIGNMENT, "group": {"name": "g", "domain": "d"}, **PROJECT}, ["set exactly one subject"]),
        ({"role": {"name": "admin"}, **PROJECT}, ["set exactly one subject"]),
        (ASSIGNMENT, ["set exactly one scope"]),
        ({**ASSIGNMENT, **PROJECT, "system": "all"}, ["set exactly one scope"]),
    ],
)
def test_role_assignment_one_of_rules(spec: dict[str, Any], expected: list[str]) -> None:
    found = violations(spec_schema("RoleAssignment"), spec)
    assert len(found) == len(expected)
    for message, fragment in zip(found, expected, strict=True):
        assert fragment in message


def test_endpoint_urls_rules_name_the_bad_interface_set() -> None:
    schema = spec_schema("Endpoint")
    base = {"service": {"name": "cinderv3", "type": "volumev3"}, "region": "RegionOne"}
    assert violations(schema, {**base, "urls": {"public": "http://x/v3"}}) == []
    assert violations(schema, {**base, "urls": {"publc": "http://x/v3"}}) == [
        ".urls: spec.urls keys must be admin, internal or public"
    ]
    assert violations(schema, {**base, "urls": {}}) == [
        ".urls: spec.urls must set at least one of admin, internal or public"
    ]


@pytest.mark.parametrize(("value", "ok"), [("30s", True), ("1m30s", True), ("1.5h", True), ("500ms", False)])
def test_retry_interval_rule(value: str, ok: bool) -> None:
    found = violations(spec_schema("Domain"), {"name": "d", "retryInterval": value})
    assert (found == []) == ok, found
