"""Decode the Kubernetes protobuf bodies kubectl's typed clients send (`kubectl create <kind>`).

Only request bodies of Namespaces, Secrets, ConfigMaps, ServiceAccounts and RBAC objects are decoded
(what `kubectl create namespace|secret|configmap|serviceaccount|role|rolebinding|…` sends), into the
same JSON shape the API takes; responses are always JSON, which clients accept (they send
`Accept: application/vnd.kubernetes.protobuf,application/json`). Wire format: the "k8s\\0" magic, then a
runtime.Unknown {1: TypeMeta{1: apiVersion, 2: kind}, 2: raw, 3: contentEncoding, 4: contentType}.
"""

from __future__ import annotations

import base64
from typing import Any

from .errors import ApiError, bad_request

MAGIC = b"k8s\x00"
PROTOBUF = "application/vnd.kubernetes.protobuf"

Fields = dict[int, list[Any]]


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise bad_request("truncated protobuf varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def fields(data: bytes) -> Fields:
    """Parse one message into {field number: [varint ints or length-delimited bytes]}."""
    out: Fields = {}
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            value, pos = data[pos : pos + length], pos + length
        elif wire == 1:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == 5:
            value, pos = data[pos : pos + 4], pos + 4
        else:
            raise bad_request(f"unsupported protobuf wire type {wire}")
        out.setdefault(number, []).append(value)
    return out


def _text(f: Fields, number: int) -> str:
    values = f.get(number)
    return values[-1].decode() if values else ""


def _map(f: Fields, number: int) -> dict[str, bytes]:
    entries = {}
    for raw in f.get(number, []):
        entry = fields(raw)
        entries[_text(entry, 1)] = entry.get(2, [b""])[-1]
    return entries


def _object_meta(raw: bytes) -> dict[str, Any]:
    f = fields(raw)
    meta: dict[str, Any] = {}
    for number, name in (
        (1, "name"),
        (2, "generateName"),
        (3, "namespace"),
        (5, "uid"),
        (6, "resourceVersion"),
    ):
        if _text(f, number):
            meta[name] = _text(f, number)
    for number, name in ((11, "labels"), (12, "annotations")):
        values = {k: v.decode() for k, v in _map(f, number).items()}
        if values:
            meta[name] = values
    owners = []
    for raw_owner in f.get(13, []):
        o = fields(raw_owner)
        owner: dict[str, Any] = {
            "apiVersion": _text(o, 5),
            "kind": _text(o, 1),
            "name": _text(o, 3),
            "uid": _text(o, 4),
        }
        for number, name in ((6, "controller"), (7, "blockOwnerDeletion")):
            if o.get(number):
                owner[name] = bool(o[number][-1])
        owners.append(owner)
    if owners:
        meta["ownerReferences"] = owners
    if f.get(14):
        meta["finalizers"] = [v.decode() for v in f[14]]
    return meta


def _secret(f: Fields) -> dict[str, Any]:
    body: dict[str, Any] = {"metadata": _object_meta(f.get(1, [b""])[-1])}
    data = _map(f, 2)
    if data:
        body["data"] = {k: base64.b64encode(v).decode() for k, v in data.items()}
    if _text(f, 3):
        body["type"] = _text(f, 3)
    string_data = {k: v.decode() for k, v in _map(f, 4).items()}
    if string_data:
        body["stringData"] = string_data
    if f.get(5):
        body["immutable"] = bool(f[5][-1])
    return body


def _namespace(f: Fields) -> dict[str, Any]:
    return {"metadata": _object_meta(f.get(1, [b""])[-1])}  # spec and status are the server's


# Other kinds, declared field by field as in k8s.io/api's generated.proto:
# number -> (JSON name, how to decode: str, strs, bool, strmap, bytesmap, meta, or a nested message spec;
# a nested spec in a list means a repeated message).
Spec = dict[int, tuple[str, Any]]
OBJECT_REFERENCE: Spec = {
    1: ("kind", "str"),
    2: ("namespace", "str"),
    3: ("name", "str"),
    4: ("uid", "str"),
    5: ("apiVersion", "str"),
    6: ("resourceVersion", "str"),
    7: ("fieldPath", "str"),
}
POLICY_RULE: Spec = {
    1: ("verbs", "strs"),
    2: ("apiGroups", "strs"),
    3: ("resources", "strs"),
    4: ("resourceNames", "strs"),
    5: ("nonResourceURLs", "strs"),
}
LABEL_SELECTOR: Spec = {
    1: ("matchLabels", "strmap"),
    2: ("matchExpressions", [{1: ("key", "str"), 2: ("operator", "str"), 3: ("values", "strs")}]),
}
BINDING: Spec = {
    1: ("metadata", "meta"),
    2: (
        "subjects",
        [{1: ("kind", "str"), 2: ("apiGroup", "str"), 3: ("name", "str"), 4: ("namespace", "str")}],
    ),
    3: ("roleRef", {1: ("apiGroup", "str"), 2: ("kind", "str"), 3: ("name", "str")}),
}
MESSAGES: dict[tuple[str, str], Spec] = {
    ("v1", "ConfigMap"): {
        1: ("metadata", "meta"),
        2: ("data", "strmap"),
        3: ("binaryData", "bytesmap"),
        4: ("immutable", "bool"),
    },
    ("v1", "ServiceAccount"): {
        1: ("metadata", "meta"),
        2: ("secrets", [OBJECT_REFERENCE]),
        3: ("imagePullSecrets", [{1: ("name", "str")}]),
        4: ("automountServiceAccountToken", "bool"),
    },
    ("rbac.authorization.k8s.io/v1", "Role"): {1: ("metadata", "meta"), 2: ("rules", [POLICY_RULE])},
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): {
        1: ("metadata", "meta"),
        2: ("rules", [POLICY_RULE]),
        3: ("aggregationRule", {1: ("clusterRoleSelectors", [LABEL_SELECTOR])}),
    },
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): BINDING,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): BINDING,
}


