"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902) on plain JSON values."""

from __future__ import annotations

import copy
from typing import Any

from .errors import ApiError, bad_request


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _split(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise _patch_error(f'invalid JSON pointer "{pointer}"')
    return [_unescape(t) for t in pointer[1:].split("/")]


def _patch_error(message: str) -> ApiError:
    # The apiserver answers every failure to apply a JSON patch (including a failed `test`) with 422.
    return ApiError(
        422, "Invalid", f"the server rejected our request due to an error in our request: {message}"
    )


def _parent(doc: Any, tokens: list[str], op: str) -> Any:
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            raise _patch_error(f"{op} operation does not apply: doc is missing path: /{'/'.join(tokens)}")
    return node


def _get(doc: Any, tokens: list[str], op: str) -> Any:
    if not tokens:
        return doc
    parent = _parent(doc, tokens, op)
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent[int(last)]
    raise _patch_error(f"{op} operation does not apply: doc is missing path: /{'/'.join(tokens)}")


def _remove(doc: Any, tokens: list[str], op: str) -> Any:
    parent = _parent(doc, tokens, op)
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent.pop(int(last))
    raise _patch_error(f"{op} operation does not apply: doc is missing path: /{'/'.join(tokens)}")


def _add(doc: Any, tokens: list[str], value: Any, op: str) -> Any:
    if not tokens:
        return value
    parent = _parent(doc, tokens, op)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent):
            parent.insert(int(last), value)
        else:
            raise _patch_error(f"{op} operation does not apply: index out of range: /{'/'.join(tokens)}")
    else:
        raise _patch_error(f"{op} operation does not apply: doc is missing path: /{'/'.join(tokens)}")
    return doc


def json_patch(target: Any, operations: Any) -> Any:
    if not isinstance(operations, list):
        raise bad_request("json patch must be a list of operations")
    doc = copy.deepcopy(target)
    for operation in operations:
        if not isinstance(operation, dict) or "op" not in operation or "path" not in operation:
            raise _patch_error(f"invalid operation {operation!r}")
        op = operation["op"]
        tokens = _split(str(operation["path"]))
        if op == "add":
            doc = _add(doc, tokens, copy.deepcopy(operation.get("value")), op)
        elif op == "remove":
            _remove(doc, tokens, op)
        elif op == "replace":
            if tokens:
                _get(doc, tokens, op)
                _remove(doc, tokens, op)
            doc = _add(doc, tokens, copy.deepcopy(operation.get("value")), op)
        elif op in ("move", "copy"):
            source = _split(str(operation.get("from", "")))
            value = _remove(doc, source, op) if op == "move" else copy.deepcopy(_get(doc, source, op))
            doc = _add(doc, tokens, value, op)
        elif op == "test":
            if _get(doc, tokens, op) != operation.get("value"):
                raise _patch_error(f"testing value /{'/'.join(tokens)} failed: test failed")
        else:
            raise _patch_error(f"Unexpected kind: {op}")
    return doc
