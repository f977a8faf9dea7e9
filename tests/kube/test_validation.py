"""Validation like kube-apiserver's: ObjectMeta (names per kind, labels, annotations, finalizers), request
and object size limits, malformed query parameters and bodies (400, never 500), CRD patterns with RE2
semantics and int64 overflow."""

from __future__ import annotations

import base64
import sys
from typing import Any

import pytest
from kubernetes import client

from devenv.kube.testing import RunningEmulator

from .conftest import (
    GROUP,
    PLURAL,
    VERSION,
    core_v1,
    crd_body,
    custom_objects,
    raw_request,
    status_of,
    widget,
)

WIDGETS = f"/apis/{GROUP}/{VERSION}/namespaces/{{ns}}/{PLURAL}"


def create_widget(api: client.ApiClient, namespace: str, body: Any) -> tuple[int, Any]:
    return raw_request(api, "POST", WIDGETS.format(ns=namespace), body)


def causes(answer: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["field"], c["message"]) for c in answer["details"]["causes"]]


# ---------------------------------------------------------------------------------------------- metadata
@pytest.mark.parametrize(
    ("labels", "field_message"),
    [
        ({"bad key!": "x"}, "name part must consist of alphanumeric characters"),
        ({"-leading": "x"}, "name part must consist of alphanumeric characters"),
        ({"Example.COM/x": "x"}, "prefix part a lowercase RFC 1123 subdomain"),
        ({"a/b/c": "x"}, "a qualified name must consist of"),
        ({"k" * 64: "x"}, "name part must be no more than 63 characters"),
        ({"ok": "bad value!"}, "a valid label must be an empty string or consist of alphanumeric characters"),
        ({"ok": "v" * 64}, "must be no more than 63 characters"),
    ],
)
def test_invalid_labels_are_422(
    api: client.ApiClient, namespace: str, labels: dict[str, str], field_message: str
) -> None:
    body = widget("w")
    body["metadata"]["labels"] = labels
    code, answer = create_widget(api, namespace, body)
    assert code == 422 and answer["reason"] == "Invalid"
    assert any(f == "metadata.labels" and field_message in m for f, m in causes(answer)), answer


def test_valid_labels_and_annotations_pass(api: client.ApiClient, namespace: str) -> None:
    body = widget("w")
    body["metadata"]["labels"] = {"app.kubernetes.io/name": "osprov", "empty": "", "x_Y.z": "A-b_c.9"}
    body["metadata"]["annotations"] = {"Example.com/Anything": "any value at all\nwith newlines"}
    assert create_widget(api, namespace, body)[0] == 201


def test_invalid_annotation_keys_and_oversized_annotations_are_422(
    api: client.ApiClient, namespace: str
) -> None:
    body = widget("w")
    body["metadata"]["annotations"] = {"not valid/key/here": "x"}
    code, answer = create_widget(api, namespace, body)
    assert code == 422 and causes(answer)[0][0] == "metadata.annotations"
    body["metadata"]["annotations"] = {"big": "x" * (256 * 1024)}
    code, answer = create_widget(api, namespace, body)
    assert code == 422
    assert ("metadata.annotations", "Too long: may not be more than 262144 bytes") in causes(answer)


def test_finalizer_names(api: client.ApiClient, namespace: str) -> None:
    body = widget("w")
    body["metadata"]["finalizers"] = ["bad finalizer!"]
    code, answer = create_widget(api, namespace, body)
    assert code == 422 and causes(answer)[0][0] == "metadata.finalizers"
    # Custom resources accept an unqualified name with a warning; built-in kinds refuse it.
    response = api.call_api(
        "POST",
        api.configuration.host + WIDGETS.format(ns=namespace),
        {"Content-Type": "application/json"},
        {**widget("w2"), "metadata": {"name": "w2", "finalizers": ["cleanup"]}},
    )
    response.read()
    assert response.status == 201
    assert "prefer a domain-qualified finalizer name" in (response.getheader("Warning") or "")
    with pytest.raises(client.ApiException) as exc:
        core_v1(api).create_namespaced_secret(
            namespace, {"metadata": {"name": "s", "finalizers": ["cleanup"]}}
        )
    assert exc.value.status == 422
    assert (
        "name is neither a standard finalizer name nor is it fully qualified"
        in status_of(exc.value)["message"]
    )
    secret = core_v1(api).create_namespaced_secret(
        namespace, {"metadata": {"name": "s", "finalizers": ["osprov.dev/cleanup", "foregroundDeletion"]}}
    )
    assert secret.metadata.finalizers == ["osprov.dev/cleanup", "foregroundDeletion"]


