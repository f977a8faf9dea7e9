"""List paging over a consistent snapshot, as etcd's MVCC gives kube-apiserver: a continue token pins the
first page's resourceVersion; an expired one is 410 with a token to go on inconsistently."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from devenv.kube.testing import RunningEmulator, run_emulator

from .conftest import FIXTURES, GROUP, PLURAL, VERSION, custom_objects, raw_request, status_of, widget


def page(api: client.ApiClient, namespace: str, limit: int, token: str = "") -> Any:
    kwargs = {"limit": limit, "_continue": token} if token else {"limit": limit}
    return custom_objects(api).list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, **kwargs)


def test_later_pages_show_the_first_pages_snapshot(api: client.ApiClient, namespace: str) -> None:
    crs = custom_objects(api)
    for name in ("a", "c", "d", "e"):
        crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget(name, size=1))
    first = page(api, namespace, 2)
    assert [i["metadata"]["name"] for i in first["items"]] == ["a", "c"]
    assert first["metadata"]["remainingItemCount"] == 2
    # Between pages: an object that sorts into the next page appears, one leaves, one changes.
    crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("b"))
    crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("cc"))
    crs.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "d")
    crs.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "e", {"spec": {"size": 9}})
    second = page(api, namespace, 5, first["metadata"]["continue"])
    assert [i["metadata"]["name"] for i in second["items"]] == ["d", "e"]
    assert second["items"][1]["spec"]["size"] == 1  # as it was when the list began
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert "continue" not in second["metadata"]
    latest = page(api, namespace, 10)
    assert [i["metadata"]["name"] for i in latest["items"]] == ["a", "b", "c", "cc", "e"]


def test_resource_version_match_exact_lists_the_past(api: client.ApiClient, namespace: str) -> None:
    crs = custom_objects(api)
    crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("a"))
    then = page(api, namespace, 10)["metadata"]["resourceVersion"]
    crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("b"))
    past = crs.list_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, resource_version=then, resource_version_match="Exact"
    )
    assert [i["metadata"]["name"] for i in past["items"]] == ["a"] and past["metadata"][
        "resourceVersion"
    ] == then
    code, answer = raw_request(
        api,
        "GET",
        f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}?resourceVersion=99999999&resourceVersionMatch=Exact",
    )
    assert code == 504 and answer["reason"] == "Timeout" and "Too large resource version" in answer["message"]


@pytest.fixture(scope="module")
def short_history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningEmulator]:
    """An emulator retaining only 5 events per type, so continue tokens expire quickly."""
    with run_emulator(
        tmp_path_factory.mktemp("kube"), crds_dirs=[FIXTURES / "crds"], watch_window=5
    ) as running:
        yield running


def test_an_expired_continue_token_is_410_with_a_token_to_go_on(
    short_history: RunningEmulator, tmp_path: Path
) -> None:
    with short_history.api_client() as api:
        crs = custom_objects(api)
        for name in ("a", "b", "c"):
            crs.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget(name))
        first = page(api, "default", 1)
        for size in range(2, 9):  # more writes than the window keeps
            crs.patch_namespaced_custom_object(
                GROUP, VERSION, "default", PLURAL, "c", {"spec": {"size": size}}
            )
        with pytest.raises(client.ApiException) as exc:
            page(api, "default", 1, first["metadata"]["continue"])
        status = status_of(exc.value)
        assert exc.value.status == 410 and status["reason"] == "Expired"
        assert status["message"].startswith(
            "The provided continue parameter is too old to display a consistent list result."
        )
        rest = page(api, "default", 10, status["metadata"]["continue"])  # the inconsistent continuation
        assert [i["metadata"]["name"] for i in rest["items"]] == ["b", "c"] and rest["items"][1]["spec"][
            "size"
        ] == 8
