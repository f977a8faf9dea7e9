"""What to publish and what to change in Kubernetes to get there: pure, shared by the three inventories.

An inventory turns the cloud's list and the operator's configuration into an `Export` (object name →
spec, plus what was left out and why); `plan` compares it with what this inventory published before
(objects carrying its label) and says what to create, replace and delete. Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from osprov.api import inventory_io as io
from osprov.api.common import CamelModel
from osprov.api.region import object_name


@dataclass(frozen=True)
class Candidate:
    """One cloud object to offer: the name it would like, the cloud's ID (unique), its spec."""

    preferred: str
    cloud_id: str
    spec: CamelModel


@dataclass(frozen=True)
class Export:
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)  # object name -> spec (JSON)
    left_out: tuple[str, ...] = ()  # "<what>: <why>"


@dataclass(frozen=True)
class Plan:
    create: tuple[tuple[str, dict[str, Any]], ...] = ()
    replace: tuple[tuple[str, dict[str, Any]], ...] = ()
    delete: tuple[io.Published, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.create or self.replace or self.delete)


def export(candidates: list[Candidate], left_out: list[str]) -> Export:
    """Name the candidates: the preferred name as an object name; when two want the same name (or it is not
    usable), each gets the name plus its cloud ID, so the outcome never depends on the cloud's list order."""
    wanted: dict[str, list[Candidate]] = {}
    for c in candidates:
        wanted.setdefault(object_name(c.preferred) or "", []).append(c)
    objects: dict[str, dict[str, Any]] = {}
    missing = list(left_out)
    for name, group in sorted(wanted.items()):
        for c in sorted(group, key=lambda c: c.cloud_id):
            final = name if name and len(group) == 1 else object_name(f"{name}-{c.cloud_id}")
            if final is None or final in objects:
                missing.append(f"{c.cloud_id}: no usable object name for {c.preferred!r}")
                continue
            objects[final] = c.spec.to_k8s()
    return Export(objects=dict(sorted(objects.items())), left_out=tuple(missing))


def plan(wanted: Export, published: list[io.Published]) -> Plan:
    """Create what is wanted and not published, replace what differs, delete what is no longer wanted."""
    have = {p.name: p for p in published}
    create = tuple((n, s) for n, s in wanted.objects.items() if n not in have)
    replace = tuple((n, s) for n, s in wanted.objects.items() if n in have and have[n].spec != s)
    delete = tuple(p for n, p in sorted(have.items()) if n not in wanted.objects)
    return Plan(create=create, replace=replace, delete=delete)
