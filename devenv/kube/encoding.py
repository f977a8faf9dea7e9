"""JSON encoding of responses and watch events, with stored objects encoded once."""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


# Committed objects never change in place (every write stores a new dict), so a stored object always
# encodes to the same bytes: encode it once for every list, get and watch event that carries it (a watch
# fan-out to N watchers costs one encoding). Entries remember the object itself: a dry-run answer or a
# converted copy with the same uid and resourceVersion is another object and is encoded afresh.
_ENCODED: OrderedDict[tuple[str, str], tuple[dict[str, Any], bytes]] = OrderedDict()
_ENCODED_MAX = 50_000


def encode_object(obj: dict[str, Any]) -> bytes:
    meta = obj.get("metadata") or {}
    uid, rv = meta.get("uid"), meta.get("resourceVersion")
    if not uid or not rv:
        return dumps(obj)  # dry-run creates and bookmarks are not stored objects
    key = (str(uid), str(rv))
    cached = _ENCODED.get(key)
    if cached is not None and cached[0] is obj:
        return cached[1]
    encoded = dumps(obj)
    _ENCODED[key] = (obj, encoded)
    if len(_ENCODED) > _ENCODED_MAX:
        _ENCODED.popitem(last=False)
    return encoded


def list_body(kind: str, api_version: str, meta: dict[str, Any], items: list[dict[str, Any]]) -> bytes:
    """A List whose items are spliced in from their cached encodings."""
    head = dumps({"kind": kind, "apiVersion": api_version, "metadata": meta})[:-1]
    return head + b',"items":[' + b",".join(encode_object(o) for o in items) + b"]}"
