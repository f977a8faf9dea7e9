"""Per-kind rules of kube-apiserver's registry strategies that the emulator reproduces: defaulting and
server-set fields on create/update, and the kind's own validation. The generic rules (ObjectMeta, names,
resourceVersion, generation, status split) live in the store; custom resources use the base strategy
(their rules come from the CRD schema, see admission.py)."""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from typing import Any, Protocol

from .errors import Cause, not_supported
from .validation import MAX_SECRET_SIZE, invalid, regex_error


class Objects(Protocol):
    """The store as strategies see it (read-only)."""

    def list_objects(self, rtype: Any, namespace: str | None) -> list[dict[str, Any]]: ...

    def type_by_key(self, key: str) -> Any: ...


class Strategy:
    name_rule = "subdomain"  # NAME_RULES key in validation.py
    strict_finalizers = True  # core's ValidateObjectMeta (built-ins) refuses unqualified custom finalizers
    generation = False  # metadata.generation is maintained (spec changes bump it)

    def default(self, body: dict[str, Any]) -> None:
        """The scheme's defaults (applied when decoding, so the writer owns them in managedFields)."""

    def prepare_create(self, body: dict[str, Any], objects: Objects) -> None:
        """Fields the server sets on create (after field tracking, before validation)."""

    def prepare_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        """Fields a write through the main endpoint may not change, before validation."""

    def validate(self, body: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
        return []


CUSTOM_RESOURCE = Strategy()
CUSTOM_RESOURCE.strict_finalizers = False
CUSTOM_RESOURCE.generation = True

_CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+")
_CONFIG_KEY_MSG = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"


def config_key_causes(key: str, field: str) -> list[Cause]:
    """apimachinery's IsConfigMapKey, shared by Secrets and ConfigMaps."""
    errs = []
    if len(key) > 253:
        errs.append("must be no more than 253 characters")
    if not _CONFIG_KEY.fullmatch(key):
        errs.append(regex_error(_CONFIG_KEY_MSG, "[-._a-zA-Z0-9]+", "key.name", "KEY_NAME", "key-name"))
    if key in (".", ".."):
        errs.append(f"must not be '{key}'")
    elif key.startswith(".."):
        errs.append("must not start with '..'")
    return [invalid(f"{field}[{key}]", key, m) for m in errs]


def decoded_size(values: dict[str, Any], field: str, causes: list[Cause]) -> int:
    """Total bytes of base64 values (a []byte field), with a cause per value that is not base64."""
    total = 0
    for key, value in values.items():
        try:
            total += len(base64.b64decode(value, validate=True))
        except (binascii.Error, ValueError, TypeError):
            causes.append(Cause("FieldValueInvalid", "Invalid value: illegal base64 data", f"{field}[{key}]"))
    return total


def too_long(field: str, limit: int) -> Cause:
    return Cause("FieldValueTooLong", f"Too long: may not be more than {limit} bytes", field)


def immutable(field: str, value: Any) -> Cause:
    shown = f'"{value}"' if isinstance(value, str) else '"object"'
    return Cause("FieldValueInvalid", f"Invalid value: {shown}: field is immutable", field)


class NamespaceStrategy(Strategy):
    name_rule = "label"

    def default(self, body: dict[str, Any]) -> None:
        meta = body["metadata"]
        meta["labels"] = {**(meta.get("labels") or {}), "kubernetes.io/metadata.name": meta.get("name", "")}

    def prepare_create(self, body: dict[str, Any], objects: Objects) -> None:
        body["spec"] = {"finalizers": ["kubernetes"]}
        body["status"] = {"phase": "Active"}

    def prepare_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        new["spec"] = old.get("spec", {})
        new["status"] = old.get("status", {})


class SecretStrategy(Strategy):
    def default(self, body: dict[str, Any]) -> None:
        """stringData is merged into base64 data (stringData wins) and dropped; the type defaults to Opaque."""
        data = dict(body.get("data") or {})
        for key, value in (body.pop("stringData", None) or {}).items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        if data:
            body["data"] = data
        else:
            body.pop("data", None)
        body.setdefault("type", "Opaque")

    def validate(self, body: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
        causes: list[Cause] = []
        data = body.get("data") or {}
        for key in data:
            causes += config_key_causes(key, "data")
        if decoded_size(data, "data", causes) > MAX_SECRET_SIZE:
            causes.append(too_long("data", MAX_SECRET_SIZE))
        if old is not None and body.get("type") != old.get("type"):
            causes.append(immutable("type", body.get("type")))
        if old is not None and old.get("immutable") and body.get("data") != old.get("data"):
            causes.append(
                Cause("FieldValueForbidden", "Forbidden: field is immutable when `immutable` is set", "data")
            )
        return causes


class ConfigMapStrategy(Strategy):
    def validate(self, body: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
        causes: list[Cause] = []
        data = body.get("data") or {}
        binary = body.get("binaryData") or {}
        for key in data:
            causes += config_key_causes(key, "data")
        for key in binary:
            causes += config_key_causes(key, "binaryData")
            if key in data:
                causes.append(invalid(f"data[{key}]", key, f'duplicate of key "{key}"'))
        size = sum(len(v.encode()) for v in data.values()) + decoded_size(binary, "binaryData", causes)
        if size > MAX_SECRET_SIZE:
            causes.append(too_long("", MAX_SECRET_SIZE))
        if old is not None and old.get("immutable") and _payload(body) != _payload(old):
            causes.append(
                Cause("FieldValueForbidden", "Forbidden: field is immutable when `immutable` is set", "data")
            )
        return causes


def _payload(config_map: dict[str, Any]) -> tuple[Any, Any]:
    return config_map.get("data"), config_map.get("binaryData")


SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/12")
SERVICE_TYPES = ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName")


class ServiceStrategy(Strategy):
    name_rule = "dns1035"

    def default(self, body: dict[str, Any]) -> None:
        spec = body.setdefault("spec", {})
        spec.setdefault("type", "ClusterIP")
        if spec["type"] == "ExternalName":
            return
        spec.setdefault("sessionAffinity", "None")
        spec.setdefault("internalTrafficPolicy", "Cluster")
        for port in spec.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")
                port.setdefault("targetPort", port.get("port"))

    def prepare_create(self, body: dict[str, Any], objects: Objects) -> None:
        spec = body.setdefault("spec", {})
        body["status"] = {"loadBalancer": {}}
        if spec.get("type") == "ExternalName":
            return
        if not spec.get("clusterIP"):
            spec["clusterIP"] = self._allocate(objects)
        if spec["clusterIP"] != "None":
            spec.setdefault("clusterIPs", [spec["clusterIP"]])
            spec.setdefault("ipFamilies", ["IPv4"])
            spec.setdefault("ipFamilyPolicy", "SingleStack")

    @staticmethod
    def _allocate(objects: Objects) -> str:
        services = objects.type_by_key("services")
        used = {(s.get("spec") or {}).get("clusterIP") for s in objects.list_objects(services, None)}
        for host in SERVICE_CIDR.hosts():
            if str(host) not in used and host != SERVICE_CIDR.network_address + 1:  # .1: the kubernetes svc
                return str(host)
        raise RuntimeError("service CIDR exhausted")

    def prepare_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        spec, old_spec = new.setdefault("spec", {}), old.get("spec") or {}
        for allocated in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
            if not spec.get(allocated) and old_spec.get(allocated):
                spec[allocated] = old_spec[
                    allocated
                ]  # patchAllocatedValues: a PUT may omit what was allocated
        new["status"] = old.get("status", {})

    def validate(self, body: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
        spec = body.get("spec") or {}
        causes: list[Cause] = []
        kind = spec.get("type")
        if kind not in SERVICE_TYPES:
            causes.append(not_supported("spec.type", kind, tuple(sorted(SERVICE_TYPES))))
        ports = spec.get("ports") or []
        if not ports and kind != "ExternalName" and spec.get("clusterIP") != "None":
            causes.append(Cause("FieldValueRequired", "Required value", "spec.ports"))
        for i, port in enumerate(ports):
            number = port.get("port") if isinstance(port, dict) else None
            if not isinstance(number, int) or not 1 <= number <= 65535:
                causes.append(
                    invalid(f"spec.ports[{i}].port", number, "must be between 1 and 65535, inclusive")
                )
        if old is not None:
            before = (old.get("spec") or {}).get("clusterIP")
            if before and spec.get("clusterIP") != before:
                causes.append(immutable("spec.clusterIPs[0]", spec.get("clusterIP")))
        return causes
