"""Metadata-only reads (PartialObjectMetadata), as client-go's metadata informers and osprov's bridge use
them for Secrets: the official client with `Accept: …;as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1`."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, watch

from devenv.kube.testing import RunningEmulator, run_emulator

from .conftest import FIXTURES, GROUP, PLURAL, VERSION, api_of, core_v1, custom_objects, raw_request, widget

AS_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
AS_ONE = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
# What client-go's metadata client sends: protobuf first (the emulator answers JSON), then JSON.
CLIENT_GO_LIST = f"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,{AS_LIST},application/json"
PASSWORD = "s3cret-value-never-sent"
ENCODED = base64.b64encode(PASSWORD.encode()).decode()


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningEmulator, Path]]:
    audit = tmp_path_factory.mktemp("audit") / "audit.jsonl"
    with run_emulator(
        tmp_path_factory.mktemp("kube"), crds_dirs=[FIXTURES / "crds"], extra_args=["--audit-log", str(audit)]
    ) as running:
        yield running, audit


def _secret(api: client.ApiClient, namespace: str, name: str) -> None:
    core_v1(api).create_namespaced_secret(
        namespace,
        {
            "metadata": {"name": name, "labels": {"osprov.dev/kind": "credentials"}},
            "stringData": {"password": PASSWORD},
        },
    )


def assert_metadata_only(item: dict[str, Any]) -> None:
    assert item["kind"] == "PartialObjectMetadata" and item["apiVersion"] == "meta.k8s.io/v1"
    assert set(item) == {"kind", "apiVersion", "metadata"}


def test_list_and_get_as_partial_object_metadata_never_send_data(
    api: client.ApiClient, namespace: str
) -> None:
    for name in ("one", "two"):
        _secret(api, namespace, name)
    core = core_v1(api)
    raw = core.list_namespaced_secret(
        namespace, limit=1, _preload_content=False, _headers={"Accept": CLIENT_GO_LIST}
    )
    listed = json.loads(raw.data)
    assert listed["kind"] == "PartialObjectMetadataList" and listed["apiVersion"] == "meta.k8s.io/v1"
    assert listed["metadata"]["continue"] and int(listed["metadata"]["resourceVersion"]) > 0
    [first] = listed["items"]
    assert_metadata_only(first)
    assert first["metadata"]["name"] == "one" and first["metadata"]["labels"] == {
        "osprov.dev/kind": "credentials"
    }
    assert first["metadata"]["resourceVersion"] and first["metadata"]["uid"]
    rest = core.list_namespaced_secret(
        namespace,
        _continue=listed["metadata"]["continue"],
        _preload_content=False,
        _headers={"Accept": AS_LIST},
    )
    assert [i["metadata"]["name"] for i in json.loads(rest.data)["items"]] == ["two"]
    one = core.read_namespaced_secret("one", namespace, _preload_content=False, _headers={"Accept": AS_ONE})
    assert_metadata_only(json.loads(one.data))
    for body in (raw.data, rest.data, one.data):
        assert ENCODED.encode() not in body and b'"data"' not in body
    # The full object still carries the data (the transform is the only thing that hides it).
    assert core.read_namespaced_secret("one", namespace).data == {"password": ENCODED}


def test_mismatched_partial_metadata_requests_are_406(api: client.ApiClient, namespace: str) -> None:
    _secret(api, namespace, "single")
    code, answer = raw_request(
        api, "GET", f"/api/v1/namespaces/{namespace}/secrets", headers={"Accept": AS_ONE}
    )
    assert code == 406 and answer["reason"] == "NotAcceptable" and "is a list" in answer["message"]
    code, answer = raw_request(
        api, "GET", f"/api/v1/namespaces/{namespace}/secrets/single", headers={"Accept": AS_LIST}
    )
    assert code == 406 and "is not a list" in answer["message"]


def test_watch_as_partial_object_metadata_streams_metadata_only(
    api: client.ApiClient, namespace: str
) -> None:
    core = core_v1(api)
    _secret(api, namespace, "existing")
    rv = core.list_namespaced_secret(namespace).metadata.resource_version
    seen: list[dict[str, Any]] = []
    raw_lines: list[bytes] = []
    done = threading.Event()

    def consume() -> None:
        stream = core.list_namespaced_secret(
            namespace,
            watch=True,
            resource_version=rv,
            allow_watch_bookmarks=True,
            timeout_seconds=20,
            _preload_content=False,
            _headers={"Accept": AS_ONE},
        )
        for line in stream:
            raw_lines.append(line)
            event = json.loads(line)
            seen.append(event)
            if event["type"] == "DELETED":
                done.set()
                stream.release_conn()
                return

    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    _secret(api, namespace, "added")
    core.patch_namespaced_secret("added", namespace, {"stringData": {"password": PASSWORD + "-2"}})
    core.delete_namespaced_secret("added", namespace)
    assert done.wait(20), f"watch events so far: {seen}"
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in seen if e["type"] != "BOOKMARK"] == [
        ("ADDED", "added"),
        ("MODIFIED", "added"),
        ("DELETED", "added"),
    ]
    for event in seen:
        assert_metadata_only(event["object"])
    assert not any(b'"data"' in line or ENCODED.encode() in line for line in raw_lines)


def test_watch_helper_of_the_official_client_with_metadata_only(
    api: client.ApiClient, namespace: str
) -> None:
    _secret(api, namespace, "via-helper")
    stream = watch.Watch().stream(
        core_v1(api).list_namespaced_secret, namespace, timeout_seconds=2, _headers={"Accept": AS_ONE}
    )
    first = next(iter(stream))
    assert first["type"] == "ADDED" and first["raw_object"]["kind"] == "PartialObjectMetadata"
    assert first["object"].metadata.name == "via-helper" and first["object"].data is None


def test_watch_list_bookmark_is_partial_metadata_too(
    emulator: RunningEmulator, namespace: str, api: client.ApiClient
) -> None:
    custom_objects(api).create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("w"))
    raw = api.call_api(
        "GET",
        f"{emulator.url}/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}?watch=1&sendInitialEvents=true"
        "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=5",
        {"Accept": AS_ONE},
    )
    events = []
    for line in raw.response.stream(1 << 16):
        events += [json.loads(x) for x in line.splitlines() if x.strip()]
        if any(e["type"] == "BOOKMARK" for e in events):
            break
    raw.response.release_conn()
    added, mark = events[0], events[-1]
    assert added["type"] == "ADDED" and set(added["object"]) == {"kind", "apiVersion", "metadata"}
    assert "spec" not in added["object"]
    assert mark["type"] == "BOOKMARK" and mark["object"]["kind"] == "PartialObjectMetadata"
    assert mark["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_watch_asking_for_a_list_transform_gets_no_secret_events(
    api: client.ApiClient, namespace: str
) -> None:
    """`as=PartialObjectMetadataList` is not a watch representation: kube-apiserver cannot encode a Secret
    that way and ends the stream, so a bridge that sends the list header sees nothing (not full Secrets)."""
    _secret(api, namespace, "listed-header")
    stream = core_v1(api).list_namespaced_secret(
        namespace, watch=True, timeout_seconds=5, _preload_content=False, _headers={"Accept": AS_LIST}
    )
    assert list(stream) == []


def test_audit_log_records_metadata_only_reads(audited: tuple[RunningEmulator, Path]) -> None:
    running, audit = audited
    with running.api_client() as api:
        api.user_agent = "osprov-bridge/test"
        _secret(api, "default", "audited")
        core_v1(api).list_namespaced_secret("default", _preload_content=False, _headers={"Accept": AS_LIST})
        api_of(client.CoordinationV1Api, api).list_namespaced_lease("default")
    lines = [json.loads(x) for x in audit.read_text().splitlines()]
    ours = [x for x in lines if x["user_agent"].startswith("osprov-bridge")]
    assert {
        "verb": "create",
        "group": "",
        "resource": "secrets",
        "subresource": "",
        "namespace": "default",
        "name": "",
        "as": "",
        "user_agent": "osprov-bridge/test",
    } in ours
    listed = [x for x in ours if x["verb"] == "list" and x["resource"] == "secrets"]
    assert listed and listed[0]["as"] == "PartialObjectMetadataList"
    assert any(x["group"] == "coordination.k8s.io" and x["resource"] == "leases" for x in ours)
