"""Conformance of create/get/list/update/patch/delete through the official kubernetes client."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from kubernetes import client

from devenv.kube.testing import RunningEmulator

from .conftest import GROUP, PLURAL, VERSION, core_v1, custom_objects, status_of, widget


def test_create_answers_201_with_server_set_metadata(api: client.ApiClient, namespace: str) -> None:
    crs = custom_objects(api)
    body, code, _ = crs.create_namespaced_custom_object_with_http_info(
        GROUP, VERSION, namespace, PLURAL, widget("a")
    )
    assert code == 201
    meta = body["metadata"]
    assert meta["generation"] == 1 and meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert meta["namespace"] == namespace and int(meta["resourceVersion"]) > 0
    with pytest.raises(client.ApiException) as exc:
        crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("a"))
    assert exc.value.status == 409 and status_of(exc.value)["reason"] == "AlreadyExists"
    with pytest.raises(client.ApiException) as exc:
        crs.create_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, {**body, "metadata": {"name": "b", "resourceVersion": "3"}}
        )
    assert exc.value.status == 400
    generated = crs.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, {**widget("x"), "metadata": {"generateName": "gen-"}}
    )
    assert generated["metadata"]["name"].startswith("gen-") and len(generated["metadata"]["name"]) == 9


def test_resource_versions_strictly_increase_and_list_carries_one(
    api: client.ApiClient, namespace: str
) -> None:
    crs = custom_objects(api)
    rvs = [
        int(
            crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget(f"w{i}"))[
                "metadata"
            ]["resourceVersion"]
        )
        for i in range(3)
    ]
    core = core_v1(api)
    secret = core.create_namespaced_secret(namespace, {"metadata": {"name": "s"}, "stringData": {"k": "v"}})
    rvs.append(int(secret.metadata.resource_version))
    assert rvs == sorted(rvs) and len(set(rvs)) == 4
    listed = crs.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)
    assert int(listed["metadata"]["resourceVersion"]) >= rvs[-1]
    assert [i["metadata"]["name"] for i in listed["items"]] == ["w0", "w1", "w2"]


def test_get_missing_is_404_status(api: client.ApiClient, namespace: str) -> None:
    with pytest.raises(client.ApiException) as exc:
        custom_objects(api).get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "nope")
    status = status_of(exc.value)
    assert exc.value.status == 404
    assert status["kind"] == "Status" and status["reason"] == "NotFound" and status["code"] == 404
    assert status["details"] == {"name": "nope", "group": GROUP, "kind": PLURAL}


def test_create_in_missing_namespace_is_404(api: client.ApiClient) -> None:
    with pytest.raises(client.ApiException) as exc:
        custom_objects(api).create_namespaced_custom_object(GROUP, VERSION, "no-such-ns", PLURAL, widget("a"))
    assert exc.value.status == 404 and 'namespaces "no-such-ns" not found' in status_of(exc.value)["message"]


def test_replace_with_stale_resource_version_conflicts(api: client.ApiClient, namespace: str) -> None:
    crs = custom_objects(api)
    first = crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("a"))
    first["spec"]["size"] = 2
    second = crs.replace_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "a", first)
    assert second["metadata"]["generation"] == 2
    first["spec"]["size"] = 3  # still carries the old resourceVersion
    with pytest.raises(client.ApiException) as exc:
        crs.replace_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "a", first)
    assert exc.value.status == 409 and status_of(exc.value)["reason"] == "Conflict"
    assert "the object has been modified" in status_of(exc.value)["message"]


def test_status_subresource_is_split_from_the_main_resource(api: client.ApiClient, namespace: str) -> None:
    crs = custom_objects(api)
    created = crs.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, {**widget("a"), "status": {"observedGeneration": 9}}
    )
    assert "status" not in created  # create ignores .status when the subresource is enabled
    ready = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}, "spec": {"size": 7}}
    after_status = crs.patch_namespaced_custom_object_status(GROUP, VERSION, namespace, PLURAL, "a", ready)
    assert after_status["status"]["conditions"][0]["status"] == "True"
    assert after_status["spec"]["size"] == 1  # a /status write changes only .status
    assert after_status["metadata"]["generation"] == 1  # and never the generation
    main = crs.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "a", {"spec": {"size": 4}, "status": {"observedGeneration": 5}}
    )
    assert main["spec"]["size"] == 4 and "observedGeneration" not in main["status"]
    assert main["metadata"]["generation"] == 2


def test_generation_ignores_metadata_changes_and_noop_writes_keep_the_resource_version(
    api: client.ApiClient, namespace: str
) -> None:
    crs = custom_objects(api)
    created = crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("a"))
    labelled = crs.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "a", {"metadata": {"labels": {"x": "y"}}}
    )
    assert labelled["metadata"]["generation"] == 1
    assert int(labelled["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    again = crs.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "a", {"metadata": {"labels": {"x": "y"}}}
    )
    assert again["metadata"]["resourceVersion"] == labelled["metadata"]["resourceVersion"]


def test_merge_patch_with_uid_or_resource_version_is_a_precondition(
    api: client.ApiClient, namespace: str
) -> None:
    crs = custom_objects(api)
    created = crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("a"))
    uid = created["metadata"]["uid"]
    for patch in (
        {"metadata": {"uid": "00000000-0000-0000-0000-000000000000"}, "spec": {"size": 2}},
        {"metadata": {"resourceVersion": "1"}, "spec": {"size": 2}},
    ):
        with pytest.raises(client.ApiException) as exc:
            crs.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "a", patch)
        assert exc.value.status == 409
    with pytest.raises(client.ApiException) as exc:
        crs.patch_namespaced_custom_object_status(
            GROUP,
            VERSION,
            namespace,
            PLURAL,
            "a",
            {"metadata": {"uid": "other"}, "status": {"observedGeneration": 1}},
        )
    assert exc.value.status == 409
    ok = crs.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "a", {"metadata": {"uid": uid}, "spec": {"size": 2}}
    )
    assert ok["spec"]["size"] == 2


def _raw_patch(api: client.ApiClient, path: str, body: object, content_type: str) -> tuple[int, str]:
    """PATCH with an explicit content type (the typed client always picks its own)."""
    headers = {"Content-Type": content_type, "Accept": "application/json"}
    response = api.call_api("PATCH", api.configuration.host + path, header_params=headers, body=body)
    payload = json.loads(response.read() or b"{}")
    return response.status, payload.get("reason", "") if payload.get("kind") == "Status" else ""


def test_json_patch_failed_test_is_422_and_strategic_merge_on_a_cr_is_415(
    api: client.ApiClient, namespace: str
) -> None:
    crs = custom_objects(api)
    crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("a"))
    path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}/a"
    assert _raw_patch(
        api, path, [{"op": "test", "path": "/spec/size", "value": 5}], "application/json-patch+json"
    ) == (422, "Invalid")
    assert (
        _raw_patch(
            api,
            path,
            [
                {"op": "test", "path": "/spec/size", "value": 1},
                {"op": "replace", "path": "/spec/size", "value": 6},
            ],
            "application/json-patch+json",
        )[0]
        == 200
    )
    assert crs.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "a")["spec"]["size"] == 6
    assert _raw_patch(api, path, {"spec": {"size": 2}}, "application/strategic-merge-patch+json") == (
        415,
        "UnsupportedMediaType",
    )


def test_finalizers_hold_deletion_and_block_new_finalizers(api: client.ApiClient, namespace: str) -> None:
    crs = custom_objects(api)
    crs.create_namespaced_custom_object(
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        {**widget("a"), "metadata": {"name": "a", "finalizers": ["test/one"]}},
    )
    deleted = crs.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "a")
    assert deleted["metadata"]["deletionTimestamp"] and deleted["metadata"]["deletionGracePeriodSeconds"] == 0
    assert deleted["metadata"]["generation"] == 2  # marking for deletion bumps the generation, as upstream
    still = crs.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "a")
    assert still["metadata"]["finalizers"] == ["test/one"]
    with pytest.raises(client.ApiException) as exc:
        crs.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, "a", {"metadata": {"finalizers": ["test/one", "test/two"]}}
        )
    assert exc.value.status == 422
    assert status_of(exc.value)["details"]["causes"][0]["field"] == "metadata.finalizers"
    crs.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "a", {"metadata": {"finalizers": None}}
    )
    with pytest.raises(client.ApiException) as gone:
        crs.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "a")
    assert gone.value.status == 404


def test_secret_string_data_is_merged_into_base64_data_and_type_defaulted(
    api: client.ApiClient, namespace: str
) -> None:
    core = core_v1(api)
    body = {
        "metadata": {"name": "creds"},
        "data": {"a": base64.b64encode(b"old").decode(), "b": base64.b64encode(b"kept").decode()},
        "stringData": {"a": "new"},
    }
    created, code, _ = core.create_namespaced_secret_with_http_info(namespace, body)
    assert code == 201 and created.type == "Opaque" and created.string_data is None
    assert base64.b64decode(created.data["a"]) == b"new" and base64.b64decode(created.data["b"]) == b"kept"
    with pytest.raises(client.ApiException) as exc:
        core.patch_namespaced_secret("creds", namespace, {"type": "kubernetes.io/tls"})
    assert exc.value.status == 422
    status = core.delete_namespaced_secret("creds", namespace)
    assert status["kind"] == "Status" and status["status"] == "Success"


def test_deleting_a_namespace_removes_its_content(api: client.ApiClient, namespace: str) -> None:
    crs, core = custom_objects(api), core_v1(api)
    crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("a"))
    core.delete_namespace(namespace)
    assert crs.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)["items"] == []
    with pytest.raises(client.ApiException) as exc:
        core.read_namespace(namespace)
    assert exc.value.status == 404


def test_label_and_field_selectors_filter_lists(api: client.ApiClient, namespace: str) -> None:
    crs = custom_objects(api)
    for name, tier in (("a", "web"), ("b", "db"), ("c", "web")):
        crs.create_namespaced_custom_object(
            GROUP,
            VERSION,
            namespace,
            PLURAL,
            {**widget(name), "metadata": {"name": name, "labels": {"tier": tier}}},
        )

    def names(**kwargs: str) -> list[str]:
        return [
            i["metadata"]["name"]
            for i in crs.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, **kwargs)["items"]
        ]

    assert names(label_selector="tier=web") == ["a", "c"]
    assert names(label_selector="tier in (db,cache)") == ["b"]
    assert names(label_selector="tier!=web") == ["b"]
    assert names(label_selector="!tier") == []
    assert names(field_selector="metadata.name=b") == ["b"]
    assert names(field_selector="metadata.name!=b", label_selector="tier") == ["a", "c"]


def test_list_pagination_with_limit_and_continue(api: client.ApiClient, namespace: str) -> None:
    crs = custom_objects(api)
    for i in range(5):
        crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget(f"p{i}"))
    page = crs.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, limit=2)
    seen = [i["metadata"]["name"] for i in page["items"]]
    while page["metadata"].get("continue"):
        page = crs.list_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, limit=2, _continue=page["metadata"]["continue"]
        )
        seen += [i["metadata"]["name"] for i in page["items"]]
    assert seen == [f"p{i}" for i in range(5)]


def test_deleting_an_owner_garbage_collects_its_dependents(api: client.ApiClient, namespace: str) -> None:
    crs, core = custom_objects(api), core_v1(api)
    owner = crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("owner"))
    ref = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Widget",
        "name": "owner",
        "uid": owner["metadata"]["uid"],
    }
    core.create_namespaced_secret(namespace, {"metadata": {"name": "owned", "ownerReferences": [ref]}})
    core.create_namespaced_secret(namespace, {"metadata": {"name": "unowned"}})
    crs.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "owner")
    assert [s.metadata.name for s in core.list_namespaced_secret(namespace).items] == ["unowned"]


def test_a_terminating_namespace_waits_for_finalizers_and_refuses_new_content(
    api: client.ApiClient, namespace: str
) -> None:
    crs, core = custom_objects(api), core_v1(api)
    crs.create_namespaced_custom_object(
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        {**widget("held"), "metadata": {"name": "held", "finalizers": ["test/hold"]}},
    )
    core.delete_namespace(namespace)
    assert core.read_namespace(namespace).status.phase == "Terminating"
    assert crs.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "held")["metadata"][
        "deletionTimestamp"
    ]
    with pytest.raises(client.ApiException) as exc:
        crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("late"))
    assert exc.value.status == 403 and "being terminated" in status_of(exc.value)["message"]
    crs.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "held", {"metadata": {"finalizers": None}}
    )
    with pytest.raises(client.ApiException) as gone:
        core.read_namespace(namespace)
    assert gone.value.status == 404


def test_dry_run_validates_without_storing_and_deletecollection_honours_selectors(
    api: client.ApiClient, namespace: str
) -> None:
    crs = custom_objects(api)
    dry = crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("dry"), dry_run="All")
    assert dry["spec"]["size"] == 1  # defaulted as a real create would be
    with pytest.raises(client.ApiException) as exc:
        crs.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "dry")
    assert exc.value.status == 404
    for name, keep in (("a", "no"), ("b", "no"), ("c", "yes")):
        crs.create_namespaced_custom_object(
            GROUP,
            VERSION,
            namespace,
            PLURAL,
            {**widget(name), "metadata": {"name": name, "labels": {"keep": keep}}},
        )
    crs.delete_collection_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, label_selector="keep=no"
    )
    assert [
        i["metadata"]["name"]
        for i in crs.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)["items"]
    ] == ["c"]


def test_every_served_version_shows_the_same_object(kube_emulator: RunningEmulator) -> None:
    schema = {
        "openAPIV3Schema": {
            "type": "object",
            "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
        }
    }
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.test.osprov.dev"},
        "spec": {
            "group": "test.osprov.dev",
            "scope": "Namespaced",
            "names": {"kind": "Thing", "plural": "things"},
            "versions": [
                {"name": "v1beta1", "served": True, "storage": False, "schema": schema},
                {"name": "v1", "served": True, "storage": True, "schema": schema},
            ],
        },
    }
    with kube_emulator.api_client() as api:
        ext: Any = client.ApiextensionsV1Api(api)
        ext.create_custom_resource_definition(crd)
        crs = custom_objects(api)
        body = {
            "apiVersion": "test.osprov.dev/v1beta1",
            "kind": "Thing",
            "metadata": {"name": "t"},
            "spec": {"a": 1},
        }
        created = crs.create_namespaced_custom_object("test.osprov.dev", "v1beta1", "default", "things", body)
        assert created["apiVersion"] == "test.osprov.dev/v1beta1"
        as_v1 = crs.get_namespaced_custom_object("test.osprov.dev", "v1", "default", "things", "t")
        assert as_v1["apiVersion"] == "test.osprov.dev/v1" and as_v1["spec"] == {"a": 1}
        assert as_v1["metadata"]["uid"] == created["metadata"]["uid"]
