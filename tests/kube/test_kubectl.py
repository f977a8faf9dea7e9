"""The real kubectl (.venv/bin/kubectl) against the emulator: the commands docs/kube-emulator.md shows."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from devenv.kube.testing import RunningEmulator, run_emulator

from .conftest import FIXTURES

KUBECTL = str(Path(sys.executable).parent / "kubectl")
REPO = Path(__file__).resolve().parents[2]
READY = '{"status":{"conditions":[{"type":"Ready","status":"True","reason":"Reconciled","message":"ok","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}'


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningEmulator]:
    with run_emulator(tmp_path_factory.mktemp("kubectl")) as running:
        yield running


def run_kubectl(
    cluster: RunningEmulator, *args: str, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [KUBECTL, *args],
        env={**os.environ, "KUBECONFIG": cluster.kubeconfig, "KUBECACHEDIR": cluster.kubectl_cache_dir},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def kubectl(cluster: RunningEmulator, *args: str, timeout: float = 30) -> str:
    result = run_kubectl(cluster, *args, timeout=timeout)
    assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
    return result.stdout


def start_kubectl(cluster: RunningEmulator, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "KUBECONFIG": cluster.kubeconfig, "KUBECACHEDIR": cluster.kubectl_cache_dir}
    return subprocess.Popen(
        [KUBECTL, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def wait_until(predicate: object, deadline_s: float = 10) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if callable(predicate) and predicate():
            return
        time.sleep(0.05)  # polling an external condition, bounded by the deadline
    raise AssertionError("condition not met before the deadline")


def test_apply_crds_and_examples_then_get_by_category_and_full_name(cluster: RunningEmulator) -> None:
    out = kubectl(cluster, "apply", "-f", str(FIXTURES / "keystone" / "crds.yaml"))
    assert "customresourcedefinition.apiextensions.k8s.io/projects.keystone.osh.openstack.org created" in out
    out = kubectl(cluster, "apply", "-f", str(FIXTURES / "keystone" / "examples.yaml"))
    assert (
        "project.keystone.osh.openstack.org/demo created" in out
        and "secret/demo-keystone-user created" in out
    )
    again = kubectl(cluster, "apply", "-f", str(FIXTURES / "keystone" / "examples.yaml"))
    assert "project.keystone.osh.openstack.org/demo unchanged" in again
    listing = kubectl(cluster, "get", "keystone")
    assert (
        "project.keystone.osh.openstack.org/demo" in listing
        and "service.keystone.osh.openstack.org/demo-compute" in listing
    )
    services = kubectl(cluster, "get", "services.keystone.osh.openstack.org")
    header, row = services.splitlines()[:2]
    assert header.split() == ["NAME", "READY", "TYPE"] and row.split() == ["demo-compute", "compute"]


def test_apply_rejects_unknown_fields_server_side(cluster: RunningEmulator, tmp_path: Path) -> None:
    kubectl(cluster, "apply", "-f", str(FIXTURES / "keystone" / "crds.yaml"))
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: keystone.osh.openstack.org/v1alpha1\nkind: Project\nmetadata: {name: typo}\nspec: {name: x, nmae: y}\n"
    )
    result = run_kubectl(cluster, "apply", "-f", str(bad))
    assert result.returncode != 0 and 'unknown field "spec.nmae"' in result.stderr


def test_patch_status_and_wait_for_ready(cluster: RunningEmulator) -> None:
    kubectl(cluster, "apply", "-f", str(FIXTURES / "keystone" / "crds.yaml"))
    kubectl(cluster, "apply", "-f", str(FIXTURES / "keystone" / "examples.yaml"))
    waiter = start_kubectl(cluster, "wait", "--for=condition=Ready", "project/demo", "--timeout=20s")
    try:
        kubectl(cluster, "patch", "project", "demo", "--subresource=status", "--type=merge", "-p", READY)
        out, err = waiter.communicate(timeout=25)
    finally:
        if waiter.poll() is None:
            os.killpg(waiter.pid, 9)
    assert waiter.returncode == 0, err
    assert "project.keystone.osh.openstack.org/demo condition met" in out
    row = kubectl(cluster, "get", "project", "demo").splitlines()[1].split()
    assert row[:2] == ["demo", "True"]


def test_delete_blocks_on_a_finalizer_until_it_is_removed(cluster: RunningEmulator) -> None:
    kubectl(cluster, "apply", "-f", str(FIXTURES / "keystone" / "crds.yaml"))
    kubectl(cluster, "apply", "-f", str(FIXTURES / "keystone" / "examples.yaml"))
    kubectl(
        cluster,
        "patch",
        "service.keystone.osh.openstack.org",
        "demo-compute",
        "--type=merge",
        "-p",
        '{"metadata":{"finalizers":["osprov.dev/cleanup"]}}',
    )
    deleter = start_kubectl(
        cluster, "delete", "service.keystone.osh.openstack.org", "demo-compute", "--timeout=30s"
    )
    try:
        # Deletion has started (deletionTimestamp set) but kubectl keeps waiting for the object to go.
        jsonpath = "jsonpath={.metadata.deletionTimestamp}"
        wait_until(
            lambda: (
                kubectl(cluster, "get", "service.keystone.osh.openstack.org", "demo-compute", "-o", jsonpath)
                != ""
            )
        )
        assert deleter.poll() is None
        kubectl(
            cluster,
            "patch",
            "service.keystone.osh.openstack.org",
            "demo-compute",
            "--type=json",
            "-p",
            '[{"op":"remove","path":"/metadata/finalizers"}]',
        )
        out, err = deleter.communicate(timeout=25)
    finally:
        if deleter.poll() is None:
            os.killpg(deleter.pid, 9)
    assert deleter.returncode == 0, err
    assert 'service.keystone.osh.openstack.org "demo-compute" deleted' in out


NOVA = REPO / "examples" / "identity" / "nova.yaml"
DOC_READY = '{"status":{"conditions":[{"type":"Ready","status":"True","reason":"Reconciled","message":"project exists","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}'


@pytest.mark.skipif(
    not (REPO / "deploy" / "crds").is_dir() or not NOVA.exists(), reason="project CRDs/examples not generated"
)
def test_the_documented_commands_with_the_project_crds(tmp_path: Path) -> None:
    """docs/kube-emulator.md, verbatim (relative paths from the repository root)."""
    with run_emulator(tmp_path) as running:

        def run(*args: str) -> str:
            env = {**os.environ, "KUBECONFIG": running.kubeconfig, "KUBECACHEDIR": running.kubectl_cache_dir}
            result = subprocess.run(
                [KUBECTL, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=30
            )
            assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
            return result.stdout

        def start(*args: str) -> subprocess.Popen[str]:
            env = {**os.environ, "KUBECONFIG": running.kubeconfig, "KUBECACHEDIR": running.kubectl_cache_dir}
            return subprocess.Popen(
                [KUBECTL, *args],
                cwd=REPO,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )

        assert "projects.keystone.osh.openstack.org created" in run("apply", "-f", "deploy/crds/")
        assert "project.keystone.osh.openstack.org/nova-service created" in run(
            "apply", "-n", "default", "-f", "examples/identity/nova.yaml"
        )
        assert "domain.keystone.osh.openstack.org/nova-service" in run("get", "keystone")
        assert run("get", "services.keystone.osh.openstack.org").split()[:6] == [
            "NAME",
            "READY",
            "REASON",
            "ID",
            "AGE",
            "nova-compute",
        ]
        waiter = start("wait", "--for=condition=Ready", "project/nova-service", "--timeout=60s")
        deleter = None
        try:
            run("patch", "project", "nova-service", "--subresource=status", "--type=merge", "-p", DOC_READY)
            assert "condition met" in waiter.communicate(timeout=30)[0]
            run(
                "patch",
                "project",
                "nova-service",
                "--type=merge",
                "-p",
                '{"metadata":{"finalizers":["osprov.dev/cleanup"]}}',
            )
            deleter = start("delete", "project", "nova-service")
            wait_until(
                lambda: (
                    run("get", "project", "nova-service", "-o", "jsonpath={.metadata.deletionTimestamp}")
                    != ""
                )
            )
            assert deleter.poll() is None  # kubectl delete is still waiting for the object to go
            run(
                "patch",
                "project",
                "nova-service",
                "--type=json",
                "-p",
                '[{"op":"remove","path":"/metadata/finalizers"}]',
            )
            deleter.communicate(timeout=30)
            assert deleter.returncode == 0
            assert run("get", "projects", "-o", "name") == ""
        finally:
            for proc in (waiter, deleter):
                if proc is not None and proc.poll() is None:
                    os.killpg(proc.pid, 9)


def test_kubectl_get_pages_through_large_lists(cluster: RunningEmulator) -> None:
    kubectl(cluster, "apply", "-f", str(FIXTURES / "keystone" / "crds.yaml"))
    kubectl(cluster, "create", "namespace", "paged")
    docs = "\n---\n".join(
        f"apiVersion: keystone.osh.openstack.org/v1alpha1\nkind: Project\nmetadata: {{name: p{i:03d}}}\nspec: {{name: p{i}}}"
        for i in range(12)
    )
    result = subprocess.run(
        [KUBECTL, "apply", "-n", "paged", "-f", "-"],
        input=docs,
        env={**os.environ, "KUBECONFIG": cluster.kubeconfig, "KUBECACHEDIR": cluster.kubectl_cache_dir},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    rows = kubectl(cluster, "get", "projects", "-n", "paged", "--chunk-size=5", "--no-headers").splitlines()
    assert [r.split()[0] for r in rows] == [f"p{i:03d}" for i in range(12)]


def test_kubectl_create_secret_and_namespace_with_protobuf_bodies(cluster: RunningEmulator) -> None:
    """kubectl's typed clients POST protobuf for built-ins; the emulator decodes Namespace and Secret."""
    kubectl(cluster, "create", "namespace", "typed")
    kubectl(cluster, "create", "secret", "generic", "creds", "-n", "typed", "--from-literal=password=fake-pw")
    with cluster.api_client() as api:
        secret = client.CoreV1Api(api).read_namespaced_secret("creds", "typed")
    assert secret.type == "Opaque" and secret.data == {"password": base64.b64encode(b"fake-pw").decode()}
    assert "typed" in kubectl(cluster, "get", "namespaces", "-o", "name")


