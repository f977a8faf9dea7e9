"""The checks of `osprov doctor`: each one assumption of osprov about a cloud, tried on the real cloud.

Each returns a doctor_report.Check. Objects a check makes are throwaways named `osprov-doctor-<random>`
in the Identity's project, registered by name with `Throwaways` before they are created, so whatever
exists under that exact name is deleted at the end whatever happens (a failed check, an error, a lost
answer, Ctrl-C). Raw Compute REST at the
activities' pinned microversion, so the fields are read exactly as the worker reads them (activities/nova.py).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Any, get_args

import openstack.connection
import openstack.exceptions
import requests

from osprov.activities.nova import MICROVERSION
from osprov.api import octavia_io
from osprov.doctor_report import Check, Credentials, failed, passed, skipped, warned

PREFIX = "osprov-doctor-"
TASK_STATE = "OS-EXT-STS:task_state"
LAUNCHED_AT = "OS-SRV-USG:launched_at"
BOOT_TIMEOUT_S = 300.0
DELETE_TIMEOUT_S = 180.0
POLL_S = 1.0

# What osprov's LoadBalancer workflow sends Octavia (api/octavia_io.py), so a new protocol there is checked.
LISTENER_PROTOCOLS = get_args(octavia_io.ListenerProtocol)
POOL_PROTOCOLS = get_args(octavia_io.PoolProtocol)
MONITOR_TYPES = get_args(octavia_io.MonitorType)
# Octavia's API lists providers but not the protocols each supports (a provider refuses an unsupported one
# only when a listener or pool is created): what the known providers document.
_ALL = frozenset({"TCP", "UDP", "PROXYV2", "UDP-CONNECT", "ROUND_ROBIN"})
KNOWN_PROVIDERS: dict[str, frozenset[str]] = {
    "amphora": _ALL,
    "octavia": _ALL,  # the amphora driver's old alias
    "amphorav2": _ALL,
    "noop_driver": _ALL,
    # ovn-octavia-provider: TCP/UDP/SCTP listeners and pools, SOURCE_IP_PORT only, no PROXY pools
    "ovn": frozenset({"TCP", "UDP", "UDP-CONNECT"}),
}


def suffix() -> str:
    return secrets.token_hex(3)


class Throwaways:
    """The objects the doctor made, deleted newest first by `clean` (each undo waits until it is gone)."""

    def __init__(self) -> None:
        self._undo: list[tuple[str, Callable[[], None]]] = []

    def add(self, label: str, undo: Callable[[], None]) -> None:
        self._undo.append((label, undo))

    def clean(self) -> list[str]:
        """Delete everything; the labels of what could not be deleted (the operator must)."""
        left: list[str] = []
        while self._undo:
            label, undo = self._undo.pop()
            try:
                undo()
            except Exception:  # one failed delete must not keep the others
                left.append(label)
        return left


def _until(read: Callable[[], Any], done: Callable[[Any], bool], within_s: float, what: str) -> Any:
    deadline = time.monotonic() + within_s
    while True:
        got = read()
        if done(got):
            return got
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{what} within {within_s:.0f}s")
        time.sleep(POLL_S)


def _ok(resp: requests.Response) -> requests.Response:
    openstack.exceptions.raise_from_response(resp)
    return resp


def why(exc: BaseException) -> str:
    """An error as the report shows it: the HTTP status and the service's explanation, never a request."""
    if isinstance(exc, openstack.exceptions.HttpException):
        return f"HTTP {exc.status_code}: {str(exc.details or '')[:300]}".rstrip(": ")
    if isinstance(exc, TimeoutError):
        return f"timed out: {exc}"
    return type(exc).__name__


# --- controller: Keystone roles -----------------------------------------------------------------------


def roles_exist(conn: openstack.connection.Connection, roles: list[str], source: str) -> Check:
    """The roles every Identity's user is granted on its project exist (the controller reads Keystone's
    roles, as the Identity workflow does when it grants them)."""
    name = "roles"
    try:
        missing = [r for r in roles if conn.identity.find_role(r, ignore_missing=True) is None]
    except Exception as exc:
        return failed(name, "controller", f"cannot list Keystone roles: {why(exc)}", _CONTROLLER_FIX)
    if missing:
        return failed(
            name,
            "controller",
            f"{', '.join(missing)} of the granted roles ({source}) do not exist in Keystone",
            f"create them (openstack role create {missing[0]}) or change `roles` in the tenancy mapping "
            "(OSPROV_TENANCY_FILE); an Identity cannot be provisioned until then",
        )
    return passed(name, "controller", f"{', '.join(roles)} ({source}) exist in Keystone")


