"""Table columns of the built-in kinds, as kube-apiserver's printers (pkg/printers/internalversion) print
them — always the wide set; kubectl hides priority-1 columns unless `-o wide`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import events
from .meta import age


@dataclass
class Printer:
    columns: list[tuple[str, str, int, str]]  # name, type, priority, format
    cells: Callable[[dict[str, Any]], list[Any]]


def _name(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["name"])


def _age(obj: dict[str, Any]) -> str:
    return age(obj["metadata"].get("creationTimestamp"))


NAME = ("Name", "string", 0, "name")
AGE = ("Age", "string", 0, "")


def _selector(labels: dict[str, str] | None) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted((labels or {}).items())) or "<none>"


def _service_cells(svc: dict[str, Any]) -> list[Any]:
    spec = svc.get("spec") or {}
    kind = spec.get("type", "ClusterIP")
    if kind == "ExternalName":
        external = spec.get("externalName") or "<none>"
    elif kind == "LoadBalancer":
        ingress = ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        external = ",".join(i.get("ip") or i.get("hostname") or "" for i in ingress) or "<pending>"
    else:
        external = ",".join(spec.get("externalIPs") or []) or "<none>"
    ports = []
    for port in spec.get("ports") or []:
        node = f":{port['nodePort']}" if port.get("nodePort") else ""
        ports.append(f"{port.get('port')}{node}/{port.get('protocol', 'TCP')}")
    return [
        _name(svc),
        kind,
        spec.get("clusterIP") or "<none>",
        external,
        ",".join(ports) or "<none>",
        _age(svc),
        _selector(spec.get("selector")),
    ]


def _binding_cells(binding: dict[str, Any]) -> list[Any]:
    ref = binding.get("roleRef") or {}
    subjects = binding.get("subjects") or []

    def of(kind: str) -> str:
        names = [
            f"{s.get('namespace')}/{s.get('name')}" if kind == "ServiceAccount" else str(s.get("name"))
            for s in subjects
            if s.get("kind") == kind
        ]
        return ", ".join(names)

    return [
        _name(binding),
        f"{ref.get('kind')}/{ref.get('name')}",
        _age(binding),
        of("User"),
        of("Group"),
        of("ServiceAccount"),
    ]


def _deployment_cells(deploy: dict[str, Any]) -> list[Any]:
    spec, status = deploy.get("spec") or {}, deploy.get("status") or {}
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    selector = (spec.get("selector") or {}).get("matchLabels")
    return [
        _name(deploy),
        f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 0)}",
        int(status.get("updatedReplicas", 0)),
        int(status.get("availableReplicas", 0)),
        _age(deploy),
        ",".join(str(c.get("name")) for c in containers),
        ",".join(str(c.get("image")) for c in containers),
        _selector(selector),
    ]


def _pdb_cells(pdb: dict[str, Any]) -> list[Any]:
    spec = pdb.get("spec") or {}
    shown = {
        k: str(spec[k]) if spec.get(k) is not None else "N/A" for k in ("minAvailable", "maxUnavailable")
    }
    allowed = int((pdb.get("status") or {}).get("disruptionsAllowed", 0))
    return [_name(pdb), shown["minAvailable"], shown["maxUnavailable"], allowed, _age(pdb)]


def _event_cells(event: dict[str, Any]) -> list[Any]:
    if (
        "regarding" in event
        or "note" in event
        or str(event.get("apiVersion", "")).startswith("events.k8s.io")
    ):
        event = events.to_core(event)
    return events.table_cells(event)


PRINTERS: dict[str, Printer] = {
    "secrets": Printer(
        [NAME, ("Type", "string", 0, ""), ("Data", "integer", 0, ""), AGE],
        # The key count, never the values.
        lambda o: [_name(o), o.get("type", ""), len(o.get("data") or {}), _age(o)],
    ),
    "namespaces": Printer(
        [NAME, ("Status", "string", 0, ""), AGE],
        lambda o: [_name(o), (o.get("status") or {}).get("phase", ""), _age(o)],
    ),
    "configmaps": Printer(
        [NAME, ("Data", "integer", 0, ""), AGE],
        lambda o: [_name(o), len(o.get("data") or {}) + len(o.get("binaryData") or {}), _age(o)],
    ),
    "serviceaccounts": Printer(
        [NAME, ("Secrets", "integer", 0, ""), AGE], lambda o: [_name(o), len(o.get("secrets") or []), _age(o)]
    ),
    "services": Printer(
        [
            NAME,
            ("Type", "string", 0, ""),
            ("Cluster-IP", "string", 0, ""),
            ("External-IP", "string", 0, ""),
            ("Port(s)", "string", 0, ""),
            AGE,
            ("Selector", "string", 1, ""),
        ],
        _service_cells,
    ),
    "events": Printer(events.TABLE_COLUMNS, _event_cells),
    "leases.coordination.k8s.io": Printer(
        [NAME, ("Holder", "string", 0, ""), AGE],
        lambda o: [_name(o), (o.get("spec") or {}).get("holderIdentity", ""), _age(o)],
    ),
    "deployments.apps": Printer(
        [
            NAME,
            ("Ready", "string", 0, ""),
            ("Up-to-date", "integer", 0, ""),
            ("Available", "integer", 0, ""),
            AGE,
            ("Containers", "string", 1, ""),
            ("Images", "string", 1, ""),
            ("Selector", "string", 1, ""),
        ],
        _deployment_cells,
    ),
    "poddisruptionbudgets.policy": Printer(
        [
            NAME,
            ("Min Available", "string", 0, ""),
            ("Max Unavailable", "string", 0, ""),
            ("Allowed Disruptions", "integer", 0, ""),
            AGE,
        ],
        _pdb_cells,
    ),
}
_BINDING = Printer(
    [
        NAME,
        ("Role", "string", 0, ""),
        AGE,
        ("Users", "string", 1, ""),
        ("Groups", "string", 1, ""),
        ("ServiceAccounts", "string", 1, ""),
    ],
    _binding_cells,
)
PRINTERS["rolebindings.rbac.authorization.k8s.io"] = _BINDING
PRINTERS["clusterrolebindings.rbac.authorization.k8s.io"] = _BINDING


def printer_for(store_key: str) -> Printer | None:
    return PRINTERS.get(store_key)
