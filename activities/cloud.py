"""openstacksdk connections for activities, one per credential mode (docs/identity.md):

- `admin_connection`: the controller's own credentials (clouds.yaml): Keystone objects, and building and
  tearing down Identities (their project, user, grants and application credentials), never a tenant's
  cloud objects;
- `identity_connection`: an Identity's application credential, read from its Secret inside the activity:
  every call of a cloud resource that names the Identity (identityRef);
- `project_connection`: the controller's credentials re-scoped to one existing project, only for a resource
  whose spec.project the operator's tenancy mapping allows (checked by the workflow before any call).

Activities are sync functions run in the worker's thread pool. A keystoneauth session wraps a
requests.Session, which is not documented as thread-safe, so connections are cached per thread (and per
clouds.yaml file, cloud and scope or credential). The controller's own connections (admin and project)
share one keystoneauth auth plugin per scope across threads: keystoneauth fetches and renews a plugin's
token under the plugin's lock, so the worker logs in once per scope, not once per thread. The settings
are read from the environment on every call, so a changed OS_CLOUD / OS_CLIENT_CONFIG_FILE (tests, a
reconfigured worker) yields new connections rather than stale ones. An Identity's connection is cached
by its Secret's version: a rotated credential is a new Secret version, hence a new connection, with no
restart.

Environment:
  OS_CLOUD                  cloud name in clouds.yaml (default "osprov-admin")
  OS_CLIENT_CONFIG_FILE     path of clouds.yaml (default: openstacksdk's search path)
  OSPROV_API_TIMEOUT        seconds per HTTP request to OpenStack (default 10)
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import openstack.config
import openstack.connection
import openstack.exceptions
import requests
import structlog
from keystoneauth1 import exceptions as ksa_exceptions
from temporalio.exceptions import ApplicationError

from osprov.activities.errors import conflict, error, invalid, not_found, transient
from osprov.api.errors import UNAUTHORIZED
from osprov.api.identity_io import Credential

log = structlog.get_logger("osprov.activities.cloud")

DEFAULT_CLOUD = "osprov-admin"
# Per HTTP request; a create is up to three requests plus authentication, and workflows give an activity
# attempt 45 s (workflows/calls.py), so a hung Keystone surfaces as Transient within the attempt.
DEFAULT_API_TIMEOUT_SECONDS = 10.0
# The provider's explanation of an error is shown to users only up to this length.
MAX_PROVIDER_DETAIL = 300
# Project-scoped and Identity connections kept per thread, each (least recently used ones are dropped).
MAX_PROJECT_CONNECTIONS_PER_THREAD = 64
MAX_SHARED_AUTH = 256  # the controller's scopes whose token the threads share (least recently used go)
# The keys of an Identity's Secret the activities read (activities/identity.py writes them).
APP_CREDENTIAL_ID_KEY = "OS_APPLICATION_CREDENTIAL_ID"
APP_CREDENTIAL_SECRET_KEY = "OS_APPLICATION_CREDENTIAL_SECRET"

# Auth options that choose a scope; removed before re-scoping the controller's credentials to a project.
_SCOPE_OPTIONS = (
    "project_id",
    "project_name",
    "project_domain_id",
    "project_domain_name",
    "domain_id",
    "domain_name",
    "system_scope",
    "tenant_id",
    "tenant_name",
)


@dataclass(frozen=True)
class CloudSettings:
    """Which credentials to use: a cloud of a clouds.yaml file, and the per-request timeout."""

    cloud: str
    config_file: str | None
    api_timeout: float

    @classmethod
    def from_env(cls) -> CloudSettings:
        return cls(
            cloud=os.environ.get("OS_CLOUD") or DEFAULT_CLOUD,
            config_file=os.environ.get("OS_CLIENT_CONFIG_FILE") or None,
            api_timeout=float(os.environ.get("OSPROV_API_TIMEOUT") or DEFAULT_API_TIMEOUT_SECONDS),
        )


@dataclass(frozen=True)
class AuthEndpoint:
    """What a probe needs to authenticate as another user against the controller's Keystone."""

    auth_url: str  # the Identity v3 root, e.g. http://127.0.0.1:5000/v3
    verify: bool | str  # requests' verify: True, False or a CA bundle path
    cert: str | tuple[str, str] | None
    timeout: float


_local = threading.local()
_shared_auth: OrderedDict[Any, Any] = OrderedDict()  # scope key -> keystoneauth auth plugin
_shared_auth_lock = threading.Lock()


