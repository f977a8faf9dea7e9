"""`osprov doctor` against the real local cloud: it passes there; it fails with the right message when Nova
hides OS-EXT-STS:task_state; its throwaways are gone afterwards, also after Ctrl-C.

Nova 34 has no policy that hides task_state (nova/api/openstack/compute/views/servers.py shows the
OS-EXT-STS attributes to every reader of a server; only OS-EXT-SRV-ATTR is policy-gated), so the cloud
that hides it is the real Nova behind the fault proxy, which blanks the key out of its answers
(devenv.faults.proxy.blank_answers) — as an API gateway or a patched policy would serve it.

The tenant is a Keystone user with member and load-balancer_member on its own project and an application
credential, given to the doctor as a clouds.yaml entry (--identity-cloud), exactly as an Identity's Secret
holds it. The slowed fake virt driver keeps a rebuild running for a few seconds, as on a real cloud
(with no delay the fake driver can finish a rebuild before the doctor's GET).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes.client
import kubernetes.config
import openstack.config
import openstack.connection
import pytest
import yaml

from devenv.config import PORTS
from devenv.faults.proxy import FaultProxy, json_member
from devenv.faults.slow_driver import slow_spawn
from devenv.testing import StackEnv
from osprov.api.registry import kind_info
from osprov.doctor_checks import PREFIX
from tests.support.osprov import ensure_crd
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.stack, pytest.mark.fullstack]

IDENTITY_CLOUD = "doctor-identity"
HIDDEN_CLOUD = "doctor-identity-hidden"  # the same credential, Nova reached through the blanking proxy
SPAWN_DELAY = 3.0
ALL_CHECKS = {
    "roles",
    "octavia-protocols",
    "cinder-name-filter",
    "launched-at",
    "nova-name-filter",
    "rebuild-task-state",
}


@dataclass
class Tenant:
    project_id: str
    clouds: Path  # the controller's entry (the stack's) and the tenant's two
    credential: dict[str, str]  # an Identity's Secret's keys (activities/cloud.py)


@pytest.fixture(scope="module")
def nova_proxy() -> Iterator[FaultProxy]:
    with FaultProxy("127.0.0.1", PORTS.nova) as proxy:
        proxy.blank_answers(json_member("OS-EXT-STS:task_state"))
        yield proxy


@pytest.fixture(scope="module")
def tenant(
    full_stack: StackEnv,
    admin: openstack.connection.Connection,
    nova_proxy: FaultProxy,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Tenant]:
    ident: Any = admin.identity
    tag = uuid.uuid4().hex[:8]
    project = ident.create_project(name=f"doctor-{tag}", domain_id="default")
    password = uuid.uuid4().hex
    user = ident.create_user(name=f"doctor-{tag}", password=password, domain_id="default")
    for role in ("member", "load-balancer_member"):
        ident.assign_project_role_to_user(project.id, user, ident.find_role(role, ignore_missing=False))
    clouds = yaml.safe_load(full_stack.clouds_yaml.read_text())
    controller = clouds["clouds"][full_stack.cloud]
    as_user = controller | {
        "auth": {
            "auth_url": controller["auth"]["auth_url"],
            "username": user.name,
            "password": password,
            "user_domain_id": "default",
            "project_id": project.id,
        }
    }
    loader = openstack.config.OpenStackConfig(load_yaml_config=False, load_envvars=False)
    user_conn = openstack.connection.Connection(config=loader.get_one(**as_user))
    user_ident: Any = user_conn.identity
    cred = user_ident.create_application_credential(user=user.id, name=f"doctor-{tag}")
    user_conn.close()
    identity = controller | {
        "auth_type": "v3applicationcredential",
        "auth": {
            "auth_url": controller["auth"]["auth_url"],
            "application_credential_id": cred.id,
            "application_credential_secret": cred.secret,
        },
    }
    hidden = identity | {"compute_endpoint_override": f"{nova_proxy.url}/v2.1", "compute_api_version": "2"}
    path = tmp_path_factory.mktemp("doctor") / "clouds.yaml"
    path.write_text(
        yaml.safe_dump(
            {"clouds": {full_stack.cloud: controller, IDENTITY_CLOUD: identity, HIDDEN_CLOUD: hidden}}
        )
    )
    path.chmod(0o600)
    credential = {
        "OS_APPLICATION_CREDENTIAL_ID": str(cred.id),
        "OS_APPLICATION_CREDENTIAL_SECRET": str(cred.secret),
    }
    yield Tenant(project_id=str(project.id), clouds=path, credential=credential)
    ident.delete_user(user.id, ignore_missing=True)
    ident.delete_project(project.id, ignore_missing=True)


def doctor_env(full_stack: StackEnv, tenant: Tenant, **extra: str) -> dict[str, str]:
    return dict(os.environ) | full_stack.env | {"OS_CLIENT_CONFIG_FILE": str(tenant.clouds)} | extra


def doctor(full_stack: StackEnv, tenant: Tenant, *args: str, **env: str) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "osprov", "doctor", "-o", "json", *args],
        env=doctor_env(full_stack, tenant, **env),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


def by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in report["checks"]}


def throwaways(admin: openstack.connection.Connection, tenant: Tenant) -> list[str]:
    """The doctor's objects left in the tenant's project, as the cloud's admin lists them."""
    servers = [
        s.name
        for s in admin.compute.servers(all_projects=True, project_id=tenant.project_id)
        if s.name.startswith(PREFIX)
    ]
    volumes = [
        v.name
        for v in admin.block_storage.volumes(all_projects=True, project_id=tenant.project_id)
        if (v.name or "").startswith(PREFIX)
    ]
    return servers + volumes


