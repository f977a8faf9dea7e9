"""keystone.find / create / update / delete against the real Keystone of the local stack."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from osprov.activities import keystone
from osprov.api.errors import CONFLICT, INVALID, NOT_FOUND
from osprov.api.keystone_io import Create, Delete, Find, KeystoneObject, Update
from tests.activities.conftest import Cleanup, Identity

pytestmark = pytest.mark.stack


def _create(env: ActivityEnvironment, kind: Any, fields: dict[str, Any], **filters: str) -> KeystoneObject:
    name = filters.pop("name", None)
    return env.run(
        keystone.create, Create(kind=kind, fields=fields, find=Find(kind=kind, name=name, filters=filters))
    )


def test_find_is_exact_on_names_that_prefix_match_or_differ_in_case(
    env: ActivityEnvironment, test_domain: str, unique: str
) -> None:
    wanted = _create(env, "project", {"name": f"px-{unique}", "domain_id": test_domain}, name=f"px-{unique}")
    _create(env, "project", {"name": f"px-{unique}-b", "domain_id": test_domain}, name=f"px-{unique}-b")

    def find(name: str) -> list[KeystoneObject]:
        return env.run(keystone.find, Find(kind="project", name=name, filters={"domain_id": test_domain}))

    assert [o.id for o in find(f"px-{unique}")] == [wanted.id]
    assert find(f"px-{unique[:4]}") == []  # a prefix is not a match
    assert find(f"PX-{unique}") == []  # MariaDB compares names case-insensitively; we do not
    assert find(f"px-{unique}")[0].fields["domain_id"] == test_domain


def test_find_treats_regex_characters_and_commas_literally(
    env: ActivityEnvironment, cleanup: Cleanup, unique: str
) -> None:
    stype = f"vol.v3,{unique}"
    dotted = _create(
        env, "service", {"name": f"cin.der,{unique}", "type": stype}, name=f"cin.der,{unique}", type=stype
    )
    cleanup.add("service", dotted.id)
    lookalike = _create(
        env, "service", {"name": f"cinXder,{unique}", "type": stype}, name=f"cinXder,{unique}", type=stype
    )
    cleanup.add("service", lookalike.id)

    found = env.run(keystone.find, Find(kind="service", name=f"cin.der,{unique}", filters={"type": stype}))
    assert [o.id for o in found] == [dotted.id]
    assert (
        env.run(keystone.find, Find(kind="service", name=f"cin.der,{unique}", filters={"type": "vol.v3"}))
        == []
    )
    both = env.run(keystone.find, Find(kind="service", filters={"type": stype}))
    assert [o.id for o in both] == sorted([dotted.id, lookalike.id])


def test_find_rejects_a_filter_keystone_cannot_apply(env: ActivityEnvironment) -> None:
    with pytest.raises(ApplicationError) as err:
        env.run(keystone.find, Find(kind="service", filters={"url": "http://x"}))
    assert err.value.type == INVALID and err.value.non_retryable


def test_create_twice_never_duplicates_service_or_endpoint(
    env: ActivityEnvironment, admin: Identity, cleanup: Cleanup, unique: str
) -> None:
    name, stype = f"svc-{unique}", f"type-{unique}"
    service_request = Create(
        kind="service",
        fields={"name": name, "type": stype, "description": "d"},
        find=Find(kind="service", name=name, filters={"type": stype}),
    )
    first = env.run(keystone.create, service_request)
    cleanup.add("service", first.id)
    again = env.run(keystone.create, service_request)  # a retry after a worker crash
    assert again.id == first.id
    assert [s.id for s in admin.services(name=name, type=stype)] == [first.id]

    region = _create(env, "region", {"id": f"Region-{unique}"}, name=f"Region-{unique}")
    cleanup.add("region", region.id)
    assert region.id == f"Region-{unique}"
    assert _create(env, "region", {"id": f"Region-{unique}"}, name=f"Region-{unique}").id == region.id
    with pytest.raises(ApplicationError) as err:  # no ID: Keystone would invent one on every retry
        _create(env, "region", {"description": "x"}, name=f"Region-{unique}-b")
    assert err.value.type == INVALID

    filters = {"service_id": first.id, "region_id": region.id, "interface": "public"}
    endpoint_request = Create(
        kind="endpoint", fields={**filters, "url": "http://a/v3"}, find=Find(kind="endpoint", filters=filters)
    )
    endpoint = env.run(keystone.create, endpoint_request)
    cleanup.add("endpoint", endpoint.id)
    assert env.run(keystone.create, endpoint_request).id == endpoint.id
    listed = list(admin.endpoints(service_id=first.id, region_id=region.id, interface="public"))
    assert [e.id for e in listed] == [endpoint.id]
    assert endpoint.fields["url"] == "http://a/v3"


def test_find_returns_every_duplicate_endpoint_and_create_adopts_the_lowest(
    env: ActivityEnvironment, admin: Identity, cleanup: Cleanup, unique: str
) -> None:
    service = admin.create_service(name=f"dup-{unique}", type=f"dup-{unique}")
    cleanup.add("service", service.id)
    twins = [
        admin.create_endpoint(
            service_id=service.id, interface="internal", url=f"http://twin{i}", region_id="RegionOne"
        )
        for i in range(2)
    ]
    for twin in twins:
        cleanup.add("endpoint", twin.id)
    filters = {"service_id": service.id, "region_id": "RegionOne", "interface": "internal"}

    found = env.run(keystone.find, Find(kind="endpoint", filters=filters))
    assert [o.id for o in found] == sorted(t.id for t in twins)
    adopted = env.run(
        keystone.create,
        Create(
            kind="endpoint",
            fields={**filters, "url": "http://new"},
            find=Find(kind="endpoint", filters=filters),
        ),
    )
    assert adopted.id == min(t.id for t in twins)
    assert len(list(admin.endpoints(service_id=service.id))) == 2


def test_create_that_loses_a_race_adopts_the_winner_on_409(
    env: ActivityEnvironment,
    admin: Identity,
    monkeypatch: pytest.MonkeyPatch,
    unique: str,
) -> None:
    name = f"race-{unique}"
    winner = admin.create_domain(name=name, enabled=False)
    try:
        real_find = keystone._find
        calls = []

        def first_lookup_misses(conn: Any, find: Find) -> list[KeystoneObject]:
            calls.append(find)
            return [] if len(calls) == 1 else real_find(conn, find)  # the winner commits after our lookup

        monkeypatch.setattr(keystone, "_find", first_lookup_misses)
        adopted = _create(env, "domain", {"name": name, "enabled": False}, name=name)
        assert adopted.id == winner.id
        assert len(calls) == 2  # lookup, Keystone's real 409, lookup again
        assert [d.id for d in admin.domains(name=name)] == [winner.id]
    finally:
        admin.delete_domain(winner.id, ignore_missing=True)


def counted_lookups(monkeypatch: pytest.MonkeyPatch) -> list[Find]:
    """Every lookup the activities make from now on (the real ones still run), in order."""
    real_find = keystone._find
    lookups: list[Find] = []

    def counted(conn: Any, find: Find) -> list[KeystoneObject]:
        lookups.append(find)
        return real_find(conn, find)

    monkeypatch.setattr(keystone, "_find", counted)
    return lookups


def test_create_after_the_workflows_own_lookup_posts_at_once_and_a_retry_looks_first(
    env: ActivityEnvironment,
    admin: Identity,
    monkeypatch: pytest.MonkeyPatch,
    test_domain: str,
    unique: str,
) -> None:
    """absent=True: the workflow's lookup just missed, so attempt 1 makes no second lookup (one Keystone
    request fewer per new object); attempt 2 may follow an attempt whose POST succeeded, so it looks first
    and returns that object instead of making a twin."""
    lookups = counted_lookups(monkeypatch)
    name = f"absent-{unique}"
    request = Create(
        kind="project",
        fields={"name": name, "domain_id": test_domain},
        find=Find(kind="project", name=name, filters={"domain_id": test_domain}),
        absent=True,
    )
    made = env.run(keystone.create, request)
    assert lookups == []  # only the POST
    assert [p.id for p in admin.projects(name=name, domain_id=test_domain)] == [made.id]

    retry = ActivityEnvironment()
    retry.info = dataclasses.replace(retry.info, attempt=2)  # the first attempt's answer was lost
    again = retry.run(keystone.create, request)
    assert again.id == made.id and len(lookups) == 1
    assert [p.id for p in admin.projects(name=name, domain_id=test_domain)] == [made.id]


def test_a_region_created_after_the_workflows_lookup_is_adopted_from_keystones_409(
    env: ActivityEnvironment,
    admin: Identity,
    cleanup: Cleanup,
    monkeypatch: pytest.MonkeyPatch,
    unique: str,
) -> None:
    """absent=True on a region (converge.py `_ensure_region`): a sibling endpoint made it between this
    step's read and the POST, so Keystone refuses the POST (a region is keyed by its ID) and the create
    returns that region after one lookup."""
    region = f"absent-{unique}"
    theirs = admin.create_region(id=region)
    cleanup.add("region", theirs.id)
    lookups = counted_lookups(monkeypatch)
    request = Create(kind="region", fields={"id": region}, find=Find(kind="region", name=region), absent=True)
    got = env.run(keystone.create, request)
    assert got.id == region and len(lookups) == 1  # the POST's 409, then one lookup
    assert [r.id for r in admin.regions() if r.id == region] == [region]


def test_a_service_created_after_the_workflows_lookup_is_adopted_not_twinned(
    env: ActivityEnvironment, cleanup: Cleanup, unique: str
) -> None:
    """absent=True does not skip a service's lookup: Keystone would accept a twin without a 409, so the
    service someone made between the workflow's miss and the create is returned instead of a second one."""
    stype = f"absent-{unique}"
    theirs = _create(env, "service", {"name": "cinder", "type": stype}, name="cinder", type=stype)
    cleanup.add("service", theirs.id)
    request = Create(
        kind="service",
        fields={"name": "cinder", "type": stype},
        find=Find(kind="service", name="cinder", filters={"type": stype}),
        absent=True,
    )
    got = env.run(keystone.create, request)
    if got.id != theirs.id:
        cleanup.add("service", got.id)
    found = env.run(keystone.find, Find(kind="service", filters={"type": stype}))
    assert [o.id for o in found] == [theirs.id] and got.id == theirs.id


