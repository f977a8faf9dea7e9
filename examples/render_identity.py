"""Render examples/identity/<chart>.yaml: the identity resources seed 001's rules produce for six charts.

`python -m examples.render_identity [--check]`. The inputs are the charts' default values
(endpoints.identity.auth.<userClass>, secrets.identity.<userClass>, the catalog URLs that
keystone_endpoint_uri_lookup yields); the rules are the seed's:
- per service user: a Domain for its user and project domains (never Default, which always exists), its
  Project, a Role for each of its roles plus member (which ks-user.sh always adds), the User, and one
  RoleAssignment per role;
- a Service per service type the chart owns, an Endpoint per type it publishes;
- metadata.name is <chart>-<Keystone name> lower-cased with underscores as hyphens (heat_trustee ->
  heat-heat-trustee); resources are listed in the order the controller handles the kinds.
Each file starts with the password Secrets its Users name; the passwords are fake examples.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from osprov.api.keystone import KEYSTONE_GROUP

OUT = Path(__file__).resolve().parent / "identity"
API_VERSION = f"{KEYSTONE_GROUP}/v1alpha1"
KEYSTONE_REF = {"name": "keystone"}  # endpoints.identity.hosts.default of the charts
REGION = "RegionOne"
KIND_ORDER = ["Domain", "Project", "Role", "Group", "User", "RoleAssignment", "Service", "Endpoint"]


@dataclass(frozen=True)
class ServiceUser:
    username: str
    secret: str  # secrets.identity.<userClass>
    roles: tuple[str, ...] = ("admin", "service")
    user_domain: str = "service"
    project: str = "service"
    project_domain: str = "service"


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    type: str
    internal: str  # also the admin URL, as in every chart's endpoints.<type>.hosts.default
    public: str
    published: bool = True  # whether the chart's ks-endpoints job publishes it


@dataclass(frozen=True)
class Chart:
    name: str
    users: tuple[ServiceUser, ...]
    services: tuple[CatalogEntry, ...] = field(default=())


def _svc(host: str, port: int, path: str = "") -> str:
    return f"http://{host}.openstack.svc.cluster.local:{port}{path}"


def _pub(host: str, path: str = "") -> str:
    return f"http://{host}.openstack.svc.cluster.local{path}"


CHARTS: tuple[Chart, ...] = (
    Chart(
        "glance",
        (ServiceUser("glance", "glance-keystone-user"),),
        (CatalogEntry("glance", "image", _svc("glance-api", 9292), _pub("glance")),),
    ),
    Chart(
        "cinder",
        (ServiceUser("cinder", "cinder-keystone-user"),),
        (CatalogEntry("cinderv3", "volumev3", _svc("cinder-api", 8776, "/v3"), _pub("cinder", "/v3")),),
    ),
    Chart(
        "placement",
        (ServiceUser("placement", "placement-keystone-user"),),
        (CatalogEntry("placement", "placement", _svc("placement-api", 8778), _pub("placement")),),
    ),
    Chart(
        "nova",
        (ServiceUser("nova", "nova-keystone-user"),),
        (
            CatalogEntry(
                "nova",
                "compute",
                _svc("nova-api", 8774, "/v2.1/%(tenant_id)s"),
                _pub("nova", "/v2.1/%(tenant_id)s"),
            ),
        ),
    ),
    Chart(
        "neutron",
        (ServiceUser("neutron", "neutron-keystone-user"),),
        (CatalogEntry("neutron", "network", _svc("neutron-server", 9696), _pub("neutron")),),
    ),
    Chart(
        "heat",
        (
            ServiceUser("heat", "heat-keystone-user"),
            # Heat's trustee: a second service user whose Keystone name is not a valid Kubernetes name.
            ServiceUser("heat_trustee", "heat-keystone-trustee", roles=("admin",)),
        ),
        (
            CatalogEntry(
                "heat",
                "orchestration",
                _svc("heat-api", 8004, "/v1/%(project_id)s"),
                _pub("heat", "/v1/%(project_id)s"),
            ),
            CatalogEntry(
                "heat-cfn", "cloudformation", _svc("heat-cfn", 8000, "/v1"), _pub("cloudformation", "/v1")
            ),
        ),
    ),
)


def k8s_name(*parts: str) -> str:
    return "-".join(part.lower().replace("_", "-") for part in parts)


def _resource(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": {"name": name},
        "spec": {"keystoneRef": dict(KEYSTONE_REF), **spec},
    }


def identity_resources(chart: Chart) -> list[dict[str, Any]]:
    """The chart's identity resources in the controller's kind order (duplicates within a chart merged)."""
    found: dict[tuple[str, str], dict[str, Any]] = {}

    def add(kind: str, name: str, spec: dict[str, Any]) -> None:
        found.setdefault((kind, name), _resource(kind, name, spec))

    for user in chart.users:
        for domain in (user.user_domain, user.project_domain):
            if domain != "Default":
                add(
                    "Domain",
                    k8s_name(chart.name, domain),
                    {"name": domain, "description": f"Domain for {domain}"},
                )
        add(
            "Project",
            k8s_name(chart.name, user.project),
            {
                "name": user.project,
                "domain": user.project_domain,
                "description": f"Service Project for {user.project_domain}",
            },
        )
        roles = list(dict.fromkeys((*user.roles, "member")))
        for role in roles:
            add("Role", k8s_name(chart.name, role), {"name": role})
        add(
            "User",
            k8s_name(chart.name, user.username),
            {
                "name": user.username,
                "domain": user.user_domain,
                "description": f"Service User for {REGION}/{user.user_domain}/{user.username}",
                "defaultProject": {"name": user.project, "domain": user.project_domain},
                "passwordSecret": {"name": user.secret, "key": "OS_PASSWORD"},
            },
        )
        for role in roles:
            add(
                "RoleAssignment",
                k8s_name(chart.name, user.username, role),
                {
                    "role": {"name": role},
                    "user": {"name": user.username, "domain": user.user_domain},
                    "project": {"name": user.project, "domain": user.project_domain},
                },
            )
    for entry in chart.services:
        add(
            "Service",
            k8s_name(chart.name, entry.type),
            {
                "name": entry.name,
                "type": entry.type,
                "description": f"{REGION}: {entry.name} ({entry.type}) service",
            },
        )
    for entry in chart.services:
        if entry.published:
            add(
                "Endpoint",
                k8s_name(chart.name, entry.type),
                {
                    "service": {"name": entry.name, "type": entry.type},
                    "region": REGION,
                    "urls": {"admin": entry.internal, "internal": entry.internal, "public": entry.public},
                },
            )
    return sorted(found.values(), key=lambda r: KIND_ORDER.index(r["kind"]))  # stable within a kind


def password_secrets(chart: Chart) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": user.secret},
            "type": "Opaque",
            "stringData": {"OS_PASSWORD": f"fake-example-password-{k8s_name(user.username)}"},
        }
        for user in chart.users
    ]


def render(chart: Chart) -> str:
    header = (
        f"# Identity resources of the {chart.name} chart, as seed 001's rules render them (apply with -n).\n"
        "# Generated by `python -m examples.render_identity`; the passwords are fake examples.\n"
    )
    docs = password_secrets(chart) + identity_resources(chart)
    return header + yaml.safe_dump_all(docs, sort_keys=False, width=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.render_identity")
    parser.add_argument("--check", action="store_true", help="exit 1 if examples/identity/ is stale")
    args = parser.parse_args(argv)
    stale = []
    OUT.mkdir(exist_ok=True)
    for chart in CHARTS:
        path = OUT / f"{chart.name}.yaml"
        text = render(chart)
        if path.exists() and path.read_text() == text:
            continue
        if args.check:
            stale.append(str(path))
        else:
            path.write_text(text)
            print(f"wrote {path}")
    if stale:
        print("stale: " + ", ".join(stale) + "; run `python -m examples.render_identity`")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