@pytest.mark.parametrize(
    ("path", "body", "code"),
    [
        # Numeric names are valid DNS-1123 subdomains/labels: fine for custom resources, Secrets, namespaces.
        (WIDGETS, {**widget("w"), "metadata": {"name": "123"}}, 201),
        ("/api/v1/namespaces/{ns}/secrets", {"metadata": {"name": "123"}}, 201),
        ("/api/v1/namespaces", {"metadata": {"name": "4567"}}, 201),
        # Services need a DNS-1035 label (a letter first).
        (
            "/api/v1/namespaces/{ns}/services",
            {"metadata": {"name": "123"}, "spec": {"ports": [{"port": 80}]}},
            422,
        ),
        (WIDGETS, {**widget("w"), "metadata": {"name": "Bad_Name"}}, 422),
        ("/api/v1/namespaces/{ns}/secrets", {"metadata": {"name": "x" * 254}}, 422),
        ("/api/v1/namespaces", {"metadata": {"name": "a.b"}}, 422),
        # RBAC names are path segments: colons and capitals are fine.
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            {"metadata": {"name": "system:Osprov-{ns}"}, "rules": []},
            201,
        ),
        # A name of the wrong JSON type: the decoder's 400 (built-in) or a dropped field (custom resource).
        ("/api/v1/namespaces/{ns}/secrets", {"metadata": {"name": 123}}, 400),
        (WIDGETS, {**widget("x"), "metadata": {"name": 123}}, 422),
    ],
)
def test_names_per_kind_never_500(
    api: client.ApiClient, namespace: str, path: str, body: Any, code: int
) -> None:
    if isinstance(body["metadata"]["name"], str):
        body = {
            **body,
            "metadata": {**body["metadata"], "name": body["metadata"]["name"].replace("{ns}", namespace)},
        }
    got, answer = raw_request(api, "POST", path.format(ns=namespace), body)
    assert got == code, answer
    if code >= 400:
        assert answer["kind"] == "Status" and answer["code"] == code


# ------------------------------------------------------------------------------------------------- sizes
def test_request_bodies_over_3_mib_are_413(api: client.ApiClient, namespace: str) -> None:
    body = widget("big")
    body["spec"]["extra"] = {"blob": "x" * (3 * 1024 * 1024)}
    code, answer = create_widget(api, namespace, body)
    assert code == 413 and answer["reason"] == "RequestEntityTooLarge"
    assert answer["message"] == "Request entity too large: limit is 3145728"


def test_objects_over_etcds_limit_are_refused(api: client.ApiClient, namespace: str) -> None:
    body = widget("big")
    body["spec"]["extra"] = {"blob": "x" * (2 * 1024 * 1024)}  # under the request limit, over etcd's 1.5 MiB
    code, answer = create_widget(api, namespace, body)
    assert code == 413 and "request is too large" in answer["message"]
    assert custom_objects(api).list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)["items"] == []


def test_secrets_over_1_mib_are_422(api: client.ApiClient, namespace: str) -> None:
    data = {"blob": base64.b64encode(b"x" * (1024 * 1024 + 1)).decode()}
    with pytest.raises(client.ApiException) as exc:
        core_v1(api).create_namespaced_secret(namespace, {"metadata": {"name": "big"}, "data": data})
    assert exc.value.status == 422
    assert "data: Too long: may not be more than 1048576 bytes" in status_of(exc.value)["message"]
    data = {"blob": base64.b64encode(b"x" * (1024 * 1024 - 64)).decode()}
    core_v1(api).create_namespaced_secret(namespace, {"metadata": {"name": "fits"}, "data": data})


# ------------------------------------------------------------------------------- malformed requests
@pytest.mark.parametrize(
    "query",
    [
        "limit=abc",
        "watch=true&timeoutSeconds=abc",
        "watch=maybe",
        "watch=true&allowWatchBookmarks=perhaps",
        "continue=not-base64!!",
        "continue=" + base64.urlsafe_b64encode(b'{"v":"meta.k8s.io/v1","rv":0,"start":"x"}').decode(),
        "continue=" + base64.urlsafe_b64encode(b'{"v":"v9","rv":3,"start":"x"}').decode(),
        "fieldSelector=spec.size=1",
        "fieldSelector=metadata.name",
        "resourceVersion=abc&resourceVersionMatch=Exact",
        "labelSelector=(((",
    ],
)
def test_bad_query_parameters_are_400(api: client.ApiClient, namespace: str, query: str) -> None:
    code, answer = raw_request(api, "GET", WIDGETS.format(ns=namespace) + "?" + query)
    assert code == 400 and answer["kind"] == "Status" and answer["reason"] == "BadRequest", answer