_CONTROLLER_FIX = "check OS_CLOUD / OS_CLIENT_CONFIG_FILE: the worker's clouds.yaml entry must authenticate"


# --- identity: Octavia provider -------------------------------------------------------------------------


def octavia_protocols(conn: openstack.connection.Connection, who: Credentials, provider: str | None) -> Check:
    """The provider osprov's load balancers get (no provider is sent: the cloud's default; name it with
    --octavia-provider, else every enabled one must do) supports the listener, pool, monitor protocols and
    the algorithm osprov uses."""
    name = "octavia-protocols"
    used = {*LISTENER_PROTOCOLS, *POOL_PROTOCOLS, *MONITOR_TYPES, octavia_io.LB_ALGORITHM}
    try:
        enabled = [str(p.name) for p in conn.load_balancer.providers()]
    except Exception as exc:
        return failed(
            name,
            who,
            f"cannot list Octavia's providers: {why(exc)}",
            "the Identity needs load-balancer_member (tenancy mapping `roles`) and the catalog an Octavia "
            "endpoint; without them no LoadBalancer can be made",
        )
    wanted = [provider] if provider else enabled
    if provider and provider not in enabled:
        return failed(
            name,
            who,
            f"provider {provider!r} is not enabled in Octavia (enabled: {', '.join(enabled) or 'none'})",
            "enable it in octavia.conf [api_settings] enabled_provider_drivers, or name an enabled one",
        )
    problems, unknown = [], []
    for p in wanted:
        supported = KNOWN_PROVIDERS.get(p)
        if supported is None:
            unknown.append(p)
            continue
        try:
            conn.load_balancer.provider_flavor_capabilities(p)  # the provider's driver answers
        except Exception as exc:
            problems.append(f"{p}: its driver does not answer ({why(exc)})")
            continue
        if lacking := sorted(used - supported):
            problems.append(f"{p} lacks {', '.join(lacking)}")
    in_use = ", ".join(sorted(used))
    if problems:
        return failed(
            name,
            who,
            f"osprov uses {in_use}; " + "; ".join(problems),
            "make a provider that supports them (amphora) the default (octavia.conf [api_settings] "
            "default_provider_driver), or do not use LoadBalancers with this cloud",
        )
    if unknown:
        return skipped(
            name, who, f"cannot tell whether {', '.join(unknown)} support {in_use} (Octavia does not say)"
        )
    verb = "supports" if len(wanted) == 1 else "support"
    return passed(name, who, f"{', '.join(wanted)} {verb} {in_use}")


# --- identity: Cinder name filter ----------------------------------------------------------------------


def cinder_name_filter(conn: openstack.connection.Connection, trash: Throwaways, size_gb: int = 1) -> Check:
    """Two volumes whose names are a prefix of each other, listed by the shorter name as osprov's find
    does: the exact one must be found (else create-if-absent would duplicate). Cinder answers 400 to a
    non-admin's filter that its resource_filters.json does not allow; osprov then matches over the
    project's whole list (activities/cinder.py), which works but costs a full listing per lookup: a warning,
    once that fallback is seen to find the volume."""
    name = "cinder-name-filter"
    short = PREFIX + suffix()
    names = (short, short + "x")
    refused = None
    try:
        for n in names:
            trash.add(f"Cinder volume {n}", _volume_undo(conn, n))
            conn.block_storage.create_volume(name=n, size=size_gb, description="osprov doctor throwaway")
        try:
            found = sorted(str(v.name) for v in conn.block_storage.volumes(details=True, name=short))
        except openstack.exceptions.BadRequestException as exc:
            refused = why(exc)
            found = sorted(str(v.name) for v in conn.block_storage.volumes(details=True) if v.name in names)
    except Exception as exc:
        return failed(name, "identity", f"cannot make or list throwaway volumes: {why(exc)}", _IDENTITY_FIX)
    if short not in found:
        return failed(
            name,
            "identity",
            f"listing volumes named {short} returned {found or 'nothing'}, not the volume of that name",
            "Cinder's name filter must find exact names; until it does osprov would make duplicate volumes",
        )
    if refused is not None:
        return warned(
            name,
            "identity",
            f"Cinder refuses the name filter to the Identity ({refused}): osprov lists the project's whole "
            "volume list for every lookup instead (correct, slower with many volumes)",
            'allow it: add "name" to the "volume" list of Cinder\'s resource_filters.json '
            "([DEFAULT] resource_query_filters_file)",
        )
    kind = "fuzzy (it also lists the longer name: osprov post-filters exactly)" if len(found) > 1 else "exact"
    return passed(name, "identity", f"allowed; Cinder's name filter is {kind}")