def test_409_without_an_exact_match_is_a_conflict_error(
    env: ActivityEnvironment, test_domain: str, unique: str
) -> None:
    _create(
        env,
        "group",
        {"name": f"grp-{unique}", "domain_id": test_domain},
        name=f"grp-{unique}",
        domain_id=test_domain,
    )
    with pytest.raises(ApplicationError) as err:  # differs only in case: Keystone (MariaDB) says 409
        _create(
            env,
            "group",
            {"name": f"GRP-{unique}", "domain_id": test_domain},
            name=f"GRP-{unique}",
            domain_id=test_domain,
        )
    assert err.value.type == CONFLICT and err.value.non_retryable
    assert f"GRP-{unique}" in str(err.value)


def test_update_patches_only_the_given_fields_and_keeps_the_id(
    env: ActivityEnvironment, admin: Identity, test_domain: str, unique: str
) -> None:
    user = _create(
        env,
        "user",
        {"name": f"u-{unique}", "domain_id": test_domain, "description": "old", "email": "a@example.org"},
        name=f"u-{unique}",
        domain_id=test_domain,
    )
    updated = env.run(
        keystone.update, Update(kind="user", id=user.id, fields={"description": "new", "enabled": False})
    )
    assert updated.id == user.id
    fetched = admin.get_user(user.id)
    assert (fetched.description, fetched.is_enabled, fetched.email) == ("new", False, "a@example.org")
    assert updated.fields["description"] == "new" and updated.fields["enabled"] is False


def test_update_of_a_missing_object_is_not_found(env: ActivityEnvironment, unique: str) -> None:
    with pytest.raises(ApplicationError) as err:
        env.run(keystone.update, Update(kind="role", id=f"missing{unique}", fields={"description": "x"}))
    assert err.value.type == NOT_FOUND


def test_fields_outside_the_contract_are_rejected_before_any_call(
    env: ActivityEnvironment, test_domain: str
) -> None:
    with pytest.raises(ApplicationError) as err:
        _create(
            env,
            "user",
            {"name": "x", "domain_id": test_domain, "password": "nope"},
            name="x",
            domain_id=test_domain,
        )
    assert err.value.type == INVALID and "nope" not in str(err.value)


def test_delete_twice_reports_deleted_then_already_gone(
    env: ActivityEnvironment, admin: Identity, unique: str
) -> None:
    role = _create(env, "role", {"name": f"role-{unique}", "description": "temp"}, name=f"role-{unique}")
    assert env.run(keystone.delete, Delete(kind="role", id=role.id)) is True
    assert env.run(keystone.delete, Delete(kind="role", id=role.id)) is False
    assert list(admin.roles(name=f"role-{unique}")) == []
