"""Identity activities: the application credential (a per-user object of its own) and its Secret, and the
Kubernetes reads the Identity's protocol needs. The project, the user and the grants are not made here: the
Identity claims them through the ownership path (workflows/keystone/objects.py) like every Keystone object.

Keystone lets only the user itself create its application credentials (policy `create_application_credential:
user_id:%(user_id)s`), so issuing one authenticates as the Identity's user. That user has no stored password:
its password is derived from the worker's OSPROV_IDENTITY_KEY (HMAC of the user's ID) and set by the
controller only when it does not authenticate (a new user, a changed key). Without the key a fresh random
password is set for every issue and forgotten at once; Keystone then revokes the user's tokens, which the
consumers of the previous credential renew on their next request. Either way no password is ever stored,
and the credential's secret exists only inside `issue_credential` until it is in the Secret.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import time
from datetime import UTC, datetime
from typing import Any

import kubernetes.client
import openstack.connection
import openstack.exceptions
import structlog
import yaml
from keystoneauth1 import exceptions as ksa_exceptions
from kubernetes.client.exceptions import ApiException

from osprov.activities import cloud
from osprov.activities.cloud import APP_CREDENTIAL_ID_KEY, APP_CREDENTIAL_SECRET_KEY, openstack_errors
from osprov.activities.contract import implements
from osprov.activities.errors import conflict, transient
from osprov.activities.kube import MERGE_PATCH, api_client, decoded
from osprov.api.identity import IDENTITY_GROUP, keypair_name
from osprov.api.identity_io import (
    CHECK_SECRET,
    DELETE_KEYPAIR,
    FIND_IDENTITY,
    ISSUE_CREDENTIAL,
    LIVING_USERS,
    REVOKE_CREDENTIAL,
    CheckSecret,
    CheckUsers,
    DeleteKeypair,
    FindIdentity,
    IdentityFound,
    IdentityUser,
    IssueCredential,
    IssuedCredential,
    RevokeCredential,
    SecretCheck,
    SecretTarget,
)
from osprov.api.registry import kind_info

log = structlog.get_logger("osprov.activities.identity")

IDENTITY_KEY_ENV = "OSPROV_IDENTITY_KEY"
CREDENTIAL_ANNOTATION = f"{IDENTITY_GROUP}/credential-id"
EXPIRES_ANNOTATION = f"{IDENTITY_GROUP}/expires-at"
# Keystone records a password change as a revocation event with sub-second precision, while a Fernet token's
# issue time is whole seconds: a token issued in the same second as the change is refused. Retry the first
# call as the user this often, this far apart (a new second is at most one second away).
TOKEN_ATTEMPTS = 6
TOKEN_RETRY_SECONDS = 0.3
# The user options that keep a machine user usable whatever the cloud's password rules (PCI-DSS settings).
USER_OPTIONS = {
    "ignore_change_password_upon_first_use": True,
    "ignore_password_expiry": True,
    "ignore_lockout_failure_attempts": True,
}


# --- Kubernetes reads -------------------------------------------------------------------------------------
def _custom() -> kubernetes.client.CustomObjectsApi:
    return kubernetes.client.CustomObjectsApi(api_client())


def _get(kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    info = kind_info(kind)
    try:
        obj: dict[str, Any] = _custom().get_namespaced_custom_object(  # type: ignore[assignment]
            info.group, info.version, namespace, info.plural, name
        )
    except ApiException as err:
        if err.status == 404:
            return None
        raise transient(f"cannot read {kind} {namespace}/{name} (HTTP {err.status})") from None
    return obj


@implements(FIND_IDENTITY)
def find_identity(request: FindIdentity) -> IdentityFound:
    """The Identity a cloud resource names: its UID (its workflow's ID) and whether it is being deleted."""
    obj = _get("Identity", request.namespace, request.name)
    if obj is None:
        return IdentityFound(exists=False)
    meta = obj.get("metadata") or {}
    return IdentityFound(exists=True, uid=str(meta["uid"]), deleting=bool(meta.get("deletionTimestamp")))


@implements(LIVING_USERS)
def living_users(request: CheckUsers) -> list[IdentityUser]:
    """The users whose resource (same name and UID) still exists: the deletion guard drops the others."""
    alive = []
    for user in request.users:
        obj = _get(user.kind, request.namespace, user.name)
        if obj is not None and (obj.get("metadata") or {}).get("uid") == user.uid:
            alive.append(user)
    return alive


# --- the Secret ----------------------------------------------------------------------------------------------
def _read(target: SecretTarget) -> tuple[dict[str, str], str, bool] | None:
    """(data, resourceVersion, owned by the Identity) of the Secret, None when it does not exist."""
    try:
        secret = kubernetes.client.CoreV1Api(api_client()).read_namespaced_secret(
            target.name, target.namespace
        )
    except ApiException as err:
        if err.status == 404:
            return None
        raise transient(f"cannot read Secret {target.namespace}/{target.name} (HTTP {err.status})") from None
    owners = (secret.metadata.owner_references or []) if secret.metadata else []
    owned = any(o.uid == target.owner_uid for o in owners)
    version = str(secret.metadata.resource_version if secret.metadata else "")
    return decoded(secret, target.namespace, target.name), version, owned


def _not_ours(target: SecretTarget) -> Exception:
    return conflict(
        f"Secret {target.namespace}/{target.name} exists and does not belong to Identity {target.owner_name}: "
        "osprov never overwrites it; delete it or set spec.secretName to another name"
    )


@implements(CHECK_SECRET)
def check_secret(request: CheckSecret) -> SecretCheck:
    """Whether the Identity's Secret exists, is its own and holds the credential (its version if so)."""
    found = _read(request.secret)
    if found is None:
        return SecretCheck(holds=False)
    data, version, owned = found
    if not owned:
        raise _not_ours(request.secret)
    holds = data.get(APP_CREDENTIAL_ID_KEY) == request.credential_id and bool(
        data.get(APP_CREDENTIAL_SECRET_KEY)
    )
    return SecretCheck(holds=holds, version=version if holds else None)


def _secret_data(credential_id: str, credential_secret: str) -> dict[str, str]:
    """clouds.yaml (cloud `openstack`) and the OS_* variables, for osprov and for the tenant's own pods."""
    region = cloud.admin_connection().config
    auth_url = cloud.auth_endpoint().auth_url
    entry: dict[str, Any] = {
        "auth_type": "v3applicationcredential",
        "auth": {
            "auth_url": auth_url,
            "application_credential_id": credential_id,
            "application_credential_secret": credential_secret,
        },
        "identity_api_version": 3,
    }
    env = {
        "OS_AUTH_TYPE": "v3applicationcredential",
        "OS_AUTH_URL": auth_url,
        APP_CREDENTIAL_ID_KEY: credential_id,
        APP_CREDENTIAL_SECRET_KEY: credential_secret,
        "OS_IDENTITY_API_VERSION": "3",
    }
    region_name = region.get_region_name()
    if isinstance(region_name, str) and region_name:
        entry["region_name"] = env["OS_REGION_NAME"] = region_name
    interface = region.get_interface()
    if isinstance(interface, str) and interface:
        entry["interface"] = env["OS_INTERFACE"] = interface
    return {"clouds.yaml": yaml.safe_dump({"clouds": {"openstack": entry}}), **env}


def _version(secret: kubernetes.client.V1Secret) -> str:
    return str(secret.metadata.resource_version) if secret.metadata else ""


def _publish(target: SecretTarget, credential_id: str, data: dict[str, str], expires_at: datetime) -> str:
    """Create the Secret, or replace the data of the one this Identity owns; returns its resourceVersion."""
    core = kubernetes.client.CoreV1Api(api_client())
    meta: dict[str, Any] = {
        "annotations": {CREDENTIAL_ANNOTATION: credential_id, EXPIRES_ANNOTATION: expires_at.isoformat()},
    }
    found = _read(target)
    try:
        if found is None:
            owner = {
                "apiVersion": f"{IDENTITY_GROUP}/v1alpha1",
                "kind": "Identity",
                "name": target.owner_name,
                "uid": target.owner_uid,
                "controller": True,
            }
            labels = {"app.kubernetes.io/managed-by": "osprov"}
            body = {
                "metadata": {**meta, "name": target.name, "labels": labels, "ownerReferences": [owner]},
                "type": "Opaque",
                "stringData": data,
            }
            created = core.create_namespaced_secret(target.namespace, body)  # type: ignore[arg-type]
            return _version(created)
        _, version, owned = found
        if not owned:
            raise _not_ours(target)
        patch = {"metadata": {**meta, "resourceVersion": version}, "stringData": data}
        patched = core.patch_namespaced_secret(
            target.name, target.namespace, patch, _content_type=MERGE_PATCH
        )
        return _version(patched)
    except ApiException as err:
        # 409: someone wrote it meanwhile (the resourceVersion precondition), or made it first: retried.
        raise transient(
            f"cannot write Secret {target.namespace}/{target.name} (HTTP {err.status}); retrying"
        ) from None


# --- Keystone: the application credential ----------------------------------------------------------------
def _identity(conn: openstack.connection.Connection) -> Any:
    return conn.identity  # the v3 proxy (clouds.yaml pins identity v3; the SDK types it as a v2/v3 union)


def _derived_password(user_id: str) -> str | None:
    key = os.environ.get(IDENTITY_KEY_ENV, "")
    if not key:
        return None
    digest = hmac.new(key.encode(), f"osprov-identity-user:{user_id}".encode(), hashlib.sha256).digest()
    return "Os1-" + base64.urlsafe_b64encode(digest).decode().rstrip("=")  # letters, digits and symbols


def _as_user(user_id: str, project_id: str, password: str) -> openstack.connection.Connection:
    settings = cloud.CloudSettings.from_env()
    auth = {"user_id": user_id, "password": password, "project_id": project_id}
    return openstack.connection.Connection(
        config=cloud.load_region(settings, cloud.with_auth("password", auth))
    )


def _authenticates(conn: openstack.connection.Connection) -> bool:
    try:
        conn.authorize()
    except (ksa_exceptions.Unauthorized, openstack.exceptions.HttpException) as exc:
        status = getattr(exc, "http_status", None) or getattr(exc, "status_code", None)
        if status == 401:
            return False
        raise
    return True


def _user_connection(user_id: str, project_id: str) -> openstack.connection.Connection:
    """A connection as the Identity's user, scoped to its project (see the module docstring)."""
    derived = _derived_password(user_id)
    if derived is not None:
        conn = _as_user(user_id, project_id, derived)
        if _authenticates(conn):
            return conn
        conn.close()
    password = derived or secrets.token_urlsafe(32) + "-Aa1"
    admin = cloud.admin_connection()
    response = admin.identity.patch(
        f"/users/{user_id}",
        json={"user": {"password": password, "options": USER_OPTIONS}},
        log=False,  # keystoneauth's debug log would print the request body
    )
    openstack.exceptions.raise_from_response(response)
    log.info("identity user password set", user_id=user_id, derived=derived is not None)
    return _as_user(user_id, project_id, password)


def _create(conn: openstack.connection.Connection, request: IssueCredential) -> Any:
    attrs = {
        "roles": [{"name": role} for role in request.roles],
        "expires_at": request.expires_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f"),
        "unrestricted": False,
        "description": request.description,
    }
    for attempt in range(TOKEN_ATTEMPTS):
        try:
            return _identity(conn).create_application_credential(request.user_id, request.name, **attrs)
        except openstack.exceptions.HttpException as exc:
            if exc.status_code != 401 or attempt == TOKEN_ATTEMPTS - 1:
                raise
        time.sleep(TOKEN_RETRY_SECONDS)  # the token was issued in the password change's second
        conn.session.invalidate()
    raise AssertionError("unreachable")


def _named(admin: openstack.connection.Connection, user_id: str, name: str) -> list[Any]:
    found = [c for c in _identity(admin).application_credentials(user_id) if c.name == name]
    return sorted(found, key=lambda c: c.id)


@implements(ISSUE_CREDENTIAL)
def issue_credential(request: IssueCredential) -> IssuedCredential:
    """Create-if-absent by name, then publish. A credential of that name the Secret does not hold was made
    by an attempt that died before publishing it: its secret is lost, so it is deleted and made again."""
    target = request.secret
    action = f"issue application credential {request.name} of user {request.user_id}"
    with openstack_errors(action, secret_in_request=True):
        found = _read(target)
        if found is not None and not found[2]:
            raise _not_ours(target)  # before anything is written to Keystone
        admin = cloud.admin_connection()
        for existing in _named(admin, request.user_id, request.name):
            if found is not None and found[0].get(APP_CREDENTIAL_ID_KEY) == existing.id:
                return IssuedCredential(
                    id=existing.id, name=request.name, expires_at=request.expires_at, secret_version=found[1]
                )
            _identity(admin).delete_application_credential(request.user_id, existing.id, ignore_missing=True)
            log.info("unpublished application credential deleted", credential_id=existing.id)
        conn = _user_connection(request.user_id, request.project_id)
        try:
            created = _create(conn, request)
        finally:
            conn.close()
        credential_id, credential_secret = str(created.id), str(created.secret)
        del created
    data = _secret_data(credential_id, credential_secret)
    del credential_secret
    version = _publish(target, credential_id, data, request.expires_at)
    log.info("application credential published", credential_id=credential_id, secret=target.name)
    return IssuedCredential(
        id=credential_id, name=request.name, expires_at=request.expires_at, secret_version=version
    )


@implements(REVOKE_CREDENTIAL)
def revoke_credential(request: RevokeCredential) -> bool:
    """Delete the application credential (the controller may delete a user's); False if already gone."""
    with openstack_errors(f"revoke application credential {request.credential_id}"):
        admin = cloud.admin_connection()
        try:
            _identity(admin).delete_application_credential(
                request.user_id, request.credential_id, ignore_missing=False
            )
        except openstack.exceptions.NotFoundException:
            return False
        return True


@implements(DELETE_KEYPAIR)
def delete_keypair(request: DeleteKeypair) -> bool:
    """DELETE the Identity's keypair as its own user (keypairs are per user: no other token sees it); False if
    there is none (a Server never made it, or an earlier attempt deleted it)."""
    name = keypair_name(request.identity_uid)
    with openstack_errors(f"delete Nova keypair {name}", service="Nova"):
        resp = cloud.identity_connection(request.credential).compute.delete(f"/os-keypairs/{name}")
        if resp.status_code == 404:
            return False
        openstack.exceptions.raise_from_response(resp)
        log.info("keypair deleted", name=name)
        return True


ACTIVITIES = [find_identity, living_users, check_secret, issue_credential, revoke_credential, delete_keypair]