def _volume_undo(conn: openstack.connection.Connection, name: str) -> Callable[[], None]:
    """Delete every volume named exactly `name`: registered before the create, so a create whose answer
    was lost (a timeout, Ctrl-C) leaves nothing behind either. The project's whole list, post-filtered:
    it works where Cinder refuses the name filter."""

    def undo() -> None:
        for volume_id in [str(v.id) for v in conn.block_storage.volumes(details=True) if v.name == name]:

            def state(volume_id: str = volume_id) -> str | None:
                try:
                    return str(conn.block_storage.get_volume(volume_id).status)
                except openstack.exceptions.NotFoundException:
                    return None

            # Cinder deletes only a settled volume; a just-made one is still "creating".
            if _until(state, lambda s: s != "creating", DELETE_TIMEOUT_S, f"volume {name} settles") is None:
                continue
            conn.block_storage.delete_volume(volume_id, ignore_missing=True)
            _until(state, lambda s: s is None, DELETE_TIMEOUT_S, f"volume {name} is deleted")

    return undo


_IDENTITY_FIX = "check the Identity's roles (tenancy mapping `roles`) and its project's quotas"


# --- identity: one throwaway server: launched_at, Nova's name filter, the rebuild's task_state ----------


def server_checks(
    conn: openstack.connection.Connection, trash: Throwaways, image: str | None, flavor: str | None
) -> list[Check]:
    """Boot a throwaway server without a NIC, then: launched_at exposed, Nova's name filter, and rebuild it
    to the same image and GET it at once: the settlement assumption (docs/architecture.md, "settle or
    park")."""
    names = ("launched-at", "nova-name-filter", "rebuild-task-state")
    try:
        image_id, flavor_id = _pick_image(conn, image), _pick_flavor(conn, flavor)
    except LookupError as exc:
        return [
            failed(n, "identity", str(exc), "name one the Identity can use: --image, --flavor") for n in names
        ]
    name = PREFIX + suffix()
    try:
        body = {
            "name": name,
            "imageRef": image_id,
            "flavorRef": flavor_id,
            "networks": "none",
            "metadata": {"osprov-doctor": "throwaway"},
        }
        trash.add(f"Nova server {name}", _server_undo(conn, name))
        resp = _ok(conn.compute.post("/servers", json={"server": body}, microversion=MICROVERSION))
        server_id = str(resp.json()["server"]["id"])
        booted = _until(
            lambda: _server(conn, server_id),
            lambda s: s.get("status") in ("ACTIVE", "ERROR"),
            BOOT_TIMEOUT_S,
            f"server {name} boots",
        )
    except Exception as exc:
        detail = f"cannot boot a throwaway server: {why(exc)}"
        return [failed(n, "identity", detail, _IDENTITY_FIX) for n in names]
    if booted.get("status") != "ACTIVE":
        detail = f"the throwaway server {name} went to {booted.get('status')}: {booted.get('fault', {})}"
        return [failed(n, "identity", detail, "fix booting servers on this cloud first") for n in names]
    return [
        launched_at_shown(booted),
        nova_name_filter(conn, name, server_id),
        rebuild_shows_task(conn, server_id, image_id),
    ]


def _server(conn: openstack.connection.Connection, server_id: str) -> dict[str, Any]:
    got: dict[str, Any] = _ok(conn.compute.get(f"/servers/{server_id}", microversion=MICROVERSION)).json()
    return dict(got["server"])


def launched_at_shown(server: dict[str, Any]) -> Check:
    name = "launched-at"
    if server.get(LAUNCHED_AT):
        return passed(name, "identity", f"an ACTIVE server's GET shows {LAUNCHED_AT} {server[LAUNCHED_AT]}")
    shown = "is missing" if LAUNCHED_AT not in server else "is empty"
    return failed(
        name,
        "identity",
        f"an ACTIVE server's GET: {LAUNCHED_AT} {shown}",
        "Nova must show it to the Identity (it gates rebuilds: before first boot an image change is not a "
        "rebuild); look for a proxy or API gateway stripping OS-SRV-USG attributes",
    )


