"""Built-in kinds served as stored objects (Leases, Events, ConfigMaps, ServiceAccounts, Services, RBAC,
Deployments, PodDisruptionBudgets), through the official client and kubectl."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client

from devenv.kube.testing import RunningEmulator

from .conftest import GROUP, PLURAL, VERSION, api_of, core_v1, custom_objects, raw_request, status_of, widget
from .test_kubectl import kubectl

MICRO = "%Y-%m-%dT%H:%M:%S.%fZ"


def micro_now() -> str:
    """A MicroTime string: exactly six fractional digits, as the apiserver's Go decoder requires."""
    return datetime.now(UTC).strftime(MICRO)


def old_style_event(
    name: str, about: dict[str, str], reason: str, message: str, count: int
) -> dict[str, Any]:
    """A core/v1 Event as client-go's legacy recorder writes it."""
    return {
        "metadata": {"name": name},
        "involvedObject": about,
        "reason": reason,
        "message": message,
        "type": "Normal",
        "source": {"component": "osprov-worker"},
        "firstTimestamp": "2026-01-01T00:00:00Z",
        "lastTimestamp": "2026-01-01T00:00:05Z",
        "count": count,
    }


def new_style_event(name: str, about: dict[str, str], reason: str, note: str) -> dict[str, Any]:
    """An events.k8s.io/v1 Event as client-go's new recorder writes it."""
    return {
        "metadata": {"name": name},
        "regarding": about,
        "reason": reason,
        "note": note,
        "type": "Warning",
        "action": "Reconcile",
        "reportingController": "osprov.dev/worker",
        "reportingInstance": "worker-0",
        "eventTime": micro_now(),
    }


def test_discovery_lists_the_built_in_kinds_with_their_scope_verbs_and_short_names(
    api: client.ApiClient,
) -> None:
    def resources(group_version: str) -> dict[str, Any]:
        path = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
        return {r["name"]: r for r in raw_request(api, "GET", path)[1]["resources"]}

    core = resources("v1")
    assert core["configmaps"]["shortNames"] == ["cm"] and core["configmaps"]["namespaced"]
    assert core["serviceaccounts"]["shortNames"] == ["sa"]
    assert core["services"]["shortNames"] == ["svc"] and core["services"]["categories"] == ["all"]
    assert core["events"]["shortNames"] == ["ev"] and core["events"]["kind"] == "Event"
    assert "deletecollection" not in core["namespaces"]["verbs"] and not core["namespaces"]["namespaced"]
    assert resources("coordination.k8s.io/v1")["leases"]["namespaced"]
    rbac = resources("rbac.authorization.k8s.io/v1")
    assert rbac["roles"]["namespaced"] and rbac["rolebindings"]["namespaced"]
    assert not rbac["clusterroles"]["namespaced"] and not rbac["clusterrolebindings"]["namespaced"]
    apps = resources("apps/v1")
    assert apps["deployments"]["shortNames"] == ["deploy"] and "deployments/status" in apps
    assert resources("policy/v1")["poddisruptionbudgets"]["shortNames"] == ["pdb"]
    assert resources("events.k8s.io/v1")["events"]["kind"] == "Event"


def test_leases_support_leader_election_with_optimistic_concurrency(
    api: client.ApiClient, namespace: str
) -> None:
    leases = api_of(client.CoordinationV1Api, api)
    spec = {
        "holderIdentity": "bridge-a",
        "leaseDurationSeconds": 15,
        "acquireTime": micro_now(),
        "renewTime": micro_now(),
    }
    created = leases.create_namespaced_lease(namespace, {"metadata": {"name": "osprov-bridge"}, "spec": spec})
    assert created.spec.holder_identity == "bridge-a" and created.spec.lease_duration_seconds == 15
    with pytest.raises(client.ApiException) as exc:
        leases.create_namespaced_lease(namespace, {"metadata": {"name": "osprov-bridge"}, "spec": spec})
    assert exc.value.status == 409 and status_of(exc.value)["reason"] == "AlreadyExists"
    # Two candidates renew from the same read: the second one's write is refused.
    first, second = (leases.read_namespaced_lease("osprov-bridge", namespace) for _ in range(2))
    first.spec.renew_time = datetime.now(UTC).replace(microsecond=123456)
    leases.replace_namespaced_lease("osprov-bridge", namespace, first)
    second.spec.holder_identity = "bridge-b"
    with pytest.raises(client.ApiException) as exc:
        leases.replace_namespaced_lease("osprov-bridge", namespace, second)
    assert exc.value.status == 409 and status_of(exc.value)["reason"] == "Conflict"
    stored = leases.read_namespaced_lease("osprov-bridge", namespace)
    assert stored.spec.holder_identity == "bridge-a" and stored.spec.renew_time.microsecond == 123456


