"""Reading a request as kube-apiserver does: the body (size limit, JSON/YAML/protobuf, nesting depth,
int64 range), the query parameters (typed: a malformed one is a 400, never a 500), content negotiation
(`Accept: application/json;as=Table|PartialObjectMetadata|PartialObjectMetadataList;g=meta.k8s.io;v=v1`)
and DeleteOptions (query string or body)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml
from aiohttp import web

from . import protobuf
from .errors import ApiError, Cause, bad_request, invalid, not_supported
from .options import DeleteOptions, WriteOptions
from .validation import MAX_REQUEST_BODY_BYTES

MAX_JSON_DEPTH = 1000  # the emulator's bound; Go's JSON decoder stops at 10000
_INT64 = (-(2**63), 2**63 - 1)
_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")
TRANSFORMS = ("Table", "PartialObjectMetadata", "PartialObjectMetadataList")


def too_large() -> ApiError:
    return ApiError(
        413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_REQUEST_BODY_BYTES}"
    )


def _int_or_float(text: str) -> int | float:
    """Like the apiserver's unstructured decoder: an integer beyond int64 becomes a float64."""
    value = int(text)
    return value if _INT64[0] <= value <= _INT64[1] else float(value)


def _depth_exceeded(value: Any) -> bool:
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return True
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node if isinstance(v, (dict, list)))
    return False


def parse_body(raw: bytes, content_type: str) -> Any:
    if not raw:
        return None
    if len(raw) > MAX_REQUEST_BODY_BYTES:
        raise too_large()
    if content_type == protobuf.PROTOBUF:
        return protobuf.decode(raw)
    try:
        is_yaml = "yaml" in content_type
        value = yaml.safe_load(raw) if is_yaml else json.loads(raw, parse_int=_int_or_float)
    except RecursionError:
        raise bad_request("the request body could not be decoded: exceeded max depth") from None
    except (ValueError, yaml.YAMLError) as exc:
        raise bad_request(f"the request body could not be decoded: {exc}") from None
    if raw.count(b"{") + raw.count(b"[") > MAX_JSON_DEPTH and _depth_exceeded(value):
        raise bad_request(
            f"the request body could not be decoded: exceeded max depth (the emulator accepts {MAX_JSON_DEPTH})"
        )
    return value


async def read_body(request: web.Request) -> Any:
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise too_large() from None
    return parse_body(raw, request.content_type or "")


# ------------------------------------------------------------------------------------ query params
@dataclass
class Query:
    params: Mapping[str, str]

    def get(self, name: str, default: str = "") -> str:
        return self.params.get(name, default)

    def integer(self, name: str) -> int | None:
        text = self.params.get(name, "")
        if text == "":
            return None
        try:
            value = int(text, 10)
        except ValueError:
            raise bad_request(f'strconv.ParseInt: parsing "{text}": invalid syntax') from None
        if not _INT64[0] <= value <= _INT64[1]:
            raise bad_request(f'strconv.ParseInt: parsing "{text}": value out of range')
        return value

    def boolean(self, name: str) -> bool:
        text = self.params.get(name, "")
        if text == "" or text in _FALSE:
            return False
        if text in _TRUE:
            return True
        raise bad_request(f'strconv.ParseBool: parsing "{text}": invalid syntax')


def _dry_run(values: Any, kind: str) -> bool:
    values = [values] if isinstance(values, str) else list(values or [])
    for value in values:
        if value != "All":
            raise invalid(kind, "meta.k8s.io", "", [not_supported("dryRun", value, ("All",))])
    return bool(values)


def write_options(request: web.Request, kind: str) -> WriteOptions:
    query = Query(request.query)
    validation = query.get("fieldValidation")
    if validation not in ("", "Ignore", "Warn", "Strict"):
        raise bad_request(
            f'fieldValidation: Invalid value: "{validation}": fieldValidation must be one of "Ignore", "Strict", "Warn"'
        )
    manager = query.get("fieldManager") or default_manager(request.headers.get("User-Agent", ""))
    if len(manager) > 128:
        raise invalid(
            kind,
            "meta.k8s.io",
            "",
            [Cause("FieldValueTooLong", "Too long: may not be more than 128 bytes", "fieldManager")],
        )
    return WriteOptions(
        dry_run=_dry_run(request.query.getall("dryRun", []), kind),
        strict_fields=validation == "Strict",
        manager=manager,
    )


def default_manager(user_agent: str) -> str:
    """What the apiserver names a writer that did not pass fieldManager: its User-Agent's product."""
    return user_agent.split("/")[0] if user_agent else "unknown"


_POLICIES = ("Background", "Foreground", "Orphan")


def delete_options(request: web.Request, body: Any) -> DeleteOptions:
    """DeleteOptions from the query string and/or the body (kubectl sends them in the body)."""
    if body is not None and not isinstance(body, dict):
        raise bad_request("DeleteOptions must be an object")
    options = body or {}
    query = Query(request.query)
    dry_run = _dry_run(request.query.getall("dryRun", []), "DeleteOptions") or _dry_run(
        options.get("dryRun"), "DeleteOptions"
    )
    policy = options.get("propagationPolicy") or query.get("propagationPolicy")
    orphan = options.get("orphanDependents")
    if orphan is None and query.get("orphanDependents"):
        orphan = query.boolean("orphanDependents")
    if policy and orphan is not None:
        cause = Cause(
            "FieldValueInvalid",
            f'Invalid value: "{policy}": orphanDependents and deletionPropagation cannot be both set',
            "propagationPolicy",
        )
        raise invalid("DeleteOptions", "meta.k8s.io", "", [cause])
    if policy and policy not in _POLICIES:
        raise invalid(
            "DeleteOptions", "meta.k8s.io", "", [not_supported("propagationPolicy", policy, _POLICIES)]
        )
    if orphan is not None:
        policy = "Orphan" if orphan else "Background"
    query.integer("gracePeriodSeconds")
    preconditions = options.get("preconditions") or {}
    if not isinstance(preconditions, dict):
        raise bad_request("preconditions must be an object")
    return DeleteOptions(dry_run=dry_run, propagation=str(policy or ""), preconditions=preconditions)


# ---------------------------------------------------------------------------------- negotiation
@dataclass(frozen=True)
class Transform:
    kind: str = ""  # "" (the object itself), Table, PartialObjectMetadata or PartialObjectMetadataList
    version: str = "v1"  # of meta.k8s.io

    @property
    def api_version(self) -> str:
        return f"meta.k8s.io/{self.version}"


def negotiate(accept: str) -> Transform:
    """What the client asked for: the first Accept alternative the emulator can answer. Protobuf
    alternatives are skipped (responses are JSON, which every client accepts)."""
    if not accept.strip():
        return Transform()
    for alternative in accept.split(","):
        parts = [p.strip() for p in alternative.split(";")]
        media = parts[0].lower()
        params = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        if media not in ("application/json", "application/*", "*/*", "application/yaml", "*"):
            continue
        target = params.get("as", "")
        if not target:
            return Transform()
        if target in TRANSFORMS and params.get("g") == "meta.k8s.io" and params.get("v") in ("v1", "v1beta1"):
            return Transform(target, params["v"])
    raise ApiError(
        406,
        "NotAcceptable",
        "only the following media types are accepted: application/json, application/yaml, "
        "application/vnd.kubernetes.protobuf",
    )
