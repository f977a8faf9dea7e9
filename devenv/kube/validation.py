"""ObjectMeta validation with apimachinery's rules and messages: names (per kind), labels, annotations,
finalizers, and the size limits kube-apiserver and etcd enforce."""

from __future__ import annotations

import json
import re
from typing import Any

from .errors import Cause

QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT = f"({QUALIFIED_NAME_FMT})?"
DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"

_QUALIFIED_NAME = re.compile(QUALIFIED_NAME_FMT)
_LABEL_VALUE = re.compile(LABEL_VALUE_FMT)
_DNS1123_LABEL = re.compile(DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN = re.compile(DNS1123_SUBDOMAIN_FMT)
_DNS1035_LABEL = re.compile(DNS1035_LABEL_FMT)

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024  # kube-apiserver's --max-request-body-bytes default
ETCD_MAX_OBJECT_BYTES = 1536 * 1024  # etcd's --max-request-bytes default (1.5 MiB)
MAX_SECRET_SIZE = 1024 * 1024  # corev1.MaxSecretSize, also the ConfigMap limit
STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """apimachinery's validation.RegexError."""
    shown = "".join(f"{' or ' if i else ''}'{e}', " for i, e in enumerate(examples))
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def _format_check(
    value: str, max_len: int, regex: re.Pattern[str], msg: str, fmt: str, *examples: str
) -> list[str]:
    errs = []
    if len(value) > max_len:
        errs.append(max_len_error(max_len))
    if not regex.fullmatch(value):
        errs.append(regex_error(msg, fmt, *examples))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    msg = (
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
        "and must start and end with an alphanumeric character"
    )
    return _format_check(value, 253, _DNS1123_SUBDOMAIN, msg, DNS1123_SUBDOMAIN_FMT, "example.com")


def is_dns1123_label(value: str) -> list[str]:
    msg = (
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
        "and must start and end with an alphanumeric character"
    )
    return _format_check(value, 63, _DNS1123_LABEL, msg, DNS1123_LABEL_FMT, "my-name", "123-abc")


def is_dns1035_label(value: str) -> list[str]:
    msg = (
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
        "alphabetic character, and end with an alphanumeric character"
    )
    return _format_check(value, 63, _DNS1035_LABEL, msg, DNS1035_LABEL_FMT, "my-name", "abc-123")


def is_path_segment_name(value: str) -> list[str]:
    """RBAC object names: anything that fits in a URL path segment."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


def is_qualified_name(value: str) -> list[str]:
    errs: list[str] = []
    parts = value.split("/")
    msg = (
        "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
        "alphanumeric character"
    )
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs += [f"prefix part {m}" for m in is_dns1123_subdomain(prefix)]
    else:
        return [
            "a qualified name "
            + regex_error(msg, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append(f"name part {max_len_error(63)}")
    if not _QUALIFIED_NAME.fullmatch(name):
        errs.append("name part " + regex_error(msg, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def is_label_value(value: str) -> list[str]:
    msg = (
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
        "and must start and end with an alphanumeric character"
    )
    return _format_check(value, 63, _LABEL_VALUE, msg, LABEL_VALUE_FMT, "MyValue", "my_value", "12345")


NAME_RULES = {
    "subdomain": is_dns1123_subdomain,
    "label": is_dns1123_label,
    "dns1035": is_dns1035_label,
    "path": is_path_segment_name,
}


def _quoted(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else f'"{value}"'


def invalid(field: str, value: Any, msg: str) -> Cause:
    return Cause("FieldValueInvalid", f"Invalid value: {_quoted(value)}: {msg}", field)


def validate_name(name: str, rule: str, field: str = "metadata.name") -> list[Cause]:
    return [invalid(field, name, m) for m in NAME_RULES[rule](name)]


def validate_generate_name(prefix: str, rule: str) -> list[Cause]:
    """apimachinery's name validation with prefix=true (its maskTrailingDash: a trailing '-' is allowed)."""
    if rule == "path":
        return [
            invalid("metadata.generateName", prefix, m)
            for m in is_path_segment_name(prefix)
            if not m.startswith("may not be '")
        ]
    masked = prefix[:-2] + "a" if len(prefix) > 1 and prefix.endswith("-") else prefix
    return [invalid("metadata.generateName", prefix, m) for m in NAME_RULES[rule](masked)]


def validate_meta(meta: dict[str, Any], builtin: bool) -> tuple[list[Cause], list[str]]:
    """Labels, annotations and finalizers as ValidateObjectMeta checks them: (causes, warnings)."""
    causes: list[Cause] = []
    warnings: list[str] = []
    labels = meta.get("labels") or {}
    for key, value in labels.items():
        causes += [invalid("metadata.labels", key, m) for m in is_qualified_name(key)]
        causes += [invalid("metadata.labels", value, m) for m in is_label_value(value)]
    annotations = meta.get("annotations") or {}
    for key in annotations:
        # Annotation keys are qualified names, compared case-insensitively.
        causes += [invalid("metadata.annotations", key, m) for m in is_qualified_name(key.lower())]
    if sum(len(k) + len(v) for k, v in annotations.items()) > TOTAL_ANNOTATION_SIZE_LIMIT:
        causes.append(
            Cause(
                "FieldValueTooLong",
                f"Too long: may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT} bytes",
                "metadata.annotations",
            )
        )
    finalizers = meta.get("finalizers") or []
    for i, name in enumerate(finalizers):
        errors = is_qualified_name(name)
        causes += [invalid("metadata.finalizers", name, m) for m in errors]
        if errors or "/" in name or name in STANDARD_FINALIZERS:
            continue
        if builtin:
            # Built-in kinds use core's ValidateObjectMeta, which also refuses unqualified custom names.
            causes.append(
                invalid(
                    f"metadata.finalizers[{i}]",
                    name,
                    "name is neither a standard finalizer name nor is it fully qualified",
                )
            )
        else:
            warnings.append(
                f'metadata.finalizers: "{name}": prefer a domain-qualified finalizer name including a path '
                "(/) to avoid accidental conflicts with other finalizer writers"
            )
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        causes.append(
            Cause(
                "FieldValueInvalid",
                f"Invalid value: {json.dumps(finalizers)}: finalizer orphan and foregroundDeletion cannot be both set",
                "metadata.finalizers",
            )
        )
    return causes, warnings


def encoded_size(obj: Any) -> int:
    return len(json.dumps(obj, separators=(",", ":")).encode())
