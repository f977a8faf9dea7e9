"""The generated CRDs in the project's Kubernetes API emulator, driven by kubectl as a user would.

Every example applies; each admission rule rejects the change it is for with its message; printer columns
show what the status subresource holds.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from devenv.kube.testing import RunningEmulator, run_emulator
from osprov.api import crdgen

REPO = Path(__file__).resolve().parents[2]
KUBECTL = REPO / ".venv" / "bin" / "kubectl"
NS = "api-tests"


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningEmulator]:
    with run_emulator(tmp_path_factory.mktemp("kube"), crds_dirs=[crdgen.DEFAULT_OUT]) as running:
        yield running


def kubectl(
    emulator: RunningEmulator, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KUBECTL), "--kubeconfig", emulator.kubeconfig, *args],
        env={**os.environ, "KUBECACHEDIR": emulator.kubectl_cache_dir},
        capture_output=True,
        text=True,
        input=stdin,
        timeout=60,
    )


@pytest.fixture(scope="module")
def applied(emulator: RunningEmulator) -> RunningEmulator:
    namespace = f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {NS}\n"
    assert kubectl(emulator, "apply", "-f", "-", stdin=namespace).returncode == 0
    for path in sorted((REPO / "examples").rglob("*.yaml")):
        result = kubectl(emulator, "apply", "-n", NS, "-f", str(path))
        assert result.returncode == 0, f"{path}: {result.stderr}"
    return emulator


def test_every_kind_is_listed_by_its_category(applied: RunningEmulator) -> None:
    result = kubectl(applied, "get", "osprov", "-n", NS, "-o", "json")
    assert result.returncode == 0, result.stderr
    kinds = {item["kind"] for item in json.loads(result.stdout)["items"]}
    assert kinds == {"Domain", "Project", "Role", "User", "RoleAssignment", "Service", "Endpoint"} | {
        "Volume",
        "LoadBalancer",
        "Server",
        "Identity",  # examples/neutron/network.yaml's
        "Network",
        "SecurityGroup",
    }


def test_defaults_are_applied(applied: RunningEmulator) -> None:
    result = kubectl(applied, "get", "loadbalancer", "demo-lb", "-n", NS, "-o", "jsonpath={.spec}")
    spec = json.loads(result.stdout)
    assert spec["deletionPolicy"] == "retain"
    assert spec["listeners"][1]["pool"]["proxyProtocolV2"] is False


@pytest.mark.parametrize(
    ("resource", "patch_type", "patch", "message"),
    [
        ("volume/demo-data", "merge", {"spec": {"volumeClassID": "t-2"}}, "spec.volumeClassID cannot change"),
        (
            "server/demo-server",
            "merge",
            {"spec": {"networks": [{"networkID": "other"}]}},
            "spec.networks cannot change",
        ),
        (
            "roleassignments.keystone.osh.openstack.org/cinder-cinder-admin",
            "merge",
            {"spec": {"group": {"name": "admins", "domain": "service"}}},
            "set exactly one subject: spec.user or spec.group",
        ),
        (
            "roleassignments.keystone.osh.openstack.org/cinder-cinder-admin",
            "merge",
            {"spec": {"domain": {"name": "service"}}},
            "set exactly one scope",
        ),
        (
            "endpoints.keystone.osh.openstack.org/cinder-volumev3",
            "merge",
            {"spec": {"urls": {"publik": "http://cinder/v3"}}},
            "spec.urls keys must be admin, internal or public",
        ),
        ("domain/cinder-service", "merge", {"spec": {"retryInterval": "90"}}, "spec.retryInterval"),
        ("domain/cinder-service", "merge", {"spec": {"retryInterval": "10ms"}}, "at least 1s"),
        (
            "loadbalancer/demo-lb",
            "json",
            [{"op": "replace", "path": "/spec/listeners/0/port", "value": 81}],
            "the protocol and port of an existing listener cannot change",
        ),
        (
            "loadbalancer/demo-lb",
            "json",
            [{"op": "replace", "path": "/spec/listeners/0/pool/proxyProtocolV2", "value": True}],
            "pool.proxyProtocolV2 of an existing listener cannot change",
        ),
        (
            "loadbalancer/demo-lb",
            "json",
            [{"op": "add", "path": "/spec/listeners/1/idleTimeoutSeconds", "value": 30}],
            "UDP listeners take no idleTimeoutSeconds",
        ),
        (
            "domain/cinder-service",
            "merge",
            {"spec": {"name": "admin"}},
            'spec.name: Invalid value: "string": spec.name is immutable: create a new resource',
        ),
        (
            "endpoints.keystone.osh.openstack.org/cinder-volumev3",
            "merge",
            {"spec": {"region": "RegionTwo"}},
            'spec.region: Invalid value: "string": spec.region is immutable',
        ),
        (
            "server/demo-server",
            "merge",
            {"spec": {"keypair": "late"}},
            'spec.keypair: Invalid value: "object": spec.keypair cannot change',
        ),
        (
            "loadbalancer/demo-lb",
            "merge",
            {"spec": {"vipNetworkID": "elsewhere"}},
            "spec.vipNetworkID cannot change: Octavia cannot move a VIP",
        ),
    ],
)
def test_admission_rejects_with_a_clear_message(
    applied: RunningEmulator, resource: str, patch_type: str, patch: object, message: str
) -> None:
    result = kubectl(applied, "patch", "-n", NS, resource, f"--type={patch_type}", "-p", json.dumps(patch))
    assert result.returncode != 0 and message in result.stderr, result.stderr


BAD_ENDPOINT = """
apiVersion: keystone.osh.openstack.org/v1alpha1
kind: Endpoint
metadata:
  name: bad-endpoint