def deleted_servers(admin: openstack.connection.Connection, tenant: Tenant) -> int:
    """The doctor's servers Nova has deleted in the tenant's project (an admin may list deleted ones)."""
    found = admin.compute.servers(all_projects=True, project_id=tenant.project_id, deleted=True)
    return sum(1 for s in found if s.name.startswith(PREFIX))


def test_doctor_passes_on_the_local_stack_and_leaves_nothing_behind(
    full_stack: StackEnv, admin: openstack.connection.Connection, tenant: Tenant
) -> None:
    with slow_spawn(SPAWN_DELAY):
        code, report = doctor(full_stack, tenant, "--identity-cloud", IDENTITY_CLOUD)
    checks = by_name(report)
    verdicts = {n: c["verdict"] for n, c in checks.items()}
    # The stack's Cinder has no resource_filters.json: a non-admin's name filter is refused (a warning).
    assert verdicts == dict.fromkeys(ALL_CHECKS, "PASS") | {"cinder-name-filter": "WARN"}, json.dumps(report)
    assert code == 0 and report["passed"] and report["leftovers"] == []
    assert checks["rebuild-task-state"]["detail"].endswith("shows task_state 'rebuilding'")
    assert (
        checks["roles"]["credentials"] == "controller" and checks["launched-at"]["credentials"] == "identity"
    )
    assert "fuzzy" in checks["nova-name-filter"]["detail"]  # Nova's name filter is a regular expression
    assert (
        "Cinder refuses the name filter to the Identity (HTTP 400" in checks["cinder-name-filter"]["detail"]
    )
    assert checks["cinder-name-filter"]["fix"].startswith('allow it: add "name" to the "volume" list')
    assert throwaways(admin, tenant) == []


def test_doctor_fails_with_the_fix_when_nova_hides_task_state(
    full_stack: StackEnv, admin: openstack.connection.Connection, tenant: Tenant, nova_proxy: FaultProxy
) -> None:
    with slow_spawn(SPAWN_DELAY):
        code, report = doctor(full_stack, tenant, "--identity-cloud", HIDDEN_CLOUD)
    checks = by_name(report)
    rebuild = checks.pop("rebuild-task-state")
    assert code == 1 and not report["passed"]
    assert rebuild["verdict"] == "FAIL"
    assert "a just-accepted rebuild's GET has no OS-EXT-STS:task_state: Nova hides it" in rebuild["detail"]
    assert "osprov would take a rebuild as settled before Nova finished it" in rebuild["detail"]
    assert rebuild["fix"].startswith("make Nova return OS-EXT-STS:task_state to the Identity's role")
    assert {c["verdict"] for c in checks.values()} == {"PASS", "WARN"}  # only the hidden field fails
    assert throwaways(admin, tenant) == []