T = TypeVar("T")


async def poll(
    read: Callable[[], T],
    done: Callable[[T], bool],
    interval_s: float,
    within_s: float,
    busy_seen_at: datetime | None = None,
) -> T:
    """A wait on the cloud inside one activity: `read` (a blocking call, run on the event loop's executor so
    the wait holds no activity thread) every `interval_s` until `done`, or `within_s` passed; the last read
    is returned either way (the workflow decides). The worker's interceptor heartbeats meanwhile.

    `busy_seen_at`: when the workflow last saw the object busy (the create or change it just made was
    answered). The first read is at once (a quick change may be done already); the second comes one
    interval after `busy_seen_at`, not one interval after the first read, so the reads keep the cadence of
    a script that writes and then reads every interval: the workflow's own round trip to the wait is not
    added to every read after the first."""
    deadline = time.monotonic() + within_s
    second_at = None  # monotonic time of the second read, when it keeps the change's cadence
    if busy_seen_at is not None:
        second_at = time.monotonic() + second_read_delay(busy_seen_at, interval_s, datetime.now(UTC))
    while True:
        found = await asyncio.to_thread(read)
        if done(found) or time.monotonic() >= deadline:
            return found
        if second_at is not None:
            await asyncio.sleep(max(0.0, second_at - time.monotonic()))
            second_at = None
        else:
            await asyncio.sleep(interval_s)


def second_read_delay(busy_seen_at: datetime, interval_s: float, now: datetime) -> float:
    """Seconds from now until one interval after `busy_seen_at`; a whole interval when that is less than half
    an interval away (two reads back to back tell nothing more) or when `busy_seen_at` is long past (a
    retried attempt, a restarted worker). A clock behind the workflow's cannot stretch it past an interval."""
    delay = min(interval_s, (busy_seen_at - now).total_seconds() + interval_s)
    return delay if delay >= interval_s / 2 else interval_s


def _thread_cache(name: str) -> OrderedDict[Any, openstack.connection.Connection]:
    cache = getattr(_local, name, None)
    if cache is None:
        cache = OrderedDict()
        setattr(_local, name, cache)
    return cache


def _cloud_region(settings: CloudSettings, scope: dict[str, str] | None = None) -> Any:
    """Load one cloud of clouds.yaml into a CloudRegion, optionally with its scope replaced.

    Raises Invalid if it cannot be loaded.
    """
    if scope is None:
        return load_region(settings, None)

    def rescope(entry: dict[str, Any]) -> None:
        # get_one's overrides can only add auth options, and a leftover project_id or system_scope would win.
        auth = {k: v for k, v in entry.get("auth", {}).items() if k not in _SCOPE_OPTIONS}
        entry["auth"] = {**auth, **scope}

    return load_region(settings, rescope)


def with_auth(auth_type: str, auth: dict[str, str]) -> Callable[[dict[str, Any]], None]:
    """A clouds.yaml edit: the controller's cloud (its auth_url, region, interface, TLS), other credentials."""

    def edit(entry: dict[str, Any]) -> None:
        entry["auth"] = {"auth_url": entry.get("auth", {}).get("auth_url", ""), **auth}
        entry["auth_type"] = auth_type

    return edit


def load_region(settings: CloudSettings, edit: Callable[[dict[str, Any]], None] | None) -> Any:
    try:
        loader = openstack.config.OpenStackConfig(
            config_files=[settings.config_file] if settings.config_file else None,
            load_envvars=False,
        )
        entry = loader.cloud_config.get("clouds", {}).get(settings.cloud)
        if edit is not None and entry is not None:
            edit(entry)  # this loader is ours alone: its entry is rewritten in place
        return loader.get_one(cloud=settings.cloud, api_timeout=settings.api_timeout)
    except (openstack.exceptions.ConfigException, ksa_exceptions.ClientException) as exc:
        # These name clouds and options, never credential values.
        raise invalid(f"cannot load cloud {settings.cloud!r} from {_where(settings)}: {exc}") from None
    except Exception as exc:
        # e.g. a YAML syntax error, whose text quotes the offending line (which may hold a password)
        raise invalid(
            f"cannot load cloud {settings.cloud!r} from {_where(settings)}: {type(exc).__name__}"
        ) from None


def _where(settings: CloudSettings) -> str:
    return (
        f"clouds.yaml at {settings.config_file}"
        if settings.config_file
        else "clouds.yaml (default search path)"
    )


