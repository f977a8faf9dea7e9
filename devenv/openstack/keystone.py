"""Keystone on uwsgi, MariaDB-backed, with fernet tokens and failed-login lockout enabled."""

from __future__ import annotations

import os

from devenv import procs
from devenv.config import PORTS, Secrets, state_dir, venv_bin
from devenv.openstack.common import REGION, db_url, keystone_url, uwsgi_argv, write_ini

LOCKOUT_FAILURE_ATTEMPTS = 3


def configure(secrets: Secrets) -> str:
    base = state_dir() / "keystone"
    path = write_ini(
        "keystone",
        "keystone.conf",
        {
            "DEFAULT": {"use_stderr": True, "debug": False},
            "database": {"connection": db_url(secrets, "keystone"), "max_pool_size": 10},
            "token": {"provider": "fernet", "expiration": 7200},
            "fernet_tokens": {"key_repository": str(base / "fernet-keys")},
            "fernet_receipts": {"key_repository": str(base / "fernet-receipts")},
            "credential": {"key_repository": str(base / "credential-keys")},
            # Tests count failed logins: three strikes lock a user out.
            "security_compliance": {
                "lockout_failure_attempts": LOCKOUT_FAILURE_ATTEMPTS,
                "lockout_duration": 300,
            },
            # One uwsgi process (below) makes an in-process cache coherent: Keystone invalidates its
            # own cache on writes. Token validation dominated its CPU under the integration suites.
            "cache": {"enabled": True, "backend": "oslo_cache.dict", "expiration_time": 600},
            # bcrypt's minimum cost: password checks (probes, token issue) in ms instead of ~0.3 s.
            "identity": {"password_hash_algorithm": "bcrypt", "password_hash_rounds": 4},
        },
    )
    return str(path)


def _manage(conf: str, *args: str, env: dict[str, str] | None = None) -> None:
    # keystone-manage ignores OS_KEYSTONE_CONFIG_FILES: pass --config-file.
    procs.run("keystone-manage", [venv_bin("keystone-manage"), "--config-file", conf, *args], env=env)


def setup(secrets: Secrets) -> None:
    """Schema, key repositories and the bootstrap admin (idempotent)."""
    conf = configure(secrets)
    base = state_dir() / "keystone"
    for repo in ("fernet-keys", "fernet-receipts", "credential-keys"):
        (base / repo).mkdir(parents=True, exist_ok=True, mode=0o700)
    user = os.getenv("USER") or "root"
    _manage(conf, "db_sync")
    if not any((base / "fernet-keys").iterdir()):
        _manage(conf, "fernet_setup", "--keystone-user", user, "--keystone-group", user)
    if not any((base / "fernet-receipts").iterdir()):
        _manage(conf, "receipt_setup", "--keystone-user", user, "--keystone-group", user)
    if not any((base / "credential-keys").iterdir()):
        _manage(conf, "credential_setup", "--keystone-user", user, "--keystone-group", user)
    url = f"{keystone_url()}/v3"
    # The password goes through the environment, never argv (visible in ps).
    _manage(
        conf,
        "bootstrap",
        "--bootstrap-username",
        "admin",
        "--bootstrap-project-name",
        "admin",
        "--bootstrap-role-name",
        "admin",
        "--bootstrap-service-name",
        "keystone",
        "--bootstrap-region-id",
        REGION,
        "--bootstrap-admin-url",
        url,
        "--bootstrap-internal-url",
        url,
        "--bootstrap-public-url",
        url,
        env={"OS_BOOTSTRAP_PASSWORD": secrets.admin_password},
    )


def start(secrets: Secrets) -> None:
    conf = configure(secrets)
    procs.start(
        "keystone",
        uwsgi_argv(PORTS.keystone, "keystone.wsgi.api:application", processes=1, threads=8),
        env={"OS_KEYSTONE_CONFIG_FILES": conf},
    )
    wait_healthy()


def wait_healthy(timeout: float = 60) -> None:
    procs.wait_until(
        lambda: procs.http_status(f"{keystone_url()}/v3") == 200, timeout, "Keystone /v3", "keystone"
    )


def exempt_admin_from_lockout(secrets: Secrets) -> None:
    """Failed-login tests must never lock out the admin the whole suite depends on."""
    from keystoneauth1 import session
    from keystoneauth1.identity import v3

    auth = v3.Password(
        auth_url=f"{keystone_url()}/v3",
        username="admin",
        password=secrets.admin_password,
        project_name="admin",
        user_domain_name="Default",
        project_domain_name="Default",
    )
    sess = session.Session(auth=auth)
    users = sess.get(f"{keystone_url()}/v3/users?name=admin&domain_id=default").json()["users"]
    for user in users:
        sess.patch(
            f"{keystone_url()}/v3/users/{user['id']}",
            json={"user": {"options": {"ignore_lockout_failure_attempts": True}}},
        )
