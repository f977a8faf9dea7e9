"""Keystone activities: each one makes one idempotent Identity API call through openstacksdk.

Workflows call these by name (api/keystone_io.py holds the names and the models). Every error leaves as
one of the typed ApplicationErrors of activities/errors.py, raised `from None` so no raw library
exception (which may quote request data) reaches Temporal history. Password values are read from the
Secret inside the activity and never leave it: not in results, errors, logs, nor any derived form.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn
from urllib.parse import quote

import openstack.connection
import openstack.exceptions
import requests
from keystoneauth1 import exceptions as ksa_exceptions
from keystoneauth1 import session as ksa_session
from keystoneauth1.identity import v3
from temporalio import activity

from osprov.activities import cloud
from osprov.activities.cloud import openstack_errors
from osprov.activities.contract import implements
from osprov.activities.errors import conflict, invalid
from osprov.api.keystone_io import (
    CHECK_GRANT,
    CREATE,
    DELETE,
    FIND,
    FIND_FILTERS,
    KIND_FIELDS,
    PROBE_PASSWORD,
    PUT_GRANT,
    REVOKE_GRANT,
    SET_PASSWORD,
    UPDATE,
    Create,
    Delete,
    Find,
    Grant,
    KeystoneObject,
    Probe,
    ProbeResult,
    SecretRef,
    SetPassword,
    Update,
)

# Kinds Keystone lets you create twice with the same identifying fields (no unique constraint).
_DUPLICABLE_KINDS = frozenset({"service", "endpoint"})


def _raise_for_status(response: requests.Response) -> None:
    openstack.exceptions.raise_from_response(response)


# --- objects -------------------------------------------------------------------------------------

# kind -> its list method on conn.identity (the others are get_/create_/update_/delete_<kind>)
_PLURAL = {
    "domain": "domains",
    "project": "projects",
    "role": "roles",
    "group": "groups",
    "user": "users",
    "service": "services",
    "endpoint": "endpoints",
    "region": "regions",
}


def proxy_call(conn: openstack.connection.Connection, verb: str, kind: str) -> Callable[..., Any]:
    name = _PLURAL[kind] if verb == "list" else f"{verb}_{kind}"
    method: Callable[..., Any] = getattr(conn.identity, name)
    return method


def to_object(kind: str, resource: Any) -> KeystoneObject:
    raw = resource.to_dict(body=True, headers=False, computed=False, original_names=True)
    return KeystoneObject(kind=kind, id=str(raw["id"]), fields={k: raw.get(k) for k in KIND_FIELDS[kind]})


def _check_fields(kind: str, fields: dict[str, Any], *, creating: bool) -> None:
    if "password" in fields:
        raise invalid(f"a {kind} password is set with {SET_PASSWORD}, never as a field")
    allowed = set(KIND_FIELDS[kind]) | ({"id"} if creating and kind == "region" else set())
    unknown = sorted(set(fields) - allowed)
    if unknown:
        raise invalid(f"unsupported {kind} field(s) {unknown}; supported: {sorted(allowed)}")
    if creating and kind == "region" and not fields.get("id"):
        # Without it Keystone invents a random ID that no lookup by name finds: every retry would add one.
        raise invalid("a region is created with its name as fields['id']")


def _describe(find: Find) -> str:
    filters = ", ".join(f"{k}={v!r}" for k, v in sorted(find.effective_filters().items()))
    return f"{find.kind} ({filters})"


def _find(conn: openstack.connection.Connection, find: Find) -> list[KeystoneObject]:
    """Exact lookup: Keystone's filtered query, then exact equality on every filter, sorted by ID."""
    filters = find.effective_filters()
    unknown = sorted(set(filters) - FIND_FILTERS[find.kind])
    if unknown:
        raise invalid(f"cannot find {find.kind} by {unknown}; supported: {sorted(FIND_FILTERS[find.kind])}")
    if "id" in filters:
        try:
            candidates = [to_object(find.kind, proxy_call(conn, "get", find.kind)(filters["id"]))]
        except openstack.exceptions.NotFoundException:
            candidates = []
    else:
        candidates = [to_object(find.kind, r) for r in proxy_call(conn, "list", find.kind)(**filters)]
    matches = [
        obj
        for obj in candidates
        if all((obj.id if key == "id" else obj.fields.get(key)) == value for key, value in filters.items())
    ]
    return sorted(matches, key=lambda obj: obj.id)


