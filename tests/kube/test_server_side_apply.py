"""Server-side apply with field ownership (metadata.managedFields), through kubectl and the official client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from devenv.kube.testing import RunningEmulator

from .conftest import GROUP, PLURAL, VERSION, api_of, custom_objects, raw_request, status_of, widget
from .test_kubectl import kubectl, run_kubectl


def apply(
    api: client.ApiClient, namespace: str, name: str, spec: dict[str, Any], manager: str, force: bool = False
) -> tuple[int, Any]:
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Widget", "metadata": {"name": name}, "spec": spec}
    path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}/{name}?fieldManager={manager}"
    if force:
        path += "&force=true"
    return raw_request(api, "PATCH", path, body, {"Content-Type": "application/apply-patch+yaml"})


def managers(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["manager"], e["operation"]): e for e in obj["metadata"]["managedFields"]}


def test_apply_records_field_ownership_like_kube_apiserver(api: client.ApiClient, namespace: str) -> None:
    code, created = apply(api, namespace, "w", {"name": "w", "size": 2, "tags": ["a"]}, "alice")
    assert code == 201
    entry = managers(created)[("alice", "Apply")]
    assert entry["apiVersion"] == f"{GROUP}/{VERSION}" and entry["fieldsType"] == "FieldsV1" and entry["time"]
    assert entry["fieldsV1"] == {"f:spec": {"f:name": {}, "f:size": {}, "f:tags": {}}}
    # An Update (a merge patch) gives its manager what it changed.
    patched = custom_objects(api).patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "w", {"metadata": {"labels": {"team": "x"}}}
    )
    update = managers(patched)[("OpenAPI-Generator", "Update")]
    assert update["fieldsV1"] == {"f:metadata": {"f:labels": {".": {}, "f:team": {}}}}


def test_a_second_manager_changing_an_owned_field_conflicts_unless_forced(
    api: client.ApiClient, namespace: str
) -> None:
    apply(api, namespace, "w", {"name": "w", "size": 2, "mode": "fast"}, "alice")
    code, answer = apply(api, namespace, "w", {"name": "w", "size": 3}, "bob")
    assert code == 409 and answer["reason"] == "Conflict"
    assert answer["message"] == 'Apply failed with 1 conflict: conflict with "alice": .spec.size'
    assert answer["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "alice"', "field": ".spec.size"}
    ]
    # The same value is no conflict: both own it.
    code, shared = apply(api, namespace, "w", {"name": "w", "size": 2}, "carol")
    assert code == 200 and "f:size" in managers(shared)[("carol", "Apply")]["fieldsV1"]["f:spec"]
    code, forced = apply(api, namespace, "w", {"name": "w", "size": 3}, "bob", force=True)
    assert code == 200 and forced["spec"]["size"] == 3
    owned = {m: e["fieldsV1"]["f:spec"] for (m, _), e in managers(forced).items()}
    assert "f:size" in owned["bob"] and "f:size" not in owned["alice"] and "f:size" not in owned["carol"]


def test_fields_dropped_from_an_applied_configuration_are_removed_unless_someone_else_owns_them(
    api: client.ApiClient, namespace: str
) -> None:
    apply(api, namespace, "w", {"name": "w", "size": 2, "mode": "fast", "label": "l"}, "alice")
    apply(api, namespace, "w", {"name": "w", "label": "l"}, "bob")
    code, after = apply(api, namespace, "w", {"name": "w"}, "alice")
    assert code == 200
    assert "size" not in after["spec"] or after["spec"]["size"] == 1  # removed, then defaulted by the schema
    assert after["spec"]["mode"] == "safe"  # removed too, and defaulted back
    assert after["spec"]["label"] == "l"  # bob still owns it


def test_map_lists_merge_by_key_and_atomic_lists_are_replaced(api: client.ApiClient, namespace: str) -> None:
    ports_a = [{"name": "http", "port": 80}, {"name": "metrics", "port": 9464}]
    apply(api, namespace, "w", {"name": "w", "ports": ports_a, "tags": ["a", "b"]}, "alice")
    code, both = apply(api, namespace, "w", {"name": "w", "ports": [{"name": "grpc", "port": 50051}]}, "bob")
    assert code == 200
    assert [p["name"] for p in both["spec"]["ports"]] == ["http", "metrics", "grpc"]
    owned = managers(both)[("bob", "Apply")]["fieldsV1"]["f:spec"]["f:ports"]
    assert owned == {'k:{"name":"grpc"}': {".": {}, "f:name": {}, "f:port": {}}}
    # alice stops applying "metrics": only her item goes; bob's stays.
    code, after = apply(api, namespace, "w", {"name": "w", "ports": [ports_a[0]], "tags": ["c"]}, "alice")
    assert [p["name"] for p in after["spec"]["ports"]] == ["http", "grpc"]
    assert after["spec"]["tags"] == ["c"]  # an atomic list: replaced as a whole
    code, answer = apply(api, namespace, "w", {"name": "w", "ports": [{"name": "http", "port": 8080}]}, "bob")
    assert code == 409 and '.spec.ports[name="http"].port' in answer["message"]


def test_updates_take_ownership_and_appliers_then_conflict_with_them(
    api: client.ApiClient, namespace: str
) -> None:
    apply(api, namespace, "w", {"name": "w", "size": 2}, "alice")
    custom_objects(api).patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "w", {"spec": {"size": 5}}
    )
    code, answer = apply(api, namespace, "w", {"name": "w", "size": 2}, "alice")
    assert code == 409
    assert answer["message"] == (
        f'Apply failed with 1 conflict: conflict with "OpenAPI-Generator" using {GROUP}/{VERSION}: .spec.size'
    )


def test_apply_needs_a_field_manager_and_force_only_applies_to_apply(
    api: client.ApiClient, namespace: str
) -> None:
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"name": "w"},
    }
    path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}/w"
    code, answer = raw_request(api, "PATCH", path, body, {"Content-Type": "application/apply-patch+yaml"})
    assert code == 422 and answer["details"]["causes"][0]["field"] == "fieldManager"
    custom_objects(api).create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("w"))
    code, answer = raw_request(
        api,
        "PATCH",
        path + "?force=true",
        {"spec": {"size": 2}},
        {"Content-Type": "application/merge-patch+json"},
    )
    assert code == 422 and answer["details"]["causes"][0]["field"] == "force"


def test_status_apply_is_owned_with_the_status_subresource(api: client.ApiClient, namespace: str) -> None:
    apply(api, namespace, "w", {"name": "w"}, "alice")
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "status": {"observedGeneration": 1},
    }
    path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}/w/status?fieldManager=osprov-worker"
    code, answer = raw_request(api, "PATCH", path, body, {"Content-Type": "application/apply-patch+yaml"})
    assert code == 200 and answer["status"] == {"observedGeneration": 1}
    [entry] = [e for e in answer["metadata"]["managedFields"] if e["manager"] == "osprov-worker"]
    assert entry["subresource"] == "status" and entry["fieldsV1"] == {
        "f:status": {"f:observedGeneration": {}}
    }


def test_kubectl_server_side_apply_conflicts_and_force(
    emulator: RunningEmulator, api: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    manifest = tmp_path / "w.yaml"
    manifest.write_text(
        f"apiVersion: {GROUP}/{VERSION}\nkind: Widget\nmetadata: {{name: w, namespace: {namespace}}}\n"
        "spec: {name: w, size: 2}\n"
    )
    assert "serverside-applied" in kubectl(emulator, "apply", "--server-side", "-f", str(manifest))
    custom_objects(api).patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "w", {"spec": {"size": 4}}
    )
    result = run_kubectl(emulator, "apply", "--server-side", "-f", str(manifest))
    assert result.returncode != 0
    assert 'conflict with "OpenAPI-Generator"' in result.stderr and ".spec.size" in result.stderr
    kubectl(emulator, "apply", "--server-side", "--force-conflicts", "-f", str(manifest))
    shown = json.loads(
        kubectl(emulator, "get", "widget", "w", "-n", namespace, "-o", "json", "--show-managed-fields")
    )
    assert shown["spec"]["size"] == 2
    assert {e["manager"] for e in shown["metadata"]["managedFields"]} == {"kubectl"}


def test_strategic_merge_patch_merges_containers_by_name(api: client.ApiClient, namespace: str) -> None:
    apps = api_of(client.AppsV1Api, api)
    labels = {"app": "w"}
    containers = [
        {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}]},
        {"name": "b", "image": "b:1"},
    ]
    apps.create_namespaced_deployment(
        namespace,
        {
            "metadata": {"name": "d"},
            "spec": {
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": containers}},
            },
        },
    )
    patch = {
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "a", "image": "a:2", "env": [{"name": "Y", "value": "2"}]}]}
            }
        }
    }
    patched = apps.patch_namespaced_deployment("d", namespace, patch)
    got = {c.name: c for c in patched.spec.template.spec.containers}
    assert set(got) == {"a", "b"} and got["a"].image == "a:2" and got["b"].image == "b:1"
    assert [e.name for e in got["a"].env] == ["X", "Y"]
    assert patched.metadata.generation == 2


def test_field_manager_names_are_at_most_128_characters(api: client.ApiClient, namespace: str) -> None:
    custom_objects(api).create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("w"))
    with pytest.raises(client.ApiException) as exc:
        custom_objects(api).patch_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, "w", {"spec": {"size": 2}}, field_manager="x" * 129
        )
    assert exc.value.status == 422 and status_of(exc.value)["details"]["causes"][0]["field"] == "fieldManager"