def _message(f: Fields, spec: Spec) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for number, (name, how) in spec.items():
        values = f.get(number)
        if not values:
            continue
        if how == "str":
            out[name] = values[-1].decode()
        elif how == "strs":
            out[name] = [v.decode() for v in values]
        elif how == "bool":
            out[name] = bool(values[-1])
        elif how == "strmap":
            out[name] = {k: v.decode() for k, v in _map(f, number).items()}
        elif how == "bytesmap":
            out[name] = {k: base64.b64encode(v).decode() for k, v in _map(f, number).items()}
        elif how == "meta":
            out[name] = _object_meta(values[-1])
        elif isinstance(how, list):
            out[name] = [_message(fields(v), how[0]) for v in values]
        else:
            out[name] = _message(fields(values[-1]), how)
    return out


def decode(data: bytes) -> dict[str, Any]:
    if not data.startswith(MAGIC):
        raise bad_request("protobuf body without the k8s magic prefix")
    envelope = fields(data[len(MAGIC) :])
    type_meta = fields(envelope.get(1, [b""])[-1])
    api_version, kind = _text(type_meta, 1), _text(type_meta, 2)
    raw = fields(envelope.get(2, [b""])[-1])
    decoders = {"Secret": _secret, "Namespace": _namespace}
    if api_version == "v1" and kind in decoders:
        return {"apiVersion": api_version, "kind": kind, **decoders[kind](raw)}
    spec = MESSAGES.get((api_version, kind))
    if spec is None:
        raise ApiError(
            415,
            "UnsupportedMediaType",
            f"the emulator does not decode protobuf for {api_version} {kind}; send JSON (kubectl apply does)",
        )
    return {"apiVersion": api_version, "kind": kind, **_message(raw, spec)}
