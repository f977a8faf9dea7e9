"""The real kubectl (.venv/bin/kubectl) against the emulator: the commands docs/kube-emulator.md shows."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from devenv.kube.testing import RunningEmulator, run_emulator

from .conftest import FIXTURES

KUBECTL = str(Path(sys.executable).parent / "kubectl")
REPO = Path(__file__).resolve().parents[2]
READY = '{"status":{"conditions":[{"type":"Ready","status":"True","reason":"Reconciled","message":"ok","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}'


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningEmulator]:
    with run_emulator(tmp_path_factory.mktemp("kubectl")) as running:
        yield running


def kubectl(cluster: RunningEmulator, *args: str, timeout: float = 30) -> str:
    result = subprocess.run(
        [KUBECTL, *args],
        env={**os.environ, "KUBECONFIG": cluster.kubeconfig},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
    return result.stdout


def start_kubectl(cluster: RunningEmulator, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "KUBECONFIG": cluster.kubeconfig}
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
    result = subprocess.run(
        [KUBECTL, "apply", "-f", str(bad)],
        env={**os.environ, "KUBECONFIG": cluster.kubeconfig},
        capture_output=True,
        text=True,
        timeout=30,
    )
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


@pytest.mark.skipif(
    not (REPO / "deploy" / "crds").is_dir(), reason="the project's CRDs are not generated yet"
)
def test_project_crds_and_an_example_round_trip(tmp_path: Path) -> None:
    with run_emulator(tmp_path, crds_dirs=[REPO / "deploy" / "crds"]) as running:
        example = next((REPO / "examples" / "identity").glob("*.yaml"), None)
        if example is None:
            pytest.skip("no identity examples yet")
        out = kubectl(running, "apply", "-f", str(example))
        assert "created" in out
        listing = kubectl(running, "get", "keystone", "-o", "name")
        assert "project.keystone.osh.openstack.org/" in listing
        name = listing.split("project.keystone.osh.openstack.org/")[1].split()[0]
        kubectl(running, "patch", "project", name, "--subresource=status", "--type=merge", "-p", READY)
        assert (
            kubectl(running, "get", "project", name, "-o", "jsonpath={.status.conditions[0].status}")
            == "True"
        )
        assert "unchanged" in kubectl(running, "apply", "-f", str(example))