@pytest.mark.parametrize(
    ("method", "query", "code"),
    [
        ("POST", "dryRun=Bogus", 422),
        ("POST", "fieldValidation=Bogus", 400),
        ("DELETE", "propagationPolicy=Sideways", 422),
        ("DELETE", "gracePeriodSeconds=soon", 400),
        ("GET", "resourceVersionMatch=Exact", 422),
    ],
)
def test_bad_write_options_are_client_errors(
    api: client.ApiClient, namespace: str, method: str, query: str, code: int
) -> None:
    got, answer = raw_request(
        api, method, WIDGETS.format(ns=namespace) + "?" + query, widget("w") if method == "POST" else None
    )
    assert got == code and answer["kind"] == "Status", answer


def _nested(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = {"n": value}
    return value


def test_deeply_nested_json_is_400(api: client.ApiClient, namespace: str) -> None:
    body = widget("deep")
    body["spec"]["extra"] = _nested(1200)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10000)  # the client's json.dumps recurses once per level too
    try:
        code, answer = create_widget(api, namespace, body)
    finally:
        sys.setrecursionlimit(limit)
    assert code == 400 and "exceeded max depth" in answer["message"]
    body["spec"]["extra"] = _nested(100)
    assert create_widget(api, namespace, body)[0] == 201


@pytest.mark.parametrize(
    "body",
    [
        [],
        "a string",
        {"metadata": "not an object", "spec": {"name": "x"}},
        {"metadata": {"name": "x", "labels": ["a", "b"]}, "spec": {"name": "x"}},
        {"metadata": {"name": "x", "labels": {"a": 1}}, "spec": {"name": "x"}},
        {"metadata": {"name": "x", "finalizers": "one"}, "spec": {"name": "x"}},
        {"metadata": {"name": "x", "ownerReferences": [{"uid": 1}]}, "spec": {"name": "x"}},
        {"metadata": {"name": "x", "managedFields": "junk"}, "spec": {"name": "x"}},
        {"metadata": {"name": "x"}, "spec": "not an object"},
        {"metadata": {"name": "x"}, "spec": {"name": "x", "ports": [{"port": 1}]}},
        {"metadata": {"name": "x"}, "spec": {"name": "x", "ports": "x"}},
    ],
)
def test_malformed_bodies_never_answer_500(api: client.ApiClient, namespace: str, body: Any) -> None:
    code, answer = create_widget(api, namespace, body)
    assert code < 500 and (code in (200, 201) or answer["kind"] == "Status"), answer
    code, answer = raw_request(api, "POST", f"/api/v1/namespaces/{namespace}/secrets", body)
    assert code < 500, answer


# ------------------------------------------------------------------------------------ CRD schemas
def test_patterns_have_re2_semantics(api: client.ApiClient, namespace: str) -> None:
    code, answer = create_widget(api, namespace, widget("abc\n"))  # metadata.name is checked too...
    assert code == 422
    body = widget("ok")
    body["spec"]["name"] = "abc\n"  # ...and so is the schema's ^[a-z][a-z0-9-]*$ pattern
    code, answer = create_widget(api, namespace, body)
    assert code == 422 and (
        "spec.name",
        "Invalid value: \"abc\\n\": spec.name in body should match '^[a-z][a-z0-9-]*$'",
    ) in causes(answer)
    body["spec"]["name"] = "abc"
    assert create_widget(api, namespace, body)[0] == 201


def test_a_crd_with_a_pattern_re2_cannot_compile_is_422(api: client.ApiClient) -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {"v": {"type": "string", "pattern": "^(?=a)b"}}}
        },
    }
    crd = crd_body("Lookaround", "lookarounds", "Namespaced", schema)
    code, answer = raw_request(api, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert code == 422 and "must be a valid regular expression" in answer["message"], answer


def test_int64_overflow_is_422_not_500(api: client.ApiClient, namespace: str) -> None:
    code, answer = create_widget(api, namespace, widget("w", size=2**63))  # JSON carries it digit for digit
    assert code == 422
    assert (
        "spec.size",
        'Invalid value: "number": spec.size in body must be of type integer: "number"',
    ) in causes(answer)


def test_kubectl_reports_invalid_labels_like_a_cluster(emulator: RunningEmulator, namespace: str) -> None:
    from .test_kubectl import run_kubectl

    result = run_kubectl(emulator, "label", "namespace", namespace, "bad key!=x")
    assert result.returncode != 0 and "metadata.labels" in result.stderr and "Invalid value" in result.stderr
