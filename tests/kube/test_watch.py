"""Watch semantics: resourceVersion resume, ordering, selectors, bookmarks, timeouts, 410 Gone, faults."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, watch

from devenv.kube.testing import RunningEmulator, run_emulator

from .conftest import FIXTURES, GROUP, PLURAL, VERSION, core_v1, custom_objects, raw_watch, widget

BASE = f"/apis/{GROUP}/{VERSION}"


def test_watch_from_a_list_resource_version_sees_only_later_events_in_order(
    emulator: RunningEmulator, api: client.ApiClient, namespace: str
) -> None:
    crs = custom_objects(api)
    crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("before"))
    list_rv = crs.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)["metadata"][
        "resourceVersion"
    ]
    crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("a"))
    crs.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "a", {"spec": {"size": 2}})
    crs.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "a")
    events = raw_watch(
        emulator.url, f"{BASE}/namespaces/{namespace}/{PLURAL}", {"resourceVersion": list_rv}, count=3
    )
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "a"),
        ("MODIFIED", "a"),
        ("DELETED", "a"),
    ]
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs) and rvs[0] > int(list_rv)
    assert events[2]["object"]["spec"]["size"] == 2  # DELETED carries the last state


def test_watch_without_resource_version_starts_with_synthetic_added_events(
    emulator: RunningEmulator, api: client.ApiClient, namespace: str
) -> None:
    crs = custom_objects(api)
    for name in ("x", "y"):
        crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget(name))
    events = raw_watch(
        emulator.url, f"{BASE}/namespaces/{namespace}/{PLURAL}", {"timeoutSeconds": "1"}, count=10
    )
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "x"), ("ADDED", "y")]


def test_official_client_watch_streams_live_events(api: client.ApiClient, namespace: str) -> None:
    crs = custom_objects(api)
    rv = crs.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)["metadata"]["resourceVersion"]

    def writer() -> None:
        crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("live"))
        crs.patch_namespaced_custom_object_status(
            GROUP, VERSION, namespace, PLURAL, "live", {"status": {"observedGeneration": 1}}
        )

    # The writes race the watch on purpose: starting from `rv`, the stream must deliver both either way.
    thread = threading.Thread(target=writer)
    thread.start()
    seen: list[tuple[str, str]] = []
    stream = watch.Watch()
    for event in stream.stream(
        crs.list_namespaced_custom_object,
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        resource_version=rv,
        timeout_seconds=10,
    ):
        seen.append((event["type"], event["object"]["metadata"]["name"]))
        if len(seen) == 2:
            stream.stop()
    thread.join(timeout=10)
    assert seen == [("ADDED", "live"), ("MODIFIED", "live")]


def test_timeout_seconds_ends_the_stream(
    emulator: RunningEmulator, api: client.ApiClient, namespace: str
) -> None:
    rv = custom_objects(api).list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)["metadata"][
        "resourceVersion"
    ]
    started = time.monotonic()
    events = raw_watch(
        emulator.url,
        f"{BASE}/namespaces/{namespace}/{PLURAL}",
        {"timeoutSeconds": "1", "resourceVersion": rv},
        count=100,
        deadline_s=10,
    )
    elapsed = time.monotonic() - started
    assert events == [] and 0.9 <= elapsed < 5


def test_label_selector_watch_turns_leaving_the_selection_into_deleted(
    emulator: RunningEmulator, api: client.ApiClient, namespace: str
) -> None:
    crs = custom_objects(api)
    rv = crs.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)["metadata"]["resourceVersion"]
    crs.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, {**widget("a"), "metadata": {"name": "a", "labels": {"team": "x"}}}
    )
    crs.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, {**widget("b"), "metadata": {"name": "b", "labels": {"team": "y"}}}
    )
    crs.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "a", {"metadata": {"labels": {"team": "z"}}}
    )
    crs.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "b", {"metadata": {"labels": {"team": "x"}}}
    )
    events = raw_watch(
        emulator.url,
        f"{BASE}/namespaces/{namespace}/{PLURAL}",
        {"resourceVersion": rv, "labelSelector": "team=x", "timeoutSeconds": "1"},
        count=10,
    )
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "a"),
        ("DELETED", "a"),
        ("ADDED", "b"),
    ]
    by_name = raw_watch(
        emulator.url,
        f"{BASE}/namespaces/{namespace}/{PLURAL}",
        {"resourceVersion": rv, "fieldSelector": "metadata.name=b", "timeoutSeconds": "1"},
        count=10,
    )
    assert [e["object"]["metadata"]["name"] for e in by_name] == ["b", "b"]


def test_cluster_wide_watch_spans_namespaces(emulator: RunningEmulator, api: client.ApiClient) -> None:
    core, crs = core_v1(api), custom_objects(api)
    rv = crs.list_cluster_custom_object(GROUP, VERSION, PLURAL)["metadata"]["resourceVersion"]
    for ns in ("cw-one", "cw-two"):
        core.create_namespace({"metadata": {"name": ns}})
        crs.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, widget("w"))
    events = raw_watch(emulator.url, f"{BASE}/{PLURAL}", {"resourceVersion": rv}, count=2)
    assert [e["object"]["metadata"]["namespace"] for e in events] == ["cw-one", "cw-two"]


def test_watch_list_sends_initial_events_then_an_end_bookmark(
    emulator: RunningEmulator, api: client.ApiClient, namespace: str
) -> None:
    crs = custom_objects(api)
    crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("a"))
    params = {
        "sendInitialEvents": "true",
        "allowWatchBookmarks": "true",
        "resourceVersionMatch": "NotOlderThan",
    }
    events = raw_watch(emulator.url, f"{BASE}/namespaces/{namespace}/{PLURAL}", params, count=2)
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


@pytest.fixture(scope="module")
def small_window(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningEmulator]:
    with run_emulator(
        tmp_path_factory.mktemp("kube-window"),
        crds_dirs=[FIXTURES / "crds"],
        watch_window=5,
        extra_args=["--bookmark-interval", "0.2"],
    ) as running:
        yield running


def test_resource_version_older_than_the_window_is_410_gone(small_window: RunningEmulator) -> None:
    with small_window.api_client() as api:
        crs = custom_objects(api)
        first = crs.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("g0"))
        for i in range(1, 8):
            crs.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget(f"g{i}"))
        events = raw_watch(
            small_window.url,
            f"{BASE}/{PLURAL}",
            {"resourceVersion": first["metadata"]["resourceVersion"]},
            count=5,
        )
        assert len(events) == 1 and events[0]["type"] == "ERROR"
        assert events[0]["object"]["code"] == 410 and events[0]["object"]["reason"] == "Expired"
        # The official client (as the bridge uses it: with a timeout, so without its own retry) raises 410.
        stream = watch.Watch().stream(
            crs.list_cluster_custom_object,
            GROUP,
            VERSION,
            PLURAL,
            resource_version=first["metadata"]["resourceVersion"],
            timeout_seconds=5,
        )
        with pytest.raises(client.ApiException) as exc:
            next(iter(stream))
        assert exc.value.status == 410
        recent = crs.list_cluster_custom_object(GROUP, VERSION, PLURAL)["metadata"]["resourceVersion"]
        assert (
            raw_watch(
                small_window.url,
                f"{BASE}/{PLURAL}",
                {"resourceVersion": recent, "timeoutSeconds": "1"},
                count=5,
            )
            == []
        )


def test_bookmarks_advertise_the_current_resource_version(small_window: RunningEmulator) -> None:
    with small_window.api_client() as api:
        crs = custom_objects(api)
        created = crs.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("bm"))
        rv = created["metadata"]["resourceVersion"]
        events = raw_watch(
            small_window.url,
            f"{BASE}/{PLURAL}",
            {"resourceVersion": rv, "allowWatchBookmarks": "true"},
            count=1,
        )
        assert events[0]["type"] == "BOOKMARK" and int(
            events[0]["object"]["metadata"]["resourceVersion"]
        ) >= int(rv)


def test_fault_injection(small_window: RunningEmulator, tmp_path: Path) -> None:
    with small_window.api_client() as api:
        crs = custom_objects(api)
        rv = crs.list_cluster_custom_object(GROUP, VERSION, PLURAL)["metadata"]["resourceVersion"]
        small_window.force_gone_on_next_watch(PLURAL)
        events = raw_watch(small_window.url, f"{BASE}/{PLURAL}", {"resourceVersion": rv}, count=2)
        assert [e["object"]["code"] for e in events] == [410]
        small_window.inject("create", PLURAL, 500, times=1)
        small_window.inject("patch", f"{PLURAL}/status", 409, times=1)
        with pytest.raises(client.ApiException) as exc:
            crs.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("f1"))
        assert exc.value.status == 500
        crs.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("f1"))
        crs.patch_namespaced_custom_object(
            GROUP, VERSION, "default", PLURAL, "f1", {"spec": {"size": 2}}
        )  # main resource unaffected
        with pytest.raises(client.ApiException) as exc:
            crs.patch_namespaced_custom_object_status(
                GROUP, VERSION, "default", PLURAL, "f1", {"status": {"observedGeneration": 1}}
            )
        assert exc.value.status == 409
        small_window.inject("get", PLURAL, 0, times=1, delay_s=0.5)
        started = time.monotonic()
        crs.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "f1")
        assert time.monotonic() - started >= 0.5
        small_window.inject("list", "*", 503, times=5)
        small_window.clear_faults()
        crs.list_cluster_custom_object(GROUP, VERSION, PLURAL)


def test_cut_watches_ends_open_streams(small_window: RunningEmulator) -> None:
    with small_window.api_client() as api:
        rv = custom_objects(api).list_cluster_custom_object(GROUP, VERSION, PLURAL)["metadata"][
            "resourceVersion"
        ]
    result: dict[str, float] = {}

    def watcher() -> None:
        started = time.monotonic()
        raw_watch(
            small_window.url,
            f"{BASE}/{PLURAL}",
            {"resourceVersion": rv, "timeoutSeconds": "30"},
            count=1,
            deadline_s=30,
        )
        result["elapsed"] = time.monotonic() - started

    thread = threading.Thread(target=watcher)
    thread.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and thread.is_alive():
        small_window.cut_watches(PLURAL)  # repeated: the watch may not be registered yet
        thread.join(timeout=0.2)
    assert not thread.is_alive() and result["elapsed"] < 10


def test_builtin_types_are_watchable(emulator: RunningEmulator, api: client.ApiClient) -> None:
    core = core_v1(api)
    rv = core.list_namespace().metadata.resource_version
    core.create_namespace({"metadata": {"name": "watched"}})
    core.create_namespaced_secret("watched", {"metadata": {"name": "s"}, "stringData": {"k": "v"}})
    core.delete_namespace("watched")
    ns_events = raw_watch(
        emulator.url, "/api/v1/namespaces", {"watch": "True", "resourceVersion": rv}, count=3
    )
    phases = [(e["type"], e["object"]["status"]["phase"]) for e in ns_events]
    assert phases == [("ADDED", "Active"), ("MODIFIED", "Terminating"), ("DELETED", "Terminating")]
    secret_events = raw_watch(
        emulator.url, "/api/v1/namespaces/watched/secrets", {"watch": "1", "resourceVersion": rv}, count=2
    )
    assert [e["type"] for e in secret_events] == ["ADDED", "DELETED"]
    assert (
        secret_events[0]["object"]["data"] == {"k": "dg=="} and "stringData" not in secret_events[0]["object"]
    )