def test_doctor_text_report_prints_the_fix_and_exits_non_zero(
    full_stack: StackEnv, tenant: Tenant, tmp_path: Path
) -> None:
    tenancy = tmp_path / "tenancy.yaml"
    tenancy.write_text("roles: [member, doctor-no-such-role]\n")
    done = subprocess.run(
        [sys.executable, "-m", "osprov", "doctor", "--identity-cloud", IDENTITY_CLOUD, "--no-rebuild"],
        env=doctor_env(full_stack, tenant, OSPROV_TENANCY_FILE=str(tenancy)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 1, done.stdout + done.stderr
    roles = lines.index(next(line for line in lines if line.startswith("FAIL  roles")))
    assert "doctor-no-such-role of the granted roles (the tenancy mapping" in lines[roles]
    assert lines[roles + 1].startswith("      fix: create them (openstack role create doctor-no-such-role)")
    assert sum(line.startswith("SKIP") and "--no-rebuild" in line for line in lines) == 3
    assert lines[-1] == "6 checks: 1 passed, 1 warned, 1 failed, 3 skipped"


def test_doctor_interrupted_while_booting_deletes_its_throwaways(
    full_stack: StackEnv, admin: openstack.connection.Connection, tenant: Tenant
) -> None:
    with slow_spawn(30.0):  # the throwaway server boots for 30 s: Ctrl-C lands in the boot wait
        proc = subprocess.Popen(
            [sys.executable, "-m", "osprov", "doctor", "--identity-cloud", IDENTITY_CLOUD],
            env=doctor_env(full_stack, tenant),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # Ctrl-C as at a terminal: a test run started in the background (`make test &`, a CI runner)
            # has SIGINT ignored, and a child inherits that, so Python would never raise KeyboardInterrupt.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        try:
            wait_for(
                lambda: any(
                    n.startswith(PREFIX)
                    for n in (
                        s.name for s in admin.compute.servers(all_projects=True, project_id=tenant.project_id)
                    )
                ),
                "the doctor's throwaway server exists",
                120,
            )
            assert proc.poll() is None, "the doctor finished before the test saw its server booting"
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, out + err
    assert "interrupted; the throwaway objects are deleted" in err
    assert throwaways(admin, tenant) == []


@contextlib.contextmanager
def identity_in_kube(
    stack: StackEnv, name: str, project_id: str, credential: dict[str, str]
) -> Iterator[None]:
    """An Identity as its workflow leaves it: status naming its project and Secret, the Secret holding the
    application credential (written here directly: the doctor only reads them)."""
    ensure_crd(stack, "Identity")
    api = kubernetes.config.new_client_from_config(config_file=str(stack.kubeconfig))
    info = kind_info("Identity")
    custom = kubernetes.client.CustomObjectsApi(api)
    body = {
        "apiVersion": f"{info.group}/{info.version}",
        "kind": "Identity",
        "metadata": {"name": name},
        "spec": {},
    }
    custom.create_namespaced_custom_object(info.group, info.version, "default", info.plural, body)
    status = {"status": {"projectID": project_id, "secretName": f"{name}-credential"}}
    custom.patch_namespaced_custom_object_status(
        info.group, info.version, "default", info.plural, name, status
    )
    secret = kubernetes.client.V1Secret(
        metadata=kubernetes.client.V1ObjectMeta(name=f"{name}-credential"), string_data=credential
    )
    core = kubernetes.client.CoreV1Api(api)
    core.create_namespaced_secret("default", secret)
    try:
        yield
    finally:
        custom.delete_namespaced_custom_object(info.group, info.version, "default", info.plural, name)
        core.delete_namespaced_secret(f"{name}-credential", "default")


def test_doctor_reads_an_identitys_credential_from_kubernetes_and_refuses_one_of_another_project(
    full_stack: StackEnv, admin: openstack.connection.Connection, tenant: Tenant
) -> None:
    tag = uuid.uuid4().hex[:6]
    with identity_in_kube(full_stack, f"doctor-{tag}", tenant.project_id, tenant.credential):
        code, report = doctor(
            full_stack, tenant, "--identity", f"doctor-{tag}", "-n", "default", "--no-rebuild"
        )
    checks = by_name(report)
    assert code == 0, report
    assert (
        checks["octavia-protocols"]["verdict"] == "PASS"
        and checks["octavia-protocols"]["credentials"] == "identity"
    )
    assert checks["cinder-name-filter"]["verdict"] == "WARN"  # it ran: the Identity made and listed volumes
    assert throwaways(admin, tenant) == []

    # A Secret edited to hold some other project's credential is refused, as the worker refuses it.
    ident: Any = admin.identity
    other = ident.create_project(name=f"doctor-other-{tag}", domain_id="default")
    try:
        with identity_in_kube(full_stack, f"doctor-other-{tag}", str(other.id), tenant.credential):
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "osprov",
                    "doctor",
                    "--identity",
                    f"doctor-other-{tag}",
                    "--no-rebuild",
                ],
                env=doctor_env(full_stack, tenant),
                capture_output=True,
                text=True,
                timeout=300,
            )
    finally:
        ident.delete_project(other.id, ignore_missing=True)
    assert done.returncode == 2 and done.stdout == "", done.stdout
    assert "holds a credential of another project" in done.stderr
    assert tenant.credential["OS_APPLICATION_CREDENTIAL_SECRET"] not in done.stderr


def test_a_server_create_whose_answer_is_lost_is_still_deleted(
    full_stack: StackEnv, admin: openstack.connection.Connection, tenant: Tenant, nova_proxy: FaultProxy
) -> None:
    """Nova makes the server but the doctor never hears back: the throwaway was registered by name before
    the create, so the clean-up finds it and deletes it."""
    deleted_before = deleted_servers(admin, tenant)
    with nova_proxy.holding(("POST",), containing=b'"flavorRef"'):
        code, report = doctor(full_stack, tenant, "--identity-cloud", HIDDEN_CLOUD, OSPROV_API_TIMEOUT="5")
    checks = by_name(report)
    assert code == 1 and report["leftovers"] == []
    assert checks["launched-at"]["verdict"] == "FAIL"
    assert checks["launched-at"]["detail"].startswith("cannot boot a throwaway server: ")
    assert throwaways(admin, tenant) == []
    assert deleted_servers(admin, tenant) == deleted_before + 1  # Nova did make it; the doctor deleted it
