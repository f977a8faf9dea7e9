"""Discovery, Table output, OpenAPI, persistence and start-up time."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from kubernetes import client, config

from devenv.kube.server import SAVE_DEBOUNCE_S, SAVE_SPACING, save_delay
from devenv.kube.testing import RunningEmulator, run_emulator

from .conftest import FIXTURES, GROUP, PLURAL, VERSION, core_v1, custom_objects, raw_watch, widget


def _get(url: str, accept: str = "application/json") -> dict:
    request = urllib.request.Request(url, headers={"Accept": accept})
    with urllib.request.urlopen(request, timeout=10) as response:
        body: dict = json.loads(response.read())
        return body


def test_discovery_lists_categories_short_names_and_status_subresource(api: client.ApiClient) -> None:
    groups = client.ApisApi(api).get_api_versions()
    assert GROUP in [g.name for g in groups.groups]
    resources = {r.name: r for r in custom_objects(api).get_api_resources(GROUP, VERSION).resources}
    widgets = resources[PLURAL]
    assert (
        widgets.kind == "Widget"
        and widgets.namespaced
        and widgets.categories == ["testing"]
        and widgets.short_names == ["wd"]
    )
    assert set(widgets.verbs) >= {"get", "list", "watch", "create", "update", "patch", "delete"}
    assert resources[f"{PLURAL}/status"].verbs == ["get", "patch", "update"]
    core = {r.name for r in core_v1(api).get_api_resources().resources}
    assert {"namespaces", "secrets"} <= core


def test_table_output_uses_printer_columns(
    emulator: RunningEmulator, api: client.ApiClient, namespace: str
) -> None:
    crs = custom_objects(api)
    crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("t", size=4))
    crs.patch_namespaced_custom_object_status(
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        "t",
        {
            "status": {
                "conditions": [{"type": "Other", "status": "False"}, {"type": "Ready", "status": "True"}]
            }
        },
    )
    table = _get(
        f"{emulator.url}/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}",
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
    )
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Ready", "Size"]
    assert table["rows"][0]["cells"] == ["t", "True", 4]
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"


def test_openapi_v3_offers_field_validation_for_every_group_version(emulator: RunningEmulator) -> None:
    index = _get(f"{emulator.url}/openapi/v3")["paths"]
    assert {"api/v1", f"apis/{GROUP}/{VERSION}", "apis/apiextensions.k8s.io/v1"} <= set(index)
    doc = _get(emulator.url + index[f"apis/{GROUP}/{VERSION}"]["serverRelativeURL"])
    patch = doc["paths"][f"/apis/{GROUP}/{VERSION}/namespaces/{{namespace}}/{PLURAL}/{{name}}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": GROUP, "version": VERSION, "kind": "Widget"}
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
    assert "application/strategic-merge-patch+json" not in patch["requestBody"]["content"]


def test_state_file_survives_a_restart_and_old_watches_get_410(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    args = ["--state", str(state)]
    with (
        run_emulator(tmp_path / "one", crds_dirs=[FIXTURES / "crds"], extra_args=args) as first,
        first.api_client() as api,
    ):
        created = custom_objects(api).create_namespaced_custom_object(
            GROUP, VERSION, "default", PLURAL, widget("kept")
        )
    with (
        run_emulator(tmp_path / "two", crds_dirs=[FIXTURES / "crds"], extra_args=args) as second,
        second.api_client() as api,
    ):
        crs = custom_objects(api)
        kept = crs.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "kept")
        assert kept["metadata"]["uid"] == created["metadata"]["uid"]
        newer = crs.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("newer"))
        assert int(newer["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
        events = raw_watch(
            second.url,
            f"/apis/{GROUP}/{VERSION}/{PLURAL}",
            {"resourceVersion": str(int(created["metadata"]["resourceVersion"]) - 1)},
            count=2,
        )
        assert [e["type"] for e in events] == ["ERROR"] and events[0]["object"]["code"] == 410


def test_starts_serving_with_a_cel_ruled_crd_loaded(tmp_path: Path) -> None:
    """Process start to serving, the CEL-ruled test CRD loaded and discoverable. (How fast: the start-up
    phase of `python -m bench.kube_emulator`, a ratio against a baseline, never a timed test.)"""
    with run_emulator(tmp_path, crds_dirs=[FIXTURES / "crds"]) as running:
        assert _get(f"{running.url}/version")["major"] == "1"
        resources = _get(f"{running.url}/apis/{GROUP}/{VERSION}")["resources"]
        assert PLURAL in [r["name"] for r in resources]


def test_the_written_kubeconfig_loads_with_the_official_client(emulator: RunningEmulator) -> None:
    api = config.new_client_from_config(config_file=emulator.kubeconfig, context="osprov-dev")
    with api:
        assert api.configuration.host == emulator.url
        names = [n.metadata.name for n in client.CoreV1Api(api).list_namespace().items if n.metadata]
    assert {"default", "kube-system", "kube-public"} <= set(names)


def test_state_snapshots_are_spaced_by_what_the_last_one_cost() -> None:
    """A burst waits SAVE_DEBOUNCE_S; a snapshot that took 0.3 s (10,000 resources and their Events) is
    followed by the next no sooner than SAVE_SPACING times that, so persisting stays ~1/20 of the time."""
    assert save_delay(0.0) == SAVE_DEBOUNCE_S
    assert save_delay(0.3) == 0.3 * SAVE_SPACING
    assert save_delay(0.3) > 0.3 * 10