def nova_name_filter(conn: openstack.connection.Connection, name: str, server_id: str) -> Check:
    check = "nova-name-filter"
    try:

        def listed(pattern: str) -> set[str]:
            resp = _ok(
                conn.compute.get("/servers/detail", params={"name": pattern}, microversion=MICROVERSION)
            )
            return {str(s["id"]) for s in resp.json().get("servers", [])}

        exact, prefix = listed(f"^{name}$"), listed(name[:-1])
    except Exception as exc:
        return failed(check, "identity", f"cannot list servers by name: {why(exc)}", _IDENTITY_FIX)
    if server_id not in exact:
        return failed(
            check,
            "identity",
            f"listing servers named ^{name}$ (as osprov does) does not return the server of that name",
            "Nova's name filter must find exact names; until it does osprov would make duplicate servers",
        )
    kind = (
        "fuzzy (a prefix lists it: osprov anchors and post-filters exactly)"
        if server_id in prefix
        else "exact"
    )
    return passed(check, "identity", f"the anchored name finds the server; Nova's name filter is {kind}")


def rebuild_shows_task(conn: openstack.connection.Connection, server_id: str, image_id: str) -> Check:
    """The seed's settlement assumption: right after Nova accepted a rebuild, a GET shows the task."""
    name = "rebuild-task-state"
    try:
        _ok(
            conn.compute.post(
                f"/servers/{server_id}/action",
                json={"rebuild": {"imageRef": image_id}},
                microversion=MICROVERSION,
            )
        )
        server = _server(conn, server_id)
    except Exception as exc:
        return failed(name, "identity", f"cannot rebuild the throwaway server: {why(exc)}", _IDENTITY_FIX)
    status = server.get("status")
    if server.get(TASK_STATE):
        return passed(
            name, "identity", f"a just-accepted rebuild's GET shows task_state {server[TASK_STATE]!r}"
        )
    consequence = (
        "osprov would take a rebuild as settled before Nova finished it (status "
        f"{status}; osprov reads task_state to know a task runs)"
    )
    if TASK_STATE not in server:
        return failed(
            name,
            "identity",
            f"a just-accepted rebuild's GET has no {TASK_STATE}: Nova hides it from the Identity; {consequence}",
            f"make Nova return {TASK_STATE} to the Identity's role (Nova shows it to every reader of the "
            "server; look for a policy or an API gateway/proxy that strips OS-EXT-STS attributes); do not "
            "let osprov rebuild Servers on this cloud until this check passes",
        )
    return failed(
        name,
        "identity",
        f"a just-accepted rebuild's GET shows an empty {TASK_STATE}: {consequence}",
        "Nova must report the rebuild's task_state while it runs; run the doctor again (a rebuild that "
        "finished before the GET also reads so), and if it persists do not let osprov rebuild Servers here",
    )


def _server_undo(conn: openstack.connection.Connection, name: str) -> Callable[[], None]:
    """Delete every server named exactly `name` (registered before the create, as for volumes)."""

    def named() -> list[str]:
        resp = _ok(
            conn.compute.get("/servers/detail", params={"name": f"^{name}$"}, microversion=MICROVERSION)
        )
        return [str(s["id"]) for s in resp.json().get("servers", []) if s.get("name") == name]

    def undo() -> None:
        for server_id in named():
            resp = conn.compute.delete(f"/servers/{server_id}", microversion=MICROVERSION)
            if resp.status_code != 404:
                _ok(resp)
        _until(lambda: not named(), bool, DELETE_TIMEOUT_S, f"server {name} is deleted")

    return undo


def _pick_image(conn: openstack.connection.Connection, wanted: str | None) -> str:
    if wanted:
        found = conn.image.find_image(wanted, ignore_missing=True)
        if found is None:
            raise LookupError(f"image {wanted!r} is not visible to the Identity")
        return str(found.id)
    active = [i for i in conn.image.images(status="active")]
    if not active:
        raise LookupError("the Identity sees no active image to boot a throwaway server from")
    return str(min(active, key=lambda i: (i.size or 0, i.name or "")).id)


def _pick_flavor(conn: openstack.connection.Connection, wanted: str | None) -> str:
    if wanted:
        found = conn.compute.find_flavor(wanted, ignore_missing=True)
        if found is None:
            raise LookupError(f"flavor {wanted!r} is not visible to the Identity")
        return str(found.id)
    flavors = list(conn.compute.flavors())
    if not flavors:
        raise LookupError("the Identity sees no flavor to boot a throwaway server with")
    return str(min(flavors, key=lambda f: (f.ram or 0, f.disk or 0, f.vcpus or 0)).id)