spec:
  service:
    name: cinderv3
    type: Volume V3
  region: a/../../users
  urls:
    public: http://admin:secret@cinder.example/v3
"""


def test_kubectl_apply_names_every_bad_field_and_why(applied: RunningEmulator) -> None:
    """What a user sees: kubectl prints one line per rejected field, in the apiserver's usual format."""
    result = kubectl(applied, "apply", "-n", NS, "-f", "-", stdin=BAD_ENDPOINT)
    assert result.returncode != 0
    assert 'The Endpoint "bad-endpoint" is invalid' in result.stderr
    assert 'spec.region: Invalid value: "a/../../users": spec.region in body should match' in result.stderr
    assert (
        'spec.service.type: Invalid value: "Volume V3": spec.service.type in body should match'
        in result.stderr
    )
    assert "spec.urls.public: Invalid value: " in result.stderr  # user:password@ in the authority
    assert (
        kubectl(applied, "get", "-n", NS, "endpoints.keystone.osh.openstack.org/bad-endpoint").returncode != 0
    )


def test_allowed_changes_are_accepted(applied: RunningEmulator) -> None:
    rename = [
        {"op": "replace", "path": "/spec/listeners/0/name", "value": "web"},
        {"op": "replace", "path": "/spec/listeners/0/port", "value": 8080},
    ]
    result = kubectl(
        applied, "patch", "-n", NS, "loadbalancer/demo-lb", "--type=json", "-p", json.dumps(rename)
    )
    assert result.returncode == 0, result.stderr
    rebuild = {"spec": {"imageID": "another-image"}}
    result = kubectl(
        applied, "patch", "-n", NS, "server/demo-server", "--type=merge", "-p", json.dumps(rebuild)
    )
    assert result.returncode == 0, result.stderr


def test_printer_columns_show_ready_reason_and_id(applied: RunningEmulator) -> None:
    status = {
        "status": {
            "observedGeneration": 1,
            "domainID": "d0c0ffee",
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "Reconciled",
                    "message": "created domain service",
                    "lastTransitionTime": "2026-08-24T19:20:00Z",
                    "observedGeneration": 1,
                }
            ],
        }
    }
    result = kubectl(
        applied,
        "patch",
        "-n",
        NS,
        "domain/heat-service",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(status),
    )
    assert result.returncode == 0, result.stderr
    table = kubectl(applied, "get", "-n", NS, "domain/heat-service").stdout.splitlines()
    assert table[0].split() == ["NAME", "READY", "REASON", "ID", "AGE"]
    assert table[1].split()[:4] == ["heat-service", "True", "Reconciled", "d0c0ffee"]