def test_kubectl_get_watch_prints_printer_columns_for_changes(cluster: RunningEmulator) -> None:
    kubectl(cluster, "apply", "-f", str(FIXTURES / "keystone" / "crds.yaml"))
    kubectl(cluster, "create", "namespace", "watched")
    kubectl(cluster, "apply", "-n", "watched", "-f", str(FIXTURES / "keystone" / "examples.yaml"))
    watcher = start_kubectl(cluster, "get", "projects", "-n", "watched", "-w", "--request-timeout=20s")
    try:
        assert watcher.stdout is not None
        header = watcher.stdout.readline().split()
        first = watcher.stdout.readline().split()
        kubectl(
            cluster,
            "patch",
            "project",
            "demo",
            "-n",
            "watched",
            "--subresource=status",
            "--type=merge",
            "-p",
            READY,
        )
        changed = watcher.stdout.readline().split()
    finally:
        os.killpg(watcher.pid, 9)
        watcher.communicate(timeout=10)
    assert header == ["NAME", "READY", "ID"] and first == ["demo"]
    assert changed == ["demo", "True"]


def test_kubectl_create_configmap_serviceaccount_and_rbac_with_protobuf_bodies(
    cluster: RunningEmulator,
) -> None:
    kubectl(cluster, "create", "namespace", "typed-rbac")
    ns = ("-n", "typed-rbac")
    kubectl(cluster, "create", "configmap", "settings", "--from-literal=mode=fast", *ns)
    kubectl(cluster, "create", "serviceaccount", "runner", *ns)
    kubectl(
        cluster,
        "create",
        "role",
        "reader",
        "--verb=get,list",
        "--resource=secrets",
        "--resource-name=one",
        *ns,
    )
    kubectl(
        cluster, "create", "rolebinding", "reader", "--role=reader", "--serviceaccount=typed-rbac:runner", *ns
    )
    kubectl(cluster, "create", "clusterrole", "typed-viewer", "--verb=get", "--non-resource-url=/metrics")
    kubectl(
        cluster, "create", "clusterrolebinding", "typed-viewer", "--clusterrole=typed-viewer", "--group=ops"
    )
    with cluster.api_client() as api:
        core: Any = client.CoreV1Api(api)
        rbac: Any = client.RbacAuthorizationV1Api(api)
        assert core.read_namespaced_config_map("settings", "typed-rbac").data == {"mode": "fast"}
        assert core.read_namespaced_service_account("runner", "typed-rbac").metadata.name == "runner"
        rule = rbac.read_namespaced_role("reader", "typed-rbac").rules[0]
        assert (rule.verbs, rule.api_groups, rule.resources, rule.resource_names) == (
            ["get", "list"],
            [""],
            ["secrets"],
            ["one"],
        )
        binding = rbac.read_namespaced_role_binding("reader", "typed-rbac")
        assert (binding.role_ref.kind, binding.role_ref.name) == ("Role", "reader")
        assert [(s.kind, s.name, s.namespace) for s in binding.subjects] == [
            ("ServiceAccount", "runner", "typed-rbac")
        ]
        assert rbac.read_cluster_role("typed-viewer").rules[0].non_resource_urls == ["/metrics"]
        group = rbac.read_cluster_role_binding("typed-viewer").subjects[0]
        assert (group.kind, group.name, group.api_group) == ("Group", "ops", "rbac.authorization.k8s.io")