def test_lease_times_are_micro_times_and_the_spec_is_validated(api: client.ApiClient, namespace: str) -> None:
    leases = api_of(client.CoordinationV1Api, api)
    path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"

    def post(spec: dict[str, Any]) -> tuple[int, Any]:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"generateName": "l-"},
            "spec": spec,
        }
        return raw_request(api, "POST", path, body)

    # Go's MicroTime layout needs exactly six fractional digits (Python's isoformat drops them at .0).
    code, answer = post({"renewTime": "2026-01-01T00:00:00+00:00"})
    assert code == 400 and "cannot be handled as a Lease" in answer["message"]
    code, answer = post({"renewTime": "2026-01-01T01:00:00.500000+01:00"})
    assert code == 201 and answer["spec"]["renewTime"] == "2026-01-01T00:00:00.500000Z"
    code, answer = post({"leaseDurationSeconds": "15"})
    assert code == 400 and "cannot unmarshal string" in answer["message"]
    code, answer = post({"leaseDurationSeconds": 0})
    assert code == 422 and answer["details"]["causes"][0]["field"] == "spec.leaseDurationSeconds"
    assert leases.list_namespaced_lease(namespace).items[0].spec.renew_time.year == 2026


def test_core_and_events_k8s_io_events_are_two_views_of_one_store(
    api: client.ApiClient, namespace: str
) -> None:
    core = core_v1(api)
    events_v1 = api_of(client.EventsV1Api, api)
    about = {"kind": "Widget", "name": "w", "namespace": namespace, "uid": "uid-w"}
    core.create_namespaced_event(namespace, old_style_event("old-style", about, "Created", "made it", 3))
    events_v1.create_namespaced_event(namespace, new_style_event("new-style", about, "Failed", "went wrong"))
    # Read through the other API: the fields are renamed the way kube-apiserver converts them.
    raw = events_v1.list_namespaced_event(namespace, _preload_content=False)
    as_v1 = {e["metadata"]["name"]: e for e in json.loads(raw.data)["items"]}
    old = as_v1["old-style"]
    assert (
        old["apiVersion"] == "events.k8s.io/v1" and old["note"] == "made it" and old["deprecatedCount"] == 3
    )
    assert old["regarding"]["uid"] == "uid-w" and old["deprecatedSource"] == {"component": "osprov-worker"}
    assert old["deprecatedLastTimestamp"] == "2026-01-01T00:00:05Z" and old["eventTime"] is None
    assert "message" not in old and "involvedObject" not in old
    as_core = {e.metadata.name: e for e in core.list_namespaced_event(namespace).items}
    new = as_core["new-style"]
    assert new.message == "went wrong" and new.involved_object.name == "w"
    assert new.reporting_component == "osprov.dev/worker" and new.reporting_instance == "worker-0"
    # Field selectors, as kubectl describe uses them, through both APIs.
    selector = f"involvedObject.kind=Widget,involvedObject.name=w,involvedObject.namespace={namespace},involvedObject.uid=uid-w"
    assert {
        e.metadata.name for e in core.list_namespaced_event(namespace, field_selector=selector).items
    } == {
        "old-style",
        "new-style",
    }
    only_new = core.list_namespaced_event(
        namespace, field_selector="reportingComponent=osprov.dev/worker"
    ).items
    assert [e.metadata.name for e in only_new] == ["new-style"]
    raw = events_v1.list_namespaced_event(
        namespace,
        field_selector="regarding.name=w,reportingController=osprov.dev/worker",
        _preload_content=False,
    )
    assert [e["metadata"]["name"] for e in json.loads(raw.data)["items"]] == ["new-style"]
    with pytest.raises(client.ApiException) as exc:
        core.list_namespaced_event(namespace, field_selector="regarding.name=w")
    assert exc.value.status == 400 and "field label not supported" in status_of(exc.value)["message"]


def test_events_k8s_io_validates_new_style_events(api: client.ApiClient, namespace: str) -> None:
    path = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
    regarding = {"kind": "Widget", "name": "w", "namespace": namespace}
    code, answer = raw_request(
        api, "POST", path, {"metadata": {"name": "a"}, "regarding": regarding, "type": "Odd"}
    )
    assert code == 422 and {c["field"] for c in answer["details"]["causes"]} == {"eventTime", "type"}
    body = {"metadata": {"name": "b"}, "regarding": regarding, "type": "Normal", "eventTime": micro_now()}
    code, answer = raw_request(api, "POST", path, body)
    assert code == 422
    assert {c["field"] for c in answer["details"]["causes"]} == {
        "reason",
        "action",
        "reportingController",
        "reportingInstance",
    }


