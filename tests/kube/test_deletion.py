"""Deletion like kube-apiserver: dry-run changes nothing (query or DeleteOptions body), and
propagationPolicy Orphan / Foreground / Background, through kubectl and the official client."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from devenv.kube.testing import RunningEmulator
from tests.support.waiting import wait_for

from .conftest import GROUP, PLURAL, VERSION, core_v1, custom_objects, widget
from .test_kubectl import kubectl


def _names(api: client.ApiClient, namespace: str) -> set[str]:
    items = custom_objects(api).list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)["items"]
    return {i["metadata"]["name"] for i in items}


def _owned(name: str, owner: dict[str, Any], block: bool = False, finalizer: str = "") -> dict[str, Any]:
    body = widget(name)
    ref = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Widget",
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": block,
    }
    body["metadata"] = {"name": name, "ownerReferences": [ref]}
    if finalizer:
        body["metadata"]["finalizers"] = [finalizer]
    return body


def _get(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        found: dict[str, Any] = custom_objects(api).get_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, name
        )
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return found


def test_kubectl_delete_dry_run_server_deletes_nothing(
    emulator: RunningEmulator, api: client.ApiClient, namespace: str
) -> None:
    crs = custom_objects(api)
    for name in ("a", "b"):
        crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget(name))
    core_v1(api).create_namespaced_secret(namespace, {"metadata": {"name": "kept"}, "stringData": {"k": "v"}})
    before = crs.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)["metadata"][
        "resourceVersion"
    ]
    out = kubectl(emulator, "delete", "widgets", "a", "-n", namespace, "--dry-run=server")
    assert 'widget.test.osprov.dev "a" deleted' in out and "(server dry run)" in out
    kubectl(emulator, "delete", "widgets", "--all", "-n", namespace, "--dry-run=server")
    kubectl(emulator, "delete", "secret", "kept", "-n", namespace, "--dry-run=server")
    kubectl(emulator, "delete", "namespace", namespace, "--dry-run=server")
    assert _names(api, namespace) == {"a", "b"}
    assert core_v1(api).read_namespaced_secret("kept", namespace).metadata.name == "kept"
    ns = core_v1(api).read_namespace(namespace)
    assert ns.status.phase == "Active" and ns.metadata.deletion_timestamp is None
    after = crs.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)["metadata"][
        "resourceVersion"
    ]
    assert after == before  # nothing was written at all


def test_dry_run_in_the_delete_options_body_is_honoured(api: client.ApiClient, namespace: str) -> None:
    crs = custom_objects(api)
    body = widget("held")
    body["metadata"]["finalizers"] = ["test.osprov.dev/hold"]
    crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
    crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("plain"))
    options = client.V1DeleteOptions(dry_run=["All"])
    answer = crs.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "held", body=options)
    assert answer["metadata"]["deletionTimestamp"]  # what a real delete would have done
    crs.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "plain", body=options)
    crs.delete_collection_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body=options)
    assert _names(api, namespace) == {"held", "plain"}
    assert _get(api, namespace, "held")["metadata"].get("deletionTimestamp") is None  # type: ignore[index]


def test_dry_run_create_update_patch_and_apply_change_nothing(
    emulator: RunningEmulator, api: client.ApiClient, namespace: str, tmp_path: Any
) -> None:
    crs = custom_objects(api)
    crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("base", size=1))
    before = _get(api, namespace, "base")
    manifest = tmp_path / "w.yaml"
    manifest.write_text(
        f"apiVersion: {GROUP}/{VERSION}\nkind: Widget\nmetadata: {{name: base, namespace: {namespace}}}\nspec: {{name: base, size: 5}}\n"
    )
    fresh = tmp_path / "fresh.yaml"
    fresh.write_text(
        manifest.read_text().replace("name: base,", "name: fresh,").replace("name: base", "name: fresh")
    )
    assert "(server dry run)" in kubectl(emulator, "create", "-f", str(fresh), "--dry-run=server")
    assert "(server dry run)" in kubectl(emulator, "apply", "-f", str(manifest), "--dry-run=server")
    assert "(server dry run)" in kubectl(
        emulator, "apply", "--server-side", "--force-conflicts", "-f", str(manifest), "--dry-run=server"
    )
    patch = '{"spec":{"size":9}}'
    kubectl(
        emulator, "patch", "widget", "base", "-n", namespace, "--type=merge", "-p", patch, "--dry-run=server"
    )
    patched = crs.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "base", {"spec": {"size": 7}}, dry_run="All"
    )
    assert patched["spec"]["size"] == 7  # the answer shows the result...
    assert _get(api, namespace, "base") == before  # ...that was not stored
    assert _names(api, namespace) == {"base"}


def test_orphan_propagation_keeps_dependents_and_removes_their_owner_reference(
    emulator: RunningEmulator, api: client.ApiClient, namespace: str
) -> None:
    crs = custom_objects(api)
    owner = crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("owner"))
    for name in ("child-1", "child-2"):
        crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, _owned(name, owner))
    kubectl(emulator, "delete", "widget", "owner", "-n", namespace, "--cascade=orphan")
    assert _names(api, namespace) == {"child-1", "child-2"}
    for name in ("child-1", "child-2"):
        assert "ownerReferences" not in _get(api, namespace, name)["metadata"]  # type: ignore[index]


def test_foreground_propagation_keeps_the_owner_until_blocking_dependents_are_gone(
    api: client.ApiClient, namespace: str
) -> None:
    crs = custom_objects(api)
    owner = crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("owner"))
    crs.create_namespaced_custom_object(
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        _owned("blocking", owner, block=True, finalizer="test.osprov.dev/hold"),
    )
    crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, _owned("loose", owner))
    options = client.V1DeleteOptions(propagation_policy="Foreground")
    answer = crs.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "owner", body=options)
    assert (
        answer["metadata"]["finalizers"] == ["foregroundDeletion"] and answer["metadata"]["deletionTimestamp"]
    )
    held = _get(api, namespace, "owner")
    assert held is not None and held["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert _get(api, namespace, "loose") is None  # deleted, and never blocked the owner
    blocking = _get(api, namespace, "blocking")
    assert blocking is not None and blocking["metadata"]["deletionTimestamp"]  # held by its own finalizer
    crs.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "blocking", {"metadata": {"finalizers": None}}
    )
    wait_for(
        lambda: _get(api, namespace, "owner") is None, "the owner to go once its blocking dependent went", 10
    )
    assert _names(api, namespace) == set()


def test_background_propagation_deletes_the_owner_first(api: client.ApiClient, namespace: str) -> None:
    crs = custom_objects(api)
    owner = crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("owner"))
    crs.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, _owned("child", owner, finalizer="test.osprov.dev/hold")
    )
    crs.delete_namespaced_custom_object(
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        "owner",
        body=client.V1DeleteOptions(propagation_policy="Background"),
    )
    assert _get(api, namespace, "owner") is None
    child = _get(api, namespace, "child")
    assert child is not None and child["metadata"]["deletionTimestamp"]