@implements(FIND)
def find(request: Find) -> list[KeystoneObject]:
    """All objects matching every filter exactly, sorted by ID (empty list when none)."""
    with openstack_errors(f"find {_describe(request)}"):
        return _find(cloud.admin_connection(), request)


@implements(CREATE)
def create(request: Create) -> KeystoneObject:
    """Create-if-absent: an existing exact match (lowest ID) is returned instead of creating another."""
    _check_fields(request.kind, request.fields, creating=True)
    what = _describe(request.find)
    with openstack_errors(f"create {what}"):
        conn = cloud.admin_connection()
        # Right after the step's own miss, a unique name needs no second look (Keystone's 409 catches a
        # racer); a service or endpoint does, since a racer's twin would not be refused.
        fresh_miss = request.absent and activity.info().attempt == 1 and request.kind not in _DUPLICABLE_KINDS
        existing = [] if fresh_miss else _find(conn, request.find)
        if existing:
            return existing[0]
        try:
            created = to_object(request.kind, proxy_call(conn, "create", request.kind)(**request.fields))
        except openstack.exceptions.ConflictException as exc:
            # Someone else created it between our lookup and our create: adopt theirs.
            existing = _find(conn, request.find)
            if existing:
                return existing[0]
            _conflict_without_match(what, exc)
        if request.kind in _DUPLICABLE_KINDS:
            # A concurrent creator may have made a twin; everyone converges on the lowest ID.
            return (_find(conn, request.find) or [created])[0]
        return created


def _conflict_without_match(what: str, exc: openstack.exceptions.HttpException) -> NoReturn:
    detail = str(exc.details).strip()[: cloud.MAX_PROVIDER_DETAIL] if exc.details else None
    raise conflict(
        f"create {what}: Keystone reports a conflict but no exact match exists "
        f"(a name differing only in letter case, or in another scope?)" + (f": {detail}" if detail else "")
    )


@implements(UPDATE)
def update(request: Update) -> KeystoneObject:
    """PATCH only the given fields; the object keeps its ID."""
    _check_fields(request.kind, request.fields, creating=False)
    with openstack_errors(f"update {request.kind} {request.id}"):
        conn = cloud.admin_connection()
        return to_object(request.kind, proxy_call(conn, "update", request.kind)(request.id, **request.fields))


@implements(DELETE)
def delete(request: Delete) -> bool:
    """Delete by ID. True if deleted now, False if it was already gone."""
    with openstack_errors(f"delete {request.kind} {request.id}"):
        conn = cloud.admin_connection()
        try:
            proxy_call(conn, "delete", request.kind)(request.id, ignore_missing=False)
        except openstack.exceptions.NotFoundException:
            return False
        return True


# --- grants --------------------------------------------------------------------------------------


def _grant_path(grant: Grant) -> str:
    if grant.project_id is not None:
        scope = f"/projects/{quote(grant.project_id, safe='')}"
    elif grant.domain_id is not None:
        scope = f"/domains/{quote(grant.domain_id, safe='')}"
    else:
        scope = "/system"
    if grant.user_id is not None:
        subject = f"/users/{quote(grant.user_id, safe='')}"
    else:
        subject = f"/groups/{quote(str(grant.group_id), safe='')}"
    return f"{scope}{subject}/roles/{quote(grant.role_id, safe='')}"


