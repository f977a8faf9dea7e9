"""The in-memory object store: one resourceVersion counter, CRUD with apiserver semantics, CRD registry."""

from __future__ import annotations

import copy
import uuid
from typing import Any

from .admission import admit
from .cascade import Cascades
from .errors import (
    STALE,
    ApiError,
    Cause,
    already_exists,
    bad_request,
    conflict,
    forbidden,
    invalid,
    not_found,
)
from .meta import clean_meta, generate_suffix, now, validate_labels, validate_name
from .options import WriteOptions
from .resources import CRD_GROUP, ResourceType, builtin_types, crd_status, type_from_crd
from .watch import Event, TypeState

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public")


class Store(Cascades):
    def __init__(self, watch_window: int = 1000) -> None:
        self.rv = 0
        self.window = watch_window
        self.types: dict[str, TypeState] = {}
        self.warnings: list[str] = []
        self.dependents: dict[str, set[tuple[str, str, str]]] = {}  # owner uid -> (type key, ns, name)
        self.owners_of: dict[
            tuple[str, str, str], set[str]
        ] = {}  # the reverse index  # unknown-field warnings of the current request (fieldValidation=Warn)
        for rtype in builtin_types():
            self.types[rtype.key] = TypeState(rtype, watch_window)
        for name in DEFAULT_NAMESPACES:
            self.create(self.types["namespaces"].rtype, "", {"metadata": {"name": name}})

    # ------------------------------------------------------------------------------------ type lookup
    def find(self, group: str, version: str, plural: str) -> ResourceType | None:
        state = self.types.get(f"{plural}.{group}" if group else plural)
        if state is None or state.rtype.version(version) is None:
            return None
        return state.rtype

    def state(self, rtype: ResourceType) -> TypeState:
        return self.types[rtype.key]

    def next_rv(self) -> int:
        self.rv += 1
        return self.rv

    # ---------------------------------------------------------------------------------------- reads
    def get(self, rtype: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        obj = self.state(rtype).objects.get((namespace, name))
        if obj is None:
            raise not_found(rtype.group, rtype.plural, name)
        return obj

    def list_objects(self, rtype: ResourceType, namespace: str | None) -> list[dict[str, Any]]:
        objects = self.state(rtype).objects
        keys = sorted(k for k in objects if namespace is None or k[0] == namespace)
        return [objects[k] for k in keys]

    # --------------------------------------------------------------------------------------- writes
    def _commit(
        self, rtype: ResourceType, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        state = self.state(rtype)
        meta = obj["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        if event_type == "DELETED":
            state.objects.pop(key, None)
        else:
            state.objects[key] = obj
        state.record(Event(int(meta["resourceVersion"]), event_type, obj, old, key[0]))
        if rtype.key == f"customresourcedefinitions.{CRD_GROUP}":
            self._crd_changed(event_type, obj, old)
        self._index_owners(rtype, key, obj, event_type)
        if event_type == "DELETED":
            self._collect_dependents(meta["uid"])
            if rtype.namespaced:
                self._maybe_finish_namespace(key[0])

    def _prepare(
        self,
        rtype: ResourceType,
        version: str,
        body: dict[str, Any],
        old: dict[str, Any] | None,
        opts: WriteOptions,
    ) -> tuple[dict[str, Any], list[Cause]]:
        admitted = admit(rtype, version, body, old, opts.strict_fields)
        self.warnings = admitted.warnings
        return admitted.body, admitted.causes

    def create(
        self,
        rtype: ResourceType,
        namespace: str,
        body: Any,
        opts: WriteOptions | None = None,
        version: str = "",
    ) -> dict[str, Any]:
        opts = opts or WriteOptions()
        version = version or rtype.storage_version
        body = self._check_body(rtype, version, body)
        meta = clean_meta(body.get("metadata"))
        if meta.get("resourceVersion"):
            raise bad_request("resourceVersion should not be set on objects to be created")
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = f"{meta['generateName']}{generate_suffix()}"
        name = meta.get("name", "")
        if not name:
            raise invalid(
                rtype.kind,
                rtype.group,
                "",
                [
                    Cause(
                        "FieldValueRequired",
                        "Required value: name or generateName is required",
                        "metadata.name",
                    )
                ],
            )
        if rtype.namespaced:
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            ns = self.types["namespaces"].objects.get(("", namespace))
            if ns is None:
                raise not_found("", "namespaces", namespace)
            if ns["metadata"].get("deletionTimestamp"):
                raise forbidden(
                    rtype.group,
                    rtype.plural,
                    name,
                    f"unable to create new content in namespace {namespace} because it is being terminated",
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        causes = validate_name(name, dns_label=rtype.key == "namespaces") + validate_labels(meta)
        for system_field in (
            "uid",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ):
            meta.pop(system_field, None)
        body["metadata"] = meta
        vinfo = rtype.version(version)
        if vinfo is not None and vinfo.status_subresource and not rtype.builtin:
            body.pop("status", None)  # with the status subresource, create ignores .status
        if rtype.key == "namespaces":
            body["spec"] = {"finalizers": ["kubernetes"]}
            body["status"] = {"phase": "Active"}
            meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = name
        body, more = self._prepare(rtype, version, body, None, opts)
        causes += more
        if causes:
            raise invalid(rtype.kind, rtype.group, name, causes)
        if (meta.get("namespace", ""), name) in self.state(rtype).objects:
            raise already_exists(rtype.group, rtype.plural, name)
        if rtype.key == f"customresourcedefinitions.{CRD_GROUP}":
            body["status"] = crd_status(body)
        meta = body["metadata"]
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now()
        if not rtype.builtin or rtype.key == f"customresourcedefinitions.{CRD_GROUP}":
            meta["generation"] = 1
        body["apiVersion"] = rtype.api_version(rtype.storage_version)
        body["kind"] = rtype.kind
        if opts.dry_run:
            meta["resourceVersion"] = ""
            return body
        meta["resourceVersion"] = str(self.next_rv())
        self._commit(rtype, "ADDED", body, None)
        return body

    def update(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        subresource: str = "",
        opts: WriteOptions | None = None,
        version: str = "",
    ) -> dict[str, Any]:
        opts = opts or WriteOptions()
        version = version or rtype.storage_version
        old = self.get(rtype, namespace, name)
        body = self._check_body(rtype, version, body)
        new_meta = clean_meta(body.get("metadata"))
        if new_meta.get("name", name) != name:
            raise bad_request(
                f"the name of the object ({new_meta.get('name')}) does not match the name on the URL ({name})"
            )
        if rtype.namespaced and new_meta.get("namespace", namespace) != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        old_meta = old["metadata"]
        given_rv = str(new_meta.get("resourceVersion") or "")
        if given_rv and given_rv != old_meta["resourceVersion"]:
            raise conflict(rtype.group, rtype.plural, name, STALE)
        if not given_rv and not rtype.builtin:
            raise invalid(
                rtype.kind,
                rtype.group,
                name,
                [
                    Cause(
                        "FieldValueInvalid",
                        "Invalid value: 0x0: must be specified for an update",
                        "metadata.resourceVersion",
                    )
                ],
            )
        if new_meta.get("uid") and new_meta["uid"] != old_meta["uid"]:
            raise conflict(
                rtype.group,
                rtype.plural,
                name,
                f"Precondition failed: UID in precondition: {new_meta['uid']}, UID in object meta: {old_meta['uid']}",
            )
        vinfo = rtype.version(version)
        status_split = vinfo is not None and vinfo.status_subresource
        if subresource == "status":
            new = copy.deepcopy(old)
            if "status" in body:
                new["status"] = body["status"]
            else:
                new.pop("status", None)
        else:
            new = body
            for system_field in (
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
            ):
                if system_field in old_meta:
                    new_meta[system_field] = old_meta[system_field]
                else:
                    new_meta.pop(system_field, None)
            if rtype.namespaced:
                new_meta["namespace"] = namespace
            new_meta["name"] = name
            new["metadata"] = new_meta
            if status_split:
                if "status" in old:
                    new["status"] = copy.deepcopy(old["status"])
                else:
                    new.pop("status", None)
            if rtype.key == "namespaces":
                new["spec"] = old.get("spec", {})
                new["status"] = old.get("status", {})
        new["apiVersion"] = rtype.api_version(rtype.storage_version)
        new["kind"] = rtype.kind
        causes = validate_labels(new["metadata"])
        if old_meta.get("deletionTimestamp"):
            added = [
                f
                for f in new["metadata"].get("finalizers") or []
                if f not in (old_meta.get("finalizers") or [])
            ]
            if added:
                found = ", ".join(f'"{f}"' for f in added)
                causes.append(
                    Cause(
                        "FieldValueForbidden",
                        f"Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{{found}}}",
                        "metadata.finalizers",
                    )
                )
        new, more = self._prepare(rtype, version, new, old, opts)
        causes += more
        if causes:
            raise invalid(rtype.kind, rtype.group, name, causes)
        if rtype.key == f"customresourcedefinitions.{CRD_GROUP}" and subresource != "status":
            new["status"] = crd_status(new, old.get("status"))
        new_meta = new["metadata"]
        if "generation" in old_meta and subresource != "status":
            strip = ("metadata", "status") if status_split else ("metadata",)
            if _without(old, strip) != _without(new, strip):
                new_meta["generation"] = int(old_meta["generation"]) + 1
        new_meta["resourceVersion"] = old_meta["resourceVersion"]
        if new == old:
            return old  # a no-op write does not bump resourceVersion nor emit an event, like upstream
        if opts.dry_run:
            return new
        new_meta["resourceVersion"] = str(self.next_rv())
        if new_meta.get("deletionTimestamp") and not new_meta.get("finalizers"):
            self._commit(rtype, "DELETED", new, old)
        else:
            self._commit(rtype, "MODIFIED", new, old)
        return new

    def delete(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        preconditions: dict[str, Any] | None = None,
        opts: WriteOptions | None = None,
    ) -> tuple[dict[str, Any], bool]:
        """Returns (object, gone): gone is False when finalizers keep the object (deletionTimestamp set)."""
        opts = opts or WriteOptions()
        old = self.get(rtype, namespace, name)
        old_meta = old["metadata"]
        pre = preconditions or {}
        if pre.get("uid") and pre["uid"] != old_meta["uid"]:
            raise conflict(
                rtype.group,
                rtype.plural,
                name,
                f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {old_meta['uid']}",
            )
        if pre.get("resourceVersion") and pre["resourceVersion"] != old_meta["resourceVersion"]:
            raise conflict(
                rtype.group,
                rtype.plural,
                name,
                f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, ResourceVersion in object meta: {old_meta['resourceVersion']}",
            )
        if rtype.key == "namespaces":
            return self._delete_namespace(old, opts), False
        if old_meta.get("finalizers"):
            if old_meta.get("deletionTimestamp") or opts.dry_run:
                return old, False
            new = copy.deepcopy(old)
            new["metadata"]["deletionTimestamp"] = now()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            if "generation" in new["metadata"]:
                # Upstream markAsDeleting bumps the generation, so controllers keyed on it see the deletion.
                new["metadata"]["generation"] = int(new["metadata"]["generation"]) + 1
            new["metadata"]["resourceVersion"] = str(self.next_rv())
            self._commit(rtype, "MODIFIED", new, old)
            return new, False
        if opts.dry_run:
            return old, True
        gone_obj = copy.deepcopy(old)
        gone_obj["metadata"]["resourceVersion"] = str(self.next_rv())
        self._commit(rtype, "DELETED", gone_obj, old)
        return gone_obj, True

    # ------------------------------------------------------------------------------------------ CRDs
    def _crd_changed(self, event_type: str, crd: dict[str, Any], old: dict[str, Any] | None) -> None:
        if event_type == "DELETED":
            rtype = type_from_crd(crd)
            state = self.types.pop(rtype.key, None)
            if state is not None:
                state.cut_all()
                touched = {k[0] for k in state.objects}
                for ns in touched:
                    self._maybe_finish_namespace(ns)
            return
        rtype = type_from_crd(crd)
        state = self.types.get(rtype.key)
        if state is None:
            self.types[rtype.key] = TypeState(rtype, self.window, start_rv=self.rv)
        else:
            state.rtype = rtype

    def register_crd(self, crd: dict[str, Any]) -> dict[str, Any]:
        """Create or replace a CRD (used at start for --crds files)."""
        crd_type = self.types[f"customresourcedefinitions.{CRD_GROUP}"].rtype
        name = (crd.get("metadata") or {}).get("name", "")
        existing = self.types[crd_type.key].objects.get(("", name))
        if existing is None:
            return self.create(crd_type, "", crd)
        body = copy.deepcopy(crd)
        body.setdefault("metadata", {})["resourceVersion"] = existing["metadata"]["resourceVersion"]
        return self.update(crd_type, "", name, body)

    # ----------------------------------------------------------------------------------------- misc
    def _check_body(self, rtype: ResourceType, version: str, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise bad_request("the request body must be a JSON object")
        body = copy.deepcopy(body)
        expected = rtype.api_version(version)
        if body.get("apiVersion") and body["apiVersion"] != expected:
            raise bad_request(
                f"the API version in the data ({body['apiVersion']}) does not match the expected API version ({expected})"
            )
        if body.get("kind") and body["kind"] != rtype.kind:
            raise bad_request(
                f"the kind in the data ({body['kind']}) does not match the expected kind ({rtype.kind})"
            )
        return body

    def snapshot(self) -> dict[str, Any]:
        crd_key = f"customresourcedefinitions.{CRD_GROUP}"
        ordered = [crd_key] + [k for k in self.types if k != crd_key]
        objects = [{"type": k, "object": o} for k in ordered for o in self.types[k].objects.values()]
        return {"resourceVersion": self.rv, "objects": objects}

    def restore(self, data: dict[str, Any]) -> None:
        """Reload a snapshot; watches from before the restart get 410 (no event history survives)."""
        for state in self.types.values():
            state.objects.clear()
        for entry in data.get("objects", []):
            obj = entry["object"]
            if entry["type"] == f"customresourcedefinitions.{CRD_GROUP}":
                self._crd_changed("ADDED", obj, None)
            target = self.types.get(entry["type"])
            if target is not None:
                meta = obj["metadata"]
                key = (meta.get("namespace", ""), meta["name"])
                target.objects[key] = obj
                self._index_owners(target.rtype, key, obj, "ADDED")
        self.rv = max(self.rv, int(data.get("resourceVersion", 0)))
        for state in self.types.values():
            state.events.clear()
            state.compacted_rv = self.rv


def _without(obj: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in keys and k not in ("apiVersion", "kind")}


__all__ = ["ApiError", "Store"]
