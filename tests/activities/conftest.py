"""Fixtures for the Keystone activity tests: the real Keystone of the local stack, per-test names,
cleanup of what a test created, Secrets holding test passwords, and Keystone's failed-login counter."""

from __future__ import annotations

import base64
import secrets as pysecrets
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import cast

import openstack
import openstack.config
import openstack.connection
import openstack.exceptions
import pytest
from openstack.identity.v3._proxy import Proxy as Identity
from temporalio.testing import ActivityEnvironment

from devenv import procs
from devenv.config import PORTS
from devenv.openstack.infra import mysql_exec
from devenv.testing import StackEnv, identity_stack  # noqa: F401  (session fixture used below)
from osprov.activities import cloud
from osprov.activities import kube as activities_kube
from osprov.api.keystone_io import SecretRef


@pytest.fixture(scope="session")
def admin(identity_stack: StackEnv) -> Iterator[Identity]:  # noqa: F811
    """An independent admin Identity v3 client: tests check Keystone's state with it, not with the activities."""
    loader = openstack.config.OpenStackConfig(
        config_files=[str(identity_stack.clouds_yaml)], load_envvars=False
    )
    conn = openstack.connection.Connection(config=loader.get_one(cloud=identity_stack.cloud))
    yield cast(Identity, conn.identity)
    conn.close()


@pytest.fixture(scope="session")
def test_domain(admin: Identity) -> Iterator[str]:
    """A domain holding this session's projects, users and groups; deleting it removes them all."""
    domain = admin.create_domain(name=f"osprovt-{uuid.uuid4().hex[:8]}", description="activity tests")
    yield str(domain.id)
    admin.update_domain(domain.id, enabled=False)
    admin.delete_domain(domain.id, ignore_missing=True)


@pytest.fixture
def env() -> ActivityEnvironment:
    return ActivityEnvironment()


@pytest.fixture
def unique() -> str:
    """A per-test suffix so tests never see each other's (or another session's) objects."""
    return uuid.uuid4().hex[:8]


@pytest.fixture(autouse=True)
def _fresh_connections() -> Iterator[None]:
    """Tests change OS_CLOUD/OS_CLIENT_CONFIG_FILE; start and end each with no cached connection."""
    cloud.close_thread_connections()
    yield
    cloud.close_thread_connections()


@dataclass
class Cleanup:
    """Objects outside the test domain (services, endpoints, regions, roles), deleted after the test."""

    admin: Identity
    items: list[tuple[str, str]] = field(default_factory=list)

    def add(self, kind: str, object_id: str) -> str:
        self.items.append((kind, object_id))
        return object_id

    def run(self) -> None:
        for kind, object_id in reversed(self.items):
            getattr(self.admin, f"delete_{kind}")(object_id, ignore_missing=True)


@pytest.fixture
def cleanup(admin: Identity) -> Iterator[Cleanup]:
    registry = Cleanup(admin)
    yield registry
    registry.run()


@dataclass
class SecretStore:
    """Creates Secrets that `activities_kube.read_secret_value` reads: real ones in the kube emulator when
    it runs, otherwise an in-memory stand-in with the same typed errors."""

    namespace: str
    create: Callable[[str, dict[str, str]], SecretRef]
    passwords: list[str] = field(default_factory=list)

    def password_secret(self, name: str, key: str = "OS_PASSWORD") -> tuple[SecretRef, str]:
        """A Secret holding a fresh random password under `key`."""
        password = "pw-" + pysecrets.token_urlsafe(18)
        self.passwords.append(password)
        ref = self.create(name, {key: password})
        return SecretRef(namespace=ref.namespace, name=ref.name, key=key), password


def _kube_running(stack: StackEnv) -> bool:
    return stack.kubeconfig.exists() and procs.tcp_open(PORTS.kube)


@pytest.fixture
def secret_store(identity_stack: StackEnv, monkeypatch: pytest.MonkeyPatch) -> Iterator[SecretStore]:  # noqa: F811
    namespace = "default"
    if _kube_running(identity_stack):
        from kubernetes import client
        from kubernetes.config import kube_config

        # The kubernetes package reads KUBECONFIG when imported, before the stack fixture sets it.
        monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(identity_stack.kubeconfig))
        core = client.CoreV1Api(activities_kube.api_client())
        created: list[str] = []

        def create_real(name: str, data: dict[str, str]) -> SecretRef:
            encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
            body = client.V1Secret(metadata=client.V1ObjectMeta(name=name), data=encoded)
            core.create_namespaced_secret(namespace, body)
            created.append(name)
            return SecretRef(namespace=namespace, name=name)

        yield SecretStore(namespace, create_real)
        for name in created:
            core.delete_namespaced_secret(name, namespace)
        return

    from osprov.activities import errors

    fake: dict[tuple[str, str], dict[str, str]] = {}

    def read_fake(ns: str, name: str, key: str) -> str:
        if (ns, name) not in fake:
            raise errors.not_found(f"Secret {ns}/{name} does not exist; create it")
        if key not in fake[ns, name]:
            raise errors.not_found(f"Secret {ns}/{name} has no key {key}; add it or fix the key name")
        return fake[ns, name][key]

    def create_fake(name: str, data: dict[str, str]) -> SecretRef:
        fake[namespace, name] = dict(data)
        return SecretRef(namespace=namespace, name=name)

    monkeypatch.setattr(activities_kube, "read_secret_value", read_fake)
    yield SecretStore(namespace, create_fake)


@pytest.fixture
def failed_logins() -> Callable[[str], int]:
    """Keystone's own count of failed logins for a user (local_user.failed_auth_count)."""

    def count(user_id: str) -> int:
        if not all(c in "0123456789abcdef" for c in user_id):
            raise ValueError(f"unexpected user id {user_id!r}")
        out = mysql_exec(
            f"SELECT IFNULL(failed_auth_count, 0) FROM local_user WHERE user_id = '{user_id}';", "keystone"
        )
        return int(out.strip() or "0")

    return count
