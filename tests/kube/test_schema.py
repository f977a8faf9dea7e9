"""Structural schema (defaults, pruning, validation) and CEL rules, answered like a real apiserver."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from devenv.kube.testing import RunningEmulator

from .conftest import FIXTURES, GROUP, PLURAL, VERSION, crd_body, custom_objects, status_of, widget


def _invalid(exc: pytest.ExceptionInfo[client.ApiException]) -> dict[str, str]:
    status = status_of(exc.value)
    assert exc.value.status == 422 and status["reason"] == "Invalid"
    return {c["field"]: c["message"] for c in status["details"]["causes"]}


def test_defaults_are_applied_and_unknown_fields_pruned(api: client.ApiClient, namespace: str) -> None:
    crs = custom_objects(api)
    body = widget("a", bogus=1, extra={"anything": {"goes": [1, 2]}})
    body["topLevelJunk"] = True
    created = crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
    assert created["spec"]["size"] == 1 and created["spec"]["mode"] == "safe"
    assert "bogus" not in created["spec"] and "topLevelJunk" not in created
    assert created["spec"]["extra"] == {"anything": {"goes": [1, 2]}}  # x-kubernetes-preserve-unknown-fields


def test_schema_violations_are_422_with_field_causes(api: client.ApiClient, namespace: str) -> None:
    crs = custom_objects(api)
    bad = widget("Bad_Name", size=11, mode="slow", tags=["a", "b", "c", "d"])
    with pytest.raises(client.ApiException) as exc:
        crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, bad)
    causes = _invalid(exc)
    assert "should match" in causes["spec.name"]
    assert causes["spec.size"] == "Invalid value: 11: spec.size in body should be less than or equal to 10"
    assert causes["spec.mode"] == 'Unsupported value: "slow": supported values: "fast", "safe"'
    assert "must have at most 3 items" in causes["spec.tags"]
    assert 'Widget.test.osprov.dev "Bad_Name" is invalid: [' in status_of(exc.value)["message"]
    with pytest.raises(client.ApiException) as exc:
        crs.create_namespaced_custom_object(
            GROUP,
            VERSION,
            namespace,
            PLURAL,
            {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "Widget",
                "metadata": {"name": "b"},
                "spec": {"size": "big"},
            },
        )
    causes = _invalid(exc)
    assert causes["spec.name"] == "Required value"
    assert (
        causes["spec.size"] == 'Invalid value: "string": spec.size in body must be of type integer: "string"'
    )


def test_cel_rule_with_message_expression(api: client.ApiClient, namespace: str) -> None:
    crs = custom_objects(api)
    with pytest.raises(client.ApiException) as exc:
        crs.create_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, widget("a", left="l", right="r")
        )
    assert _invalid(exc) == {
        "spec": 'Invalid value: "object": only one of left or right may be set, not both (name a)'
    }
    crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("a", left="l"))


def test_cel_transition_rule_applies_only_on_update(api: client.ApiClient, namespace: str) -> None:
    crs = custom_objects(api)
    crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("a", key="one"))
    crs.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "a", {"spec": {"size": 3}})
    with pytest.raises(client.ApiException) as exc:
        crs.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "a", {"spec": {"key": "two"}})
    assert _invalid(exc) == {"spec.key": 'Invalid value: "string": key is immutable'}
    # Setting the key for the first time on update has no oldSelf to compare with: allowed.
    crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("b"))
    crs.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "b", {"spec": {"key": "late"}})


def test_status_is_validated_against_the_schema(api: client.ApiClient, namespace: str) -> None:
    crs = custom_objects(api)
    crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("a"))
    with pytest.raises(client.ApiException) as exc:
        crs.patch_namespaced_custom_object_status(
            GROUP,
            VERSION,
            namespace,
            PLURAL,
            "a",
            {"status": {"conditions": [{"type": "Ready", "status": "Yes"}]}},
        )
    assert "status.conditions[0].status" in _invalid(exc)


def test_crd_created_through_the_api_is_served_and_its_deletion_removes_objects(
    kube_emulator: RunningEmulator,
) -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": [{"rule": "self.x > 0"}],
                "properties": {"x": {"type": "integer"}},
            }
        },
    }
    crd = crd_body("Gadget", "gadgets", "Cluster", schema)
    with kube_emulator.api_client() as api:
        ext: Any = client.ApiextensionsV1Api(api)
        created = ext.create_custom_resource_definition(crd)
        assert {c.type: c.status for c in created.status.conditions}["Established"] == "True"
        crs = custom_objects(api)
        crs.create_cluster_custom_object(
            "test.osprov.dev",
            "v1",
            "gadgets",
            {
                "apiVersion": "test.osprov.dev/v1",
                "kind": "Gadget",
                "metadata": {"name": "g"},
                "spec": {"x": 1},
            },
        )
        with pytest.raises(client.ApiException) as exc:
            crs.create_cluster_custom_object(
                "test.osprov.dev",
                "v1",
                "gadgets",
                {
                    "apiVersion": "test.osprov.dev/v1",
                    "kind": "Gadget",
                    "metadata": {"name": "h"},
                    "spec": {"x": 0},
                },
            )
        assert _invalid(exc) == {"spec": 'Invalid value: "object": failed rule: self.x > 0'}
        broken = {**crd, "metadata": {"name": "bad.test.osprov.dev"}}
        with pytest.raises(client.ApiException) as exc:
            ext.create_custom_resource_definition(broken)
        assert exc.value.status == 422
        ext.delete_custom_resource_definition("gadgets.test.osprov.dev")
        with pytest.raises(client.ApiException) as exc:
            crs.list_cluster_custom_object("test.osprov.dev", "v1", "gadgets")
        assert exc.value.status == 404


def test_crd_updated_through_the_api_changes_validation_and_printer_columns(
    kube_emulator: RunningEmulator, tmp_path: Path
) -> None:
    with kube_emulator.api_client() as api:
        ext: Any = client.ApiextensionsV1Api(api)
        crd = yaml.safe_load((FIXTURES / "crds" / "widgets.yaml").read_text())
        ext.create_custom_resource_definition(crd)
        crs = custom_objects(api)
        crs.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("a", size=9))
        current = ext.read_custom_resource_definition(f"{PLURAL}.{GROUP}")
        version = crd["spec"]["versions"][0]
        version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"]["maximum"] = 5
        version["additionalPrinterColumns"].append(
            {"name": "Mode", "type": "string", "jsonPath": ".spec.mode"}
        )
        crd["metadata"]["resourceVersion"] = current.metadata.resource_version
        updated = ext.replace_custom_resource_definition(f"{PLURAL}.{GROUP}", crd)
        assert updated.metadata.generation == 2
        with pytest.raises(client.ApiException) as exc:
            crs.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("b", size=9))
        assert "should be less than or equal to 5" in _invalid(exc)["spec.size"]
        # Stored objects are not revalidated, but updates to them are.
        assert crs.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "a")["spec"]["size"] == 9
        with urllib.request.urlopen(
            urllib.request.Request(
                f"{kube_emulator.url}/apis/{GROUP}/{VERSION}/namespaces/default/{PLURAL}",
                headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
            ),
            timeout=10,
        ) as response:
            table = json.loads(response.read())
        assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Ready", "Size", "Mode"]


def test_unknown_fields_warn_by_default_and_fail_with_strict_validation(
    emulator: RunningEmulator, namespace: str
) -> None:
    url = f"{emulator.url}/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}"
    body = json.dumps(widget("a", bogus=1)).encode()
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 201
        assert response.headers["Warning"] == '299 - "unknown field \\"spec.bogus\\""'
        assert "bogus" not in json.loads(response.read())["spec"]
    strict = urllib.request.Request(
        url + "?fieldValidation=Strict",
        data=json.dumps(widget("b", bogus=1)).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as exc:
        urllib.request.urlopen(strict, timeout=10)
    assert exc.value.code == 400
    assert 'strict decoding error: unknown field "spec.bogus"' in json.loads(exc.value.read())["message"]


def test_cel_kubernetes_string_library_subset(api: client.ApiClient, namespace: str) -> None:
    crs = custom_objects(api)
    crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("a", label="team/web"))
    for bad in (" padded", "a/b/c"):
        with pytest.raises(client.ApiException) as exc:
            crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("b", label=bad))
        assert _invalid(exc) == {
            "spec.label": "Invalid value: \"string\": label must not have surrounding spaces nor more than one '/'"
        }