def admin_connection() -> openstack.connection.Connection:
    """The controller's own (admin) connection for this thread."""
    settings = CloudSettings.from_env()
    cache = _thread_cache("admin")
    key = settings
    conn = cache.get(key)
    if conn is None:
        conn = openstack.connection.Connection(config=_sharing_auth(("admin", key), _cloud_region(settings)))
        cache[key] = conn
    return conn


def _sharing_auth(key: Any, region: Any) -> Any:
    """`region` (a CloudRegion not yet in use) with the auth plugin every thread shares for `key`: its token,
    once fetched, serves them all (keystoneauth's BaseIdentityPlugin.get_access holds the plugin's lock
    while it fetches or renews one). Each thread still builds its own session around it."""
    with _shared_auth_lock:
        auth = _shared_auth.get(key)
        if auth is None:
            auth = _shared_auth[key] = region.get_auth()
            while len(_shared_auth) > MAX_SHARED_AUTH:
                _shared_auth.popitem(last=False)
        else:
            _shared_auth.move_to_end(key)
    region._auth = auth  # what CloudRegion.get_session() builds the session around
    return region


def forget_shared_auth() -> None:
    """Drop the shared auth plugins: the next connection of each scope logs in again (after a 401)."""
    with _shared_auth_lock:
        _shared_auth.clear()


def project_connection(project_name: str, domain_name: str) -> openstack.connection.Connection:
    """The controller's credentials re-scoped to one project (a resource's spec.project, where the tenancy
    mapping allows it). Cached per thread by (credentials, project, domain): the token is reused until it
    nears expiry."""
    settings = CloudSettings.from_env()
    scope = {"project_name": project_name, "project_domain_name": domain_name}
    return _cached(
        "project",
        (settings, project_name, domain_name),
        lambda: openstack.connection.Connection(
            config=_sharing_auth(
                ("project", settings, project_name, domain_name), _cloud_region(settings, scope)
            )
        ),
    )


def _cached(
    name: str, key: Any, make: Callable[[], openstack.connection.Connection]
) -> openstack.connection.Connection:
    cache = _thread_cache(name)
    conn = cache.get(key)
    if conn is not None:
        cache.move_to_end(key)
        return conn
    conn = make()
    cache[key] = conn
    while len(cache) > MAX_PROJECT_CONNECTIONS_PER_THREAD:
        _, evicted = cache.popitem(last=False)
        evicted.close()
    return conn


def identity_connection(credential: Credential) -> openstack.connection.Connection:
    """An Identity's application credential, read from its Secret here (it never leaves the activity).

    Cached per thread by (controller settings, Secret and its version, project): the Identity publishes a
    rotated credential as a new Secret version, which its users are told, so their next call authenticates
    with it. The token must be scoped to the Identity's project: a Secret edited to hold some other
    credential is refused.
    """
    settings = CloudSettings.from_env()
    return _cached("identity", (settings, credential), lambda: _authenticated(settings, credential))


def _authenticated(settings: CloudSettings, credential: Credential) -> openstack.connection.Connection:
    from osprov.activities.kube import read_secret_data

    where = f"Secret {credential.namespace}/{credential.secret} of Identity {credential.identity}"
    data, _ = read_secret_data(credential.namespace, credential.secret)
    if not data.get(APP_CREDENTIAL_ID_KEY) or not data.get(APP_CREDENTIAL_SECRET_KEY):
        raise not_found(f"{where} holds no application credential yet — waiting for the Identity")
    auth = {
        "application_credential_id": data[APP_CREDENTIAL_ID_KEY],
        "application_credential_secret": data[APP_CREDENTIAL_SECRET_KEY],
    }
    del data
    conn = openstack.connection.Connection(
        config=load_region(settings, with_auth("v3applicationcredential", auth))
    )
    del auth
    try:
        with openstack_errors(f"authenticate with the application credential in {where}"):
            project_id = conn.current_project_id  # the token request
    except ApplicationError:
        conn.close()
        raise
    if project_id != credential.project_id:
        conn.close()
        raise invalid(f"{where} holds a credential of another project; only the Identity writes that Secret")
    return conn


def scoped_connection(
    project: str, domain: str, credential: Credential | None
) -> openstack.connection.Connection:
    """What a cloud resource's call runs on: its Identity's application credential, or — for spec.project,
    which the workflow checked against the tenancy mapping — the controller's credentials re-scoped."""
    if credential is not None:
        return identity_connection(credential)
    return project_connection(project, domain)