def _describe_grant(grant: Grant) -> str:
    subject = f"user {grant.user_id}" if grant.user_id else f"group {grant.group_id}"
    if grant.project_id:
        scope = f"project {grant.project_id}"
    elif grant.domain_id:
        scope = f"domain {grant.domain_id}"
    else:
        scope = "system"
    return f"role {grant.role_id} for {subject} on {scope}"


# The identity proxy's grant helpers turn every error into False, so grants go through the proxy's
# request methods with an explicit path and the status mapped here.


@implements(CHECK_GRANT)
def check_grant(request: Grant) -> bool:
    """True if the grant exists. False also when the role, subject or scope does not exist."""
    with openstack_errors(f"check grant of {_describe_grant(request)}"):
        response = cloud.admin_connection().identity.head(_grant_path(request))
        if response.status_code == 404:
            return False
        _raise_for_status(response)
        return True


@implements(PUT_GRANT)
def put_grant(request: Grant) -> None:
    """Grant the role (PUT is idempotent)."""
    with openstack_errors(f"grant {_describe_grant(request)}"):
        _raise_for_status(cloud.admin_connection().identity.put(_grant_path(request)))


@implements(REVOKE_GRANT)
def revoke_grant(request: Grant) -> bool:
    """Revoke the grant. True if revoked now, False if it was not there."""
    with openstack_errors(f"revoke {_describe_grant(request)}"):
        response = cloud.admin_connection().identity.delete(_grant_path(request))
        if response.status_code == 404:
            return False
        _raise_for_status(response)
        return True


# --- passwords -----------------------------------------------------------------------------------


def _read_password(secret: SecretRef) -> str:
    """The password held by the Secret (activities/kube.py raises typed NotFound/Invalid errors)."""
    from osprov.activities.kube import read_secret_value

    value = read_secret_value(secret.namespace, secret.name, secret.key)
    if not value:
        raise invalid(f"Secret {secret.namespace}/{secret.name} key {secret.key} is empty")
    return value


@implements(PROBE_PASSWORD)
def probe_password(request: Probe) -> ProbeResult:
    """Authenticate as the user with the Secret's password: "valid", or "unauthorized" on HTTP 401 only.

    Unscoped and without catalog, so a valid password cannot fail for reasons of scope. Anything but a
    clear 401 (Keystone down, timeout, 5xx) raises, so the workflow never writes a password on doubt.
    """
    action = f"probe password of user {request.user_name} ({request.user_id}) in domain {request.domain_id}"
    password = _read_password(request.secret)
    endpoint = cloud.auth_endpoint()
    plugin = v3.Password(
        auth_url=endpoint.auth_url,
        user_id=request.user_id,
        password=password,
        unscoped=True,
        include_catalog=False,
    )
    del password
    with requests.Session() as http, openstack_errors(action, secret_in_request=True):
        session = ksa_session.Session(
            auth=plugin, session=http, verify=endpoint.verify, cert=endpoint.cert, timeout=endpoint.timeout
        )
        try:
            plugin.get_access(session)
        except ksa_exceptions.Unauthorized:
            return ProbeResult(outcome="unauthorized")
    return ProbeResult(outcome="valid")


@implements(SET_PASSWORD)
def set_password(request: SetPassword) -> None:
    """PATCH the user's password to the Secret's value (Keystone then revokes the user's tokens)."""
    password = _read_password(request.secret)
    with openstack_errors(f"set password of user {request.user_id}", secret_in_request=True):
        response = cloud.admin_connection().identity.patch(
            f"/users/{quote(request.user_id, safe='')}",
            json={"user": {"password": password}},
            log=False,  # keystoneauth's debug log would print the request body
        )
        del password
        _raise_for_status(response)


KEYSTONE_ACTIVITIES = [
    find,
    create,
    update,
    delete,
    check_grant,
    put_grant,
    revoke_grant,
    probe_password,
    set_password,
]
