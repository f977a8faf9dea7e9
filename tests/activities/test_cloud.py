"""activities/cloud.py: admin and project-scoped connections against the real Keystone."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import openstack.connection
import pytest
import yaml
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from devenv.testing import StackEnv
from osprov.activities import cloud, keystone
from osprov.api.errors import INVALID, UNAUTHORIZED
from osprov.api.keystone_io import Create, Find, Grant
from tests.activities.conftest import Identity

pytestmark = pytest.mark.stack


def test_admin_connection_is_cached_per_thread(identity_stack: object) -> None:
    first = cloud.admin_connection()
    assert cloud.admin_connection() is first
    other: list[openstack.connection.Connection] = []
    worker = threading.Thread(target=lambda: other.append(cloud.admin_connection()))
    worker.start()
    worker.join(timeout=30)
    assert other and other[0] is not first


def test_threads_share_the_controllers_token_one_login_per_scope(identity_stack: object) -> None:
    """Each thread has its own connection but one login serves them all: the second thread's first call
    presents the token Keystone issued to the first (before, each thread logged in: one token each)."""
    cloud.forget_shared_auth()
    first = cloud.admin_connection()
    token = first.session.get_token()
    me = first.current_user_id
    assert token and me
    seen: list[str | None] = []

    def other_thread() -> None:
        conn = cloud.admin_connection()
        seen.append(conn.session.get_token())
        conn.identity.get_user(me)  # a real call with it
        cloud.close_thread_connections()

    worker = threading.Thread(target=other_thread)
    worker.start()
    worker.join(timeout=30)
    assert seen == [token]
    assert first.identity.get_user(me).id == me


def test_project_connection_is_scoped_to_the_named_project_and_reuses_its_token(
    env: ActivityEnvironment, test_domain: str, unique: str
) -> None:
    admin_conn = cloud.admin_connection()
    domain_name = env.run(keystone.find, Find(kind="domain", filters={"id": test_domain}))[0].fields["name"]
    name = f"scoped-{unique}"
    project = env.run(
        keystone.create,
        Create(
            kind="project",
            fields={"name": name, "domain_id": test_domain},
            find=Find(kind="project", name=name, filters={"domain_id": test_domain}),
        ),
    )
    admin_user = admin_conn.current_user_id
    admin_role = env.run(keystone.find, Find(kind="role", name="admin"))[0]
    env.run(keystone.put_grant, Grant(role_id=admin_role.id, user_id=admin_user, project_id=project.id))

    scoped = cloud.project_connection(name, domain_name)
    assert scoped.current_project_id == project.id
    assert scoped.current_user_id == admin_user
    token = scoped.session.get_token()
    assert cloud.project_connection(name, domain_name) is scoped
    assert scoped.session.get_token() == token
    assert cloud.admin_connection().current_project_id != project.id


def test_an_unknown_cloud_is_an_invalid_configuration(
    identity_stack: object, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OS_CLOUD", "no-such-cloud")
    with pytest.raises(ApplicationError) as err:
        cloud.admin_connection()
    assert err.value.type == INVALID and "no-such-cloud" in str(err.value)


def test_rejected_credentials_are_unauthorized_and_reread_on_the_next_attempt(
    env: ActivityEnvironment,
    identity_stack: StackEnv,
    admin: Identity,
    test_domain: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    unique: str,
) -> None:
    # A controller identity of its own (never the shared admin: failed logins count towards lockout).
    password = "ctl-" + uuid.uuid4().hex
    user = admin.create_user(name=f"ctl-{unique}", domain_id=test_domain, password=password)
    project = admin.create_project(name=f"ctl-{unique}", domain_id=test_domain)
    role = next(iter(admin.roles(name="admin")))
    assert admin.put(f"/projects/{project.id}/users/{user.id}/roles/{role.id}").status_code == 204
    auth = {
        "auth_url": identity_stack.keystone_url,
        "username": user.name,
        "user_domain_id": test_domain,
        "project_name": project.name,
        "project_domain_id": test_domain,
    }
    clouds = tmp_path / "clouds.yaml"

    def write_clouds(secret: str) -> None:
        clouds.write_text(yaml.safe_dump({"clouds": {"ctl": {"auth": {**auth, "password": secret}}}}))

    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(clouds))
    monkeypatch.setenv("OS_CLOUD", "ctl")
    write_clouds("wrong-" + password)
    with pytest.raises(ApplicationError) as err:
        env.run(keystone.find, Find(kind="domain", filters={"id": test_domain}))
    assert err.value.type == UNAUTHORIZED and password not in str(err.value)

    write_clouds(password)  # the operator fixes the Secret behind clouds.yaml; no worker restart
    assert [d.id for d in env.run(keystone.find, Find(kind="domain", filters={"id": test_domain}))] == [
        test_domain
    ]