def auth_endpoint() -> AuthEndpoint:
    """The Identity v3 URL and TLS settings of the controller's cloud (no credentials)."""
    settings = CloudSettings.from_env()
    region = _cloud_region(settings)
    auth_url = str(region.config.get("auth", {}).get("auth_url") or "").rstrip("/")
    if not auth_url:
        raise invalid(f"cloud {settings.cloud!r} in clouds.yaml has no auth_url")
    if not auth_url.endswith("/v3"):
        auth_url += "/v3"
    verify, cert = region.get_requests_verify_args()
    return AuthEndpoint(auth_url=auth_url, verify=verify, cert=cert, timeout=settings.api_timeout)


def close_thread_connections() -> None:
    """Close this thread's cached connections (tests; a worker thread that ends)."""
    for name in ("admin", "project", "identity"):
        cache = _thread_cache(name)
        while cache:
            _, conn = cache.popitem()
            conn.close()


# --- error mapping (shared by every OpenStack activity module) -----------------------------------


def error_for_status(
    status: int | None, action: str, detail: str | None, service: str = "Keystone"
) -> ApplicationError:
    """The typed error for an HTTP status: 404 NotFound, 409 Conflict, 401 Unauthorized, other 4xx
    Invalid, 5xx/408/429/unknown Transient (the only retryable one)."""
    suffix = f": {detail[:MAX_PROVIDER_DETAIL]}" if detail else ""
    if status == 404:
        return not_found(f"{action}: not found in {service}{suffix}")
    if status == 409:
        return conflict(f"{action}: {service} reports a conflict{suffix}")
    if status == 401:
        return error(UNAUTHORIZED, f"{action}: Keystone rejected the credentials (HTTP 401)")
    if status is not None and 400 <= status < 500 and status not in (408, 429):
        return invalid(f"{action}: {service} rejected the request (HTTP {status}){suffix}")
    return transient(f"{action}: {service} is unavailable (HTTP {status or 'unknown'})")


@contextmanager
def openstack_errors(
    action: str, *, service: str = "Keystone", secret_in_request: bool = False
) -> Iterator[None]:
    """Map openstacksdk/keystoneauth exceptions raised inside the block onto typed activity errors.

    Errors are raised `from None`: a chained library exception could quote request data into Temporal
    history. With secret_in_request, the provider's own explanation is neither shown nor logged (a
    validation error could quote the request body).
    """
    try:
        yield
    except ApplicationError:
        raise
    except openstack.exceptions.HttpException as exc:
        detail = None if secret_in_request else _provider_detail(exc.details)
        log.warning("openstack call failed", action=action, status=exc.status_code, detail=detail)
        _forget_rejected_credentials(exc.status_code)
        raise error_for_status(exc.status_code, action, detail, service) from None
    except ksa_exceptions.HttpError as exc:  # raised by keystoneauth itself, i.e. while authenticating
        log.warning("openstack authentication failed", action=action, status=exc.http_status)
        _forget_rejected_credentials(exc.http_status)
        raise error_for_status(exc.http_status, action, None, "Keystone") from None
    except (
        ksa_exceptions.ConnectionError,
        ksa_exceptions.RetriableConnectionFailure,
        ksa_exceptions.DiscoveryFailure,
        requests.exceptions.RequestException,
    ) as exc:
        log.warning("openstack unreachable", action=action, error=type(exc).__name__)
        raise transient(f"{action}: {service} is unreachable ({type(exc).__name__})") from None
    except ksa_exceptions.EndpointNotFound:
        raise invalid(f"{action}: the service catalog has no endpoint for {service}") from None
    except (ksa_exceptions.ClientException, openstack.exceptions.SDKException) as exc:
        log.warning("openstack call failed", action=action, error=type(exc).__name__)
        raise transient(f"{action}: unexpected {type(exc).__name__} talking to {service}") from None


def _forget_rejected_credentials(status: int | None) -> None:
    """After a 401 drop this thread's connections and the shared auth plugins, so the next attempt re-reads
    clouds.yaml (e.g. a rotated controller password) instead of retrying the rejected credentials forever."""
    if status == 401:
        close_thread_connections()
        forget_shared_auth()


def _provider_detail(details: object) -> str | None:
    text = str(details).strip() if details else ""
    return text or None
