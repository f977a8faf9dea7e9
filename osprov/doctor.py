"""`osprov doctor`: check a target cloud's assumptions osprov rests on, each reported pass/fail with its fix.

Two sets of credentials, each where osprov itself uses them:
- the controller's (OS_CLOUD / OS_CLIENT_CONFIG_FILE, as the worker loads them: activities/cloud.py) for
  what the controller does itself: Keystone's roles that every Identity's user is granted;
- an Identity's application credential (`--identity NAME -n NS`: its Secret, read through the Kubernetes
  API as the worker reads it; or a clouds.yaml entry, `--identity-cloud NAME`) for what tenants' resources
  do: boot and rebuild a server, list by name, use Octavia. Policies differ by role, so only a tenant's
  credential shows what the worker will see. Without one, those checks are skipped.

The server checks boot a throwaway server (no NIC; the smallest flavor and image unless --flavor/--image)
in the Identity's project and rebuild it (skip with --no-rebuild); the Cinder check makes two 1 GB volumes.
Every throwaway is named osprov-doctor-<random> and deleted before the command ends, also after a failure,
Ctrl-C or SIGTERM; one that cannot be deleted is named in the report.

Exit status: 0 no check failed, 1 some check failed, 2 bad usage or credentials that cannot be loaded.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from types import FrameType
from typing import Any

import openstack.connection
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from kubernetes.config import ConfigException
from temporalio.exceptions import ApplicationError

from osprov.activities import tenancy
from osprov.activities.cloud import CloudSettings, identity_connection, load_region
from osprov.api.identity import IdentityStatus, default_secret_name
from osprov.api.identity_io import Credential
from osprov.api.registry import kind_info
from osprov.doctor_checks import (
    Throwaways,
    cinder_name_filter,
    octavia_protocols,
    roles_exist,
    server_checks,
    why,
)
from osprov.doctor_report import Check, exit_code, render_json, render_text, skipped
from osprov.runtime import kube, logs

SERVER_CHECKS = ("launched-at", "nova-name-filter", "rebuild-task-state")
IDENTITY_CHECKS = ("octavia-protocols", "cinder-name-filter", *SERVER_CHECKS)


class UsageError(Exception):
    """Credentials that cannot be loaded, an Identity that is not provisioned: exit status 2."""


def controller_connection() -> openstack.connection.Connection:
    settings = CloudSettings.from_env()
    try:
        return openstack.connection.Connection(config=load_region(settings, None))
    except ApplicationError as exc:
        raise UsageError(f"the controller's credentials: {exc.message}") from None


def cloud_connection(cloud: str) -> openstack.connection.Connection:
    """A clouds.yaml entry (in the controller's clouds.yaml file) standing for an Identity."""
    settings = CloudSettings.from_env()
    try:
        return openstack.connection.Connection(
            config=load_region(CloudSettings(cloud, settings.config_file, settings.api_timeout), None)
        )
    except ApplicationError as exc:
        raise UsageError(f"--identity-cloud: {exc.message}") from None


def kube_identity_connection(name: str, namespace: str) -> openstack.connection.Connection:
    """An Identity's current application credential, from its Secret, checked to be scoped to its project
    (activities/cloud.identity_connection, the worker's own path)."""
    info = kind_info("Identity")
    try:
        custom = k8s.CustomObjectsApi(kube.api_client("osprov-doctor"))
        obj: Any = custom.get_namespaced_custom_object(info.group, info.version, namespace, info.plural, name)
    except (ApiException, ConfigException, OSError) as exc:
        code = getattr(exc, "status", None)
        raise UsageError(f"cannot read Identity {namespace}/{name}: {code or type(exc).__name__}") from None
    status = IdentityStatus.model_validate(obj.get("status") or {})
    if not status.project_id:
        raise UsageError(f"Identity {namespace}/{name} has no project yet: wait until it is Ready")
    credential = Credential(
        identity=name,
        namespace=namespace,
        secret=status.secret_name or default_secret_name(name),
        version="doctor",
        project_id=status.project_id,
    )
    try:
        return identity_connection(credential)
    except ApplicationError as exc:
        raise UsageError(exc.message) from None


def granted_roles() -> tuple[list[str], str]:
    """The roles every Identity's user gets: the tenancy mapping's, else the default."""
    try:
        config = tenancy.current()
    except ApplicationError as exc:
        raise UsageError(exc.message) from None
    if config is None:
        return list(tenancy.DEFAULT_ROLES), "the default; no OSPROV_TENANCY_FILE"
    return list(config.roles), f"the tenancy mapping {os.environ.get(tenancy.TENANCY_FILE_ENV)}"


def identity_credentials(args: argparse.Namespace) -> openstack.connection.Connection | None:
    """The Identity's connection, authenticated (a refused credential is a usage error); None: none given."""
    if args.identity:
        identity = kube_identity_connection(args.identity, args.namespace)
    elif args.identity_cloud:
        identity = cloud_connection(args.identity_cloud)
    else:
        return None
    try:
        _ = identity.current_project_id  # the token request
    except Exception as exc:
        raise UsageError(f"the Identity's credentials are refused: {why(exc)}") from None
    return identity


def run(args: argparse.Namespace, trash: Throwaways, checks: list[Check]) -> None:
    """Append each check's result to `checks` as it is made (an interrupted run reports what it has).
    Both credentials are loaded first: one that cannot be used ends the run before any check."""
    controller = controller_connection()
    roles, source = granted_roles()
    identity = identity_credentials(args)
    checks.append(roles_exist(controller, roles, source))
    if identity is None:
        hint = "skipped: no Identity given (--identity NAME -n NS, or --identity-cloud NAME)"
        checks.extend(skipped(n, "identity", hint) for n in IDENTITY_CHECKS)
        return
    checks.append(octavia_protocols(identity, "identity", args.octavia_provider))
    checks.append(cinder_name_filter(identity, trash))
    if args.no_rebuild:
        why_not = "skipped: --no-rebuild (no throwaway server)"
        checks.extend(skipped(n, "identity", why_not) for n in SERVER_CHECKS)
    else:
        checks.extend(server_checks(identity, trash, args.image, args.flavor))


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # SIGTERM cleans up as Ctrl-C does


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="osprov doctor", description=__doc__.split("\n\n")[0])
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--identity", metavar="NAME", help="an Identity resource whose credential to use")
    who.add_argument("--identity-cloud", metavar="CLOUD", help="a clouds.yaml entry standing for an Identity")
    parser.add_argument("-n", "--namespace", default="default", help="the Identity's namespace")
    parser.add_argument("--no-rebuild", action="store_true", help="boot and rebuild no throwaway server")
    parser.add_argument("--image", help="image of the throwaway server (default: the smallest active one)")
    parser.add_argument("--flavor", help="flavor of the throwaway server (default: the smallest)")
    parser.add_argument(
        "--octavia-provider", help="the provider LoadBalancers get (default: every enabled one)"
    )
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")
    args = parser.parse_args(argv)
    logs.configure("WARNING", component="doctor")  # stdout is the report
    signal.signal(signal.SIGTERM, _interrupt)
    trash, checks = Throwaways(), list[Check]()
    interrupted, code = False, 0
    try:
        run(args, trash, checks)
    except UsageError as exc:
        print(f"osprov doctor: {exc}", file=sys.stderr)
        code = 2
    except KeyboardInterrupt:
        interrupted = True
    finally:
        # The throwaways go whatever happened; a second Ctrl-C must not leave them behind.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        leftovers = trash.clean()
    if interrupted:
        gone = (
            "not all throwaway objects could be deleted" if leftovers else "the throwaway objects are deleted"
        )
        print(f"osprov doctor: interrupted; {gone}", file=sys.stderr)
        code = 130
    render = render_json if args.output == "json" else render_text
    if checks or leftovers:
        print(render(checks, leftovers))
    return code or exit_code(checks) or (1 if leftovers else 0)
