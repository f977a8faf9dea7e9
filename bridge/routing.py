"""Turns Kubernetes objects into workflow signals; drops what changes nothing. No I/O here.

A change is signalled when the generation, the deletion state, our finalizer's presence or one of osprov's
annotations (pause, reconcile-requested-at: api/operations.py) moved. Status writes, and other metadata
(labels, other annotations), bump resourceVersion only and are dropped. Resources naming another Keystone
deployment are ignored unless they still carry our finalizer (which only we can remove).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from osprov.api import registry
from osprov.api.common import raw_keystone_ref_name, serves
from osprov.api.messages import ResourceChange, ResourceRef, SecretChanged
from osprov.api.operations import ours

Obj = dict[str, Any]


def finalizer_of(info: registry.KindInfo) -> str:
    return f"{info.group}/finalizer"


@dataclass(frozen=True)
class Seen:
    generation: int
    deleting: bool
    has_finalizer: bool
    annotations: tuple[tuple[str, str], ...] = ()  # osprov's own, sorted


@dataclass
class Known:
    ref: ResourceRef
    seen: Seen
    secret: str | None = None  # User: the Secret named by spec.passwordSecret


@dataclass
class Router:
    keystone_name: str = "keystone"
    approval_namespaces: tuple[str, ...] = ()  # the operator's approval gates (OSPROV_APPROVAL_NAMESPACES)
    known: dict[str, Known] = field(default_factory=dict)  # uid -> what was last signalled
    secret_versions: dict[tuple[str, str], str] = field(default_factory=dict)

    def _ours(self, obj: Obj) -> bool:
        return serves(raw_keystone_ref_name(obj.get("spec") or {}), self.keystone_name)

    def _gated(self, namespace: str) -> bool:
        return "*" in self.approval_namespaces or namespace in self.approval_namespaces

    def on_object(self, kind: str, obj: Obj, deleted: bool = False) -> ResourceChange | None:
        info = registry.kind_info(kind)
        meta = obj.get("metadata") or {}
        uid, ns, name = meta.get("uid", ""), meta.get("namespace", ""), meta.get("name", "")
        finalizers = list(meta.get("finalizers") or [])
        annotations = ours(meta.get("annotations"))
        has_finalizer = finalizer_of(info) in finalizers
        if not self._ours(obj) and not has_finalizer:
            self.known.pop(uid, None)
            return None
        ref = ResourceRef(kind=kind, namespace=ns, name=name, uid=uid)
        if deleted:
            self.known.pop(uid, None)
            return ResourceChange(
                ref=ref,
                generation=int(meta.get("generation") or 0),
                spec=obj.get("spec") or {},
                finalizers=finalizers,
                deleting=True,
                gone=True,
                annotations=annotations,
                gated=self._gated(ns),
            )
        seen = Seen(
            int(meta.get("generation") or 0),
            bool(meta.get("deletionTimestamp")),
            has_finalizer,
            tuple(sorted(annotations.items())),
        )
        previous = self.known.get(uid)
        secret = ((obj.get("spec") or {}).get("passwordSecret") or {}).get("name") if kind == "User" else None
        self.known[uid] = Known(ref=ref, seen=seen, secret=secret)
        if previous is not None and previous.seen == seen:
            return None
        return ResourceChange(
            ref=ref,
            generation=seen.generation,
            spec=obj.get("spec") or {},
            finalizers=finalizers,
            deleting=seen.deleting,
            annotations=annotations,
            gated=self._gated(ns),
        )

    def on_snapshot(self, kind: str, namespace: str, items: list[Obj]) -> list[ResourceChange]:
        """A (re)list: signal what changed, and `gone` for what we knew and the list no longer has."""
        changes = [c for obj in items if (c := self.on_object(kind, obj)) is not None]
        present = {(o.get("metadata") or {}).get("uid") for o in items}
        for uid, k in list(self.known.items()):
            if k.ref.kind == kind and k.ref.namespace == namespace and uid not in present:
                del self.known[uid]
                changes.append(
                    ResourceChange(
                        ref=k.ref,
                        generation=k.seen.generation,
                        deleting=True,
                        gone=True,
                        gated=self._gated(namespace),
                    )
                )
        return changes

    def present(self, kind: str, namespace: str) -> set[str]:
        return {uid for uid, k in self.known.items() if k.ref.kind == kind and k.ref.namespace == namespace}

    def on_secret(self, secret: Obj, deleted: bool = False) -> list[tuple[ResourceRef, SecretChanged]]:
        """Users naming this Secret get its identity and version — never its data."""
        meta = secret.get("metadata") or {}
        ns, name = meta.get("namespace", ""), meta.get("name", "")
        rv = "deleted" if deleted else str(meta.get("resourceVersion", ""))
        if self.secret_versions.get((ns, name)) == rv:
            return []
        self.secret_versions[(ns, name)] = rv
        msg = SecretChanged(namespace=ns, name=name, resource_version=rv)
        return [
            (k.ref, msg)
            for k in self.known.values()
            if k.ref.kind == "User" and k.ref.namespace == ns and k.secret == name
        ]