def test_kubectl_shows_events_in_get_events_and_describe(
    emulator: RunningEmulator, api: client.ApiClient
) -> None:
    namespace = "described"
    core_v1(api).create_namespace({"metadata": {"name": namespace}})
    created = custom_objects(api).create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, widget("shown")
    )
    uid = created["metadata"]["uid"]
    about = {
        "kind": "Widget",
        "name": "shown",
        "namespace": namespace,
        "uid": uid,
        "apiVersion": f"{GROUP}/{VERSION}",
    }
    old = old_style_event("shown.1", about, "Provisioned", "keystone project created", 1)
    core_v1(api).create_namespaced_event(namespace, old)
    new = new_style_event("shown.2", about, "Degraded", "keystone is slow")
    api_of(client.EventsV1Api, api).create_namespaced_event(namespace, new)
    listed = kubectl(emulator, "get", "events", "-n", namespace)
    assert listed.splitlines()[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert "widget/shown   keystone project created" in listed and "keystone is slow" in listed
    recent = kubectl(emulator, "events", "-n", namespace, "--for", "widget/shown")
    assert "Provisioned" in recent and "Degraded" in recent
    described = kubectl(emulator, "describe", "widget", "shown", "-n", namespace)
    events_section = described.split("Events:", 1)[1]
    assert "Provisioned" in events_section and "keystone project created" in events_section
    assert "Degraded" in events_section and "osprov.dev/worker" in events_section


def test_other_built_ins_are_stored_with_defaults_and_validation(
    api: client.ApiClient, namespace: str
) -> None:
    core = core_v1(api)
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "settings"}, "data": {"A": "1"}})
    assert core.read_namespaced_config_map("settings", namespace).data == {"A": "1"}
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "runner"}})
    service = core.create_namespaced_service(
        namespace,
        {"metadata": {"name": "metrics"}, "spec": {"selector": {"app": "x"}, "ports": [{"port": 9464}]}},
    )
    assert service.spec.type == "ClusterIP" and service.spec.cluster_ip.startswith("10.")
    assert service.spec.ports[0].protocol == "TCP" and service.spec.ports[0].target_port == 9464
    with pytest.raises(client.ApiException) as exc:
        core.create_namespaced_service(
            namespace, {"metadata": {"name": "9lives"}, "spec": {"ports": [{"port": 80}]}}
        )
    assert exc.value.status == 422 and "DNS-1035 label" in status_of(exc.value)["message"]
    rbac = api_of(client.RbacAuthorizationV1Api, api)
    rbac.create_namespaced_role(
        namespace,
        {
            "metadata": {"name": "reader"},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}],
        },
    )
    binding: dict[str, Any] = {
        "metadata": {"name": "reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "runner"}],
    }
    rbac.create_namespaced_role_binding(namespace, binding)
    binding["roleRef"]["name"] = "writer"
    binding["metadata"]["resourceVersion"] = rbac.read_namespaced_role_binding(
        "reader", namespace
    ).metadata.resource_version
    with pytest.raises(client.ApiException) as exc:
        rbac.replace_namespaced_role_binding("reader", namespace, binding)
    assert exc.value.status == 422 and "cannot change roleRef" in status_of(exc.value)["message"]
    rbac.create_cluster_role(
        {
            "metadata": {"name": f"{namespace}-viewer"},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        }
    )
    apps = api_of(client.AppsV1Api, api)
    labels = {"app": "worker"}
    deployment: dict[str, Any] = {
        "metadata": {"name": "worker"},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "w", "image": "img:1"}]},
            },
        },
    }
    created = apps.create_namespaced_deployment(namespace, deployment)
    assert (
        created.spec.replicas == 1
        and created.spec.strategy.type == "RollingUpdate"
        and created.metadata.generation == 1
    )
    deployment["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    deployment["metadata"]["name"] = "mismatched"
    with pytest.raises(client.ApiException) as exc:
        apps.create_namespaced_deployment(namespace, deployment)
    assert (
        exc.value.status == 422
        and "`selector` does not match template `labels`" in status_of(exc.value)["message"]
    )
    policy = api_of(client.PolicyV1Api, api)
    policy.create_namespaced_pod_disruption_budget(
        namespace,
        {"metadata": {"name": "worker"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}}},
    )
    assert policy.read_namespaced_pod_disruption_budget("worker", namespace).spec.min_available == 1
