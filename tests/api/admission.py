"""Shared by the admission tests: one valid spec per kind, the kube emulator with the generated CRDs, and the
three ways a spec is judged (the pydantic model, the CRD schema checked offline, the emulator via the official
client), each answering with the Kubernetes field path it names and its message.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path as FilePath
from typing import Any

from kubernetes import client
from pydantic import ValidationError

from devenv.kube.testing import run_emulator
from osprov.api import crdgen
from osprov.api.registry import kind_info

PROJECT = {"name": "service", "domain": "service"}
LISTENER = {
    "name": "web",
    "protocol": "TCP",
    "port": 80,
    "allowedCIDRs": ["10.0.0.0/8"],
    "pool": {"members": [{"address": "10.0.0.11", "port": 8080}]},
}
VALID: dict[str, dict[str, Any]] = {
    "Domain": {"name": "service", "description": "Domain for service"},
    "Project": {"name": "service", "domain": "service", "description": "Service Project for service"},
    "Role": {"name": "member", "domain": "service"},
    "Group": {"name": "admins", "domain": "service", "description": "a group"},
    "User": {
        "name": "cinder",
        "domain": "service",
        "description": "Service User for RegionOne/service/cinder",
        "email": "cinder@example.org",
        "passwordSecret": {"name": "cinder-keystone-user"},
    },
    "Service": {
        "name": "cinderv3",
        "type": "volumev3",
        "description": "RegionOne: cinder (volumev3) service",
    },
    "Endpoint": {
        "service": {"name": "cinderv3", "type": "volumev3"},
        "region": "RegionOne",
        "urls": {
            "admin": "http://cinder-api.openstack.svc.cluster.local:8776/v3",
            "public": "http://nova.openstack.svc.cluster.local/v2.1/%(tenant_id)s",
        },
    },
    "RoleAssignment": {
        "role": {"name": "admin"},
        "user": {"name": "cinder", "domain": "service"},
        "project": PROJECT,
    },
    "Volume": {"project": PROJECT, "size": 1, "volumeClassID": "t-1", "tags": {"app": "demo"}},
    "Server": {
        "project": PROJECT,
        "flavor": "m1.tiny",
        "imageID": "img-1",
        "keypair": "demo key",
        "userData": "#cloud-config\n",
        "tags": {"app": "demo"},
    },
    "LoadBalancer": {
        "project": PROJECT,
        "vipNetworkID": "net-1",
        "vipSubnetID": "subnet-1",
        "vipAddress": "10.0.0.10",
        "listeners": [LISTENER],
    },
    "Identity": {},  # every field has a default
}

Path = Sequence[str | int]


def with_value(kind: str, path: Path, value: Any) -> dict[str, Any]:
    """The valid spec of `kind` with `value` at `path` (a missing last key is added)."""
    spec = copy.deepcopy(VALID[kind])
    node: Any = spec
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return spec


def without(kind: str, key: str) -> dict[str, Any]:
    spec = copy.deepcopy(VALID[kind])
    del spec[key]
    return spec


def k8s_field(loc: Sequence[str | int]) -> str:
    """A pydantic error location written the way the apiserver names fields: spec.a.b[0].c"""
    path = "spec"
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part != "[key]":
            path += f".{part}"
    return path


def _by_field(pairs: list[tuple[str, str]]) -> dict[str, str]:
    """Field → its messages, joined with " | " (one field may break several rules)."""
    out: dict[str, str] = {}
    for field, message in pairs:
        out[field] = f"{out[field]} | {message}" if field in out else message
    return out


def model_errors(kind: str, spec: dict[str, Any]) -> dict[str, str]:
    """Field → messages of everything the kind's pydantic model rejects in `spec` ({} when it is valid)."""
    try:
        kind_info(kind).spec_model.model_validate(spec)
    except ValidationError as err:
        return _by_field([(k8s_field(e["loc"]), e["msg"]) for e in err.errors(include_url=False)])
    return {}


@contextmanager
def emulator_with(state_dir: FilePath, namespace: str) -> Iterator[client.ApiClient]:
    """The kube emulator serving the generated CRDs, with `namespace` created; its official API client."""
    with run_emulator(state_dir, crds_dirs=[crdgen.DEFAULT_OUT]) as running, running.api_client() as api:
        core: Any = client.CoreV1Api(api)  # typed Any: the apiserver takes a plain dict body
        core.create_namespace({"metadata": {"name": namespace}})
        yield api


def body(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    info = kind_info(kind)
    return {"apiVersion": info.api_version, "kind": kind, "metadata": {"name": name}, "spec": spec}


def custom(api: client.ApiClient) -> Any:
    return client.CustomObjectsApi(api)


def create(
    api: client.ApiClient, namespace: str, kind: str, name: str, spec: dict[str, Any], dry: bool
) -> None:
    info = kind_info(kind)
    custom(api).create_namespaced_custom_object(
        info.group,
        info.version,
        namespace,
        info.plural,
        body(kind, name, spec),
        **({"dry_run": "All"} if dry else {}),
    )


def replace_spec(api: client.ApiClient, namespace: str, kind: str, name: str, spec: dict[str, Any]) -> None:
    """An update that sets the whole spec (a JSON patch: removed optional fields are really removed)."""
    info = kind_info(kind)
    custom(api).patch_namespaced_custom_object(
        info.group,
        info.version,
        namespace,
        info.plural,
        name,
        [{"op": "replace", "path": "/spec", "value": spec}],
        _content_type="application/json-patch+json",
    )


def rejection(err: client.ApiException) -> dict[str, str]:
    """Field → messages of a 422 Invalid answer (metav1.Status causes)."""
    status = json.loads(err.body or "{}")
    assert err.status == 422 and status["reason"] == "Invalid", status
    return _by_field([(c["field"], c["message"]) for c in status["details"]["causes"]])
