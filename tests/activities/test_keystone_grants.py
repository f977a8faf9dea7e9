"""keystone.check_grant / put_grant / revoke_grant for user|group x project|domain|system on the real Keystone."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import ValidationError
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from osprov.activities import keystone
from osprov.api.errors import NOT_FOUND
from osprov.api.keystone_io import Create, Find, Grant
from tests.activities.conftest import Identity

pytestmark = pytest.mark.stack


def _assignments(admin: Identity, grant: Grant) -> list[dict[str, Any]]:
    """Keystone's own list of role assignments matching the grant (independent of the activities)."""
    params = {"role.id": grant.role_id}
    if grant.user_id:
        params["user.id"] = grant.user_id
    else:
        params["group.id"] = str(grant.group_id)
    if grant.project_id:
        params["scope.project.id"] = grant.project_id
    elif grant.domain_id:
        params["scope.domain.id"] = grant.domain_id
    else:
        params["scope.system"] = "all"
    response = admin.get("/role_assignments", params=params)
    assert response.status_code == 200, response.text
    return list(response.json()["role_assignments"])


@pytest.fixture(scope="module")
def subjects_and_scopes(admin: Identity, test_domain: str) -> Iterator[dict[str, str]]:
    """One role, user, group and project shared by the grant tests (each test revokes what it grants)."""
    env, unique = ActivityEnvironment(), uuid.uuid4().hex[:8]

    def make(kind: Any, name: str, **extra: str) -> str:
        request = Create(
            kind=kind, fields={"name": name, **extra}, find=Find(kind=kind, name=name, filters=extra)
        )
        return env.run(keystone.create, request).id

    role = make("role", f"gr-role-{unique}")
    yield {
        "role": role,
        "user": make("user", f"gr-user-{unique}", domain_id=test_domain),
        "group": make("group", f"gr-group-{unique}", domain_id=test_domain),
        "project": make("project", f"gr-project-{unique}", domain_id=test_domain),
        "domain": test_domain,
    }
    admin.delete_role(role, ignore_missing=True)  # the others go with the test domain


@pytest.mark.parametrize("subject", ["user", "group"])
@pytest.mark.parametrize("scope", ["project", "domain", "system"])
def test_grant_lifecycle(
    env: ActivityEnvironment, admin: Identity, subjects_and_scopes: dict[str, str], subject: str, scope: str
) -> None:
    ids = subjects_and_scopes
    grant = Grant(
        role_id=ids["role"],
        **{f"{subject}_id": ids[subject]},
        **({"system": "all"} if scope == "system" else {f"{scope}_id": ids[scope]}),
    )
    assert env.run(keystone.check_grant, grant) is False

    env.run(keystone.put_grant, grant)
    env.run(keystone.put_grant, grant)  # idempotent: a retried PUT changes nothing
    assert len(_assignments(admin, grant)) == 1
    assert env.run(keystone.check_grant, grant) is True

    assert env.run(keystone.revoke_grant, grant) is True
    assert _assignments(admin, grant) == []
    assert env.run(keystone.revoke_grant, grant) is False
    assert env.run(keystone.check_grant, grant) is False


def test_grant_of_a_missing_role_is_not_found(
    env: ActivityEnvironment, subjects_and_scopes: dict[str, str], unique: str
) -> None:
    grant = Grant(
        role_id=f"missing{unique}",
        user_id=subjects_and_scopes["user"],
        project_id=subjects_and_scopes["project"],
    )
    with pytest.raises(ApplicationError) as err:
        env.run(keystone.put_grant, grant)
    assert err.value.type == NOT_FOUND and "role" in str(err.value).lower()
    assert env.run(keystone.check_grant, grant) is False


def test_a_grant_names_exactly_one_subject_and_one_scope() -> None:
    with pytest.raises(ValidationError):
        Grant(role_id="r", user_id="u", group_id="g", project_id="p")
    with pytest.raises(ValidationError):
        Grant(role_id="r", user_id="u")
    with pytest.raises(ValidationError):
        Grant(role_id="r", group_id="g", project_id="p", system="all")
