"""Admission limits: OpenStack's real limits as field types, each enforced by the CRD and by the model alike.

A limit lives here once and reaches both sides: OpenAPI keywords (maxLength, pattern, maxProperties) come from
pydantic's constraints, and a `Rule` is one `x-kubernetes-validations` CEL rule together with the same check in
Python, so `kubectl apply` and `Spec.model_validate` reject the same input with the same message. Where each
number comes from is listed in api/README.md ("Admission limits").

Patterns use only what Go's RE2 (kube-apiserver), Python's re (the models, through `Pattern`) and Rust's regex
(pydantic's own `pattern=`) read the same way: hex escapes (\\x00), explicit classes, no lookaround, no \\s or
\\d (ASCII in RE2, Unicode in the others). RE2 anchors `$` at the end of the text only, and `Pattern` uses
re.fullmatch, which agrees; Python's re.search with `$` would also match before a final newline (the kube
emulator still matches that way), so names and URLs also carry a CEL rule that rejects one (CEL's matches() and
trim() behave the same in the apiserver and in celpy).

Pure pydantic and the standard library only: workflows import this module inside Temporal's sandbox.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, Field, GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.config import JsonDict
from pydantic.json_schema import JsonSchemaValue

# pydantic_core's CoreSchema, which the runtime does not depend on by name: the hooks below only pass it on.
CoreSchema = Any

# --- rules ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """One CEL rule of the CRD and, unless it is a transition rule (oldSelf), the same check in Python.

    Used as Annotated metadata; its rule is appended to the field's x-kubernetes-validations, so several
    rules on one field (a type's and the field's own) never overwrite each other.
    """

    cel: str
    message: str
    check: Callable[[Any], bool] | None = None  # None: a transition rule, enforced by the CRD only

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        check, message = self.check, self.message
        if check is None:
            return handler(source)

        def validate(value: Any) -> Any:
            if not check(value):
                raise ValueError(message)
            return value

        return AfterValidator(validate).__get_pydantic_core_schema__(source, handler)

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        json_schema = handler(schema)
        rules = json_schema.setdefault("x-kubernetes-validations", [])
        rules.append({"rule": self.cel, "message": self.message})
        return json_schema


@dataclass(frozen=True)
class Pattern:
    """An OpenAPI pattern of the CRD and the same check in Python, failing with a message that says what fits.

    The apiserver matches `regex` with RE2; Python's re.fullmatch reads these patterns the same way (a match
    must reach the end of the text: no trailing newline slips through, as with RE2's `$`).
    """

    regex: str
    message: str

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        compiled, message = re.compile(self.regex), self.message

        def validate(value: str) -> str:
            if compiled.fullmatch(value) is None:
                raise ValueError(message)
            return value

        return AfterValidator(validate).__get_pydantic_core_schema__(source, handler)

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        json_schema = handler(schema)
        json_schema["pattern"] = self.regex
        return json_schema


def immutable(message: str) -> Rule:
    """A required field that can never change once the resource exists."""
    return Rule("self == oldSelf", message)


def immutable_if_set(field: str, message: str) -> JsonDict:
    """A spec-level rule for an optional field: it may be neither added, removed nor changed.

    (A rule on the field itself would not see it being added or removed.) fieldPath makes the apiserver
    name the field itself in the error.
    """
    return {
        "rule": f"has(self.{field}) == has(oldSelf.{field}) && "
        f"(!has(self.{field}) || self.{field} == oldSelf.{field})",
        "message": message,
        "fieldPath": f".{field}",
    }


def keystone_immutable(field: str) -> str:
    """The message for an identifying field of a Keystone kind (issue 12: renames never re-target)."""
    return f"spec.{field} is immutable: create a new resource to manage another Keystone object"


# --- names and free text --------------------------------------------------------------------------------

# No control character (Unicode Cc: C0, DEL, C1) anywhere.
NO_CONTROL = Pattern(r"^[^\x00-\x1f\x7f-\x9f]*$", "must not contain control characters")
# Keystone strips the names of domains, projects, users and groups, so " x" would be created as "x" and never
# found again under the declared name. Go's strings.TrimSpace (CEL) and str.strip agree on every whitespace
# character that is not also a control character.
TRIMMED = Rule(
    "self.trim() == self",
    "must not start or end with whitespace (Keystone strips names)",
    lambda value: value.strip() == value,
)
# Keystone: 64 for domains and projects (resource/schema.py, project.name String(64)) and groups
# (identity group.name String(64)); 255 for users, roles and services (identity/schema.py, assignment/schema.py,
# catalog/schema.py).
SHORT_NAME_MAX = 64
NAME_MAX = 255
# Keystone's common description type (keystone/api/validation/parameter_types.py), used for domains; projects,
# users, groups and services store theirs unbounded, osprov holds them to the same 255 characters.
DESCRIPTION_MAX = 255

ShortKeystoneName = Annotated[str, Field(min_length=1, max_length=SHORT_NAME_MAX), NO_CONTROL, TRIMMED]
"""A Keystone name of a domain, project or group: at most 64 characters."""

KeystoneName = Annotated[str, Field(min_length=1, max_length=NAME_MAX), NO_CONTROL, TRIMMED]
"""A Keystone name of a user, role or service: at most 255 characters."""

Description = Annotated[str, Field(max_length=DESCRIPTION_MAX)]

Email = Annotated[str, Field(max_length=NAME_MAX), NO_CONTROL]

# Service types as the service-types authority writes them (volumev3, load-balancer, key-manager; one alias,
# application_deployment, has an underscore). Keystone's own limit is 255 characters (catalog/schema.py).
SERVICE_TYPE = Pattern(
    r"^[a-z0-9]([-_a-z0-9]*[a-z0-9])?$",
    "must be lowercase letters, digits, - and _, starting and ending with a letter or digit, e.g. volumev3",
)
ServiceType = Annotated[str, Field(min_length=1, max_length=NAME_MAX), SERVICE_TYPE]

# Keystone region IDs are free text up to 255 characters, but osprov puts the ID in a URL path
# (GET /v3/regions/{id}) and openstacksdk does not escape it: "a/../../users" would become GET /v3/users.
REGION_ID = Pattern(
    r"^[A-Za-z0-9][-._A-Za-z0-9]*$",
    "must be letters, digits, '.', '_' and '-', starting with a letter or digit, e.g. RegionOne "
    "(the region ID is part of a Keystone URL path)",
)
RegionId = Annotated[str, Field(min_length=1, max_length=NAME_MAX), REGION_ID]

# --- endpoint URLs --------------------------------------------------------------------------------------

# Keystone's url type (keystone/api/validation/parameter_types.py): at most 225 characters.
URL_MAX = 225
# RFC 3986 characters except ': with < > " ` { } | \ ^, spaces and controls (not URL characters at all)
# excluded, no markup reaches the catalog. The authority has no @: no user:password@ in a published URL, and
# no "trusted.example@evil.example" look-alikes. Keystone's %(project_id)s templates are plain characters.
_URL_CHARS = r"-A-Za-z0-9._~%!$&()*+,;=:@/?#\[\]"
_AUTHORITY_CHARS = r"-A-Za-z0-9._~%!$&()*+,;=:\[\]"
URL = Pattern(
    rf"^https?://[{_AUTHORITY_CHARS}]+([/?#][{_URL_CHARS}]*)?$",
    "must be an http(s) URL: http:// or https://, a host without user:password@, then only RFC 3986 "
    "characters (no spaces, quotes, < or >)",
)
URL_NO_SPACE = Rule(
    r"!self.matches('[\\x00-\\x20\\x7f-\\x9f]')",
    "must not contain spaces or control characters (a YAML block scalar, |, adds a trailing newline)",
    lambda value: re.search(r"[\x00-\x20\x7f-\x9f]", value) is None,
)
EndpointUrl = Annotated[str, Field(min_length=1, max_length=URL_MAX), URL, URL_NO_SPACE]
"""An http(s) endpoint URL as Keystone's catalog takes it."""

# --- Nova and Cinder metadata (tags) --------------------------------------------------------------------

# User tags are stored as metadata keys "osprov.tag.<key>" (api/nova_io.py, api/cinder_io.py). Nova allows
# keys matching ^[a-zA-Z0-9-_:. ]{1,255}$ and values of at most 255 characters
# (nova/api/validation/parameter_types.py `metadata`); Cinder allows the same plus "/"
# (cinder/api/validation/parameter_types.py `extra_specs`), so the Nova rule holds for both.
TAG_PREFIX_LENGTH = len("osprov.tag.")
TAG_KEY_MAX = 255 - TAG_PREFIX_LENGTH
TAG_VALUE_MAX = 255
# Nova's default metadata_items quota is 128 per server, of which the controller's linkage keys take 5 (6 on a
# Cinder volume); 32 user tags stay well inside it.
TAGS_MAX = 32
TAG_KEY_PATTERN = rf"^[-a-zA-Z0-9_:. ]{{1,{TAG_KEY_MAX}}}$"
_TAG_KEY_RE = re.compile(TAG_KEY_PATTERN)
TAG_KEYS = Rule(
    f"self.all(k, k.matches('{TAG_KEY_PATTERN}'))",
    f"tag keys must be 1 to {TAG_KEY_MAX} letters, digits, spaces or - _ : . "
    "(Nova's metadata keys, less the osprov.tag. prefix)",
    lambda tags: all(_TAG_KEY_RE.fullmatch(key) for key in tags),
)
Tags = Annotated[
    dict[str, Annotated[str, Field(max_length=TAG_VALUE_MAX)]], Field(max_length=TAGS_MAX), TAG_KEYS
]

# --- Nova create-time parameters ------------------------------------------------------------------------

# Nova takes user_data as base64 text of at most 65535 characters (nova/api/openstack/compute/schemas/
# servers.py). osprov encodes the UTF-8 bytes of userData: n bytes become 4*ceil(n/3) characters, so 49149
# bytes (65532 characters) is the most that fits; 49150 would be 65536. The CEL rule counts UTF-8 bytes, not
# characters, so non-ASCII text can never slip past; maxLength (characters, never more than bytes) bounds
# the rule's cost.
USER_DATA_MAX_BYTES = 49149
UserData = Annotated[
    str,
    Field(max_length=USER_DATA_MAX_BYTES),
    Rule(
        f"size(bytes(self)) <= {USER_DATA_MAX_BYTES}",
        f"must be at most {USER_DATA_MAX_BYTES} bytes in UTF-8: Nova takes at most 65535 characters once it "
        "is base64-encoded",
        lambda value: len(value.encode("utf-8")) <= USER_DATA_MAX_BYTES,
    ),
]

# Nova keypair names: ^[_\- a-zA-Z0-9]+$, since microversion 2.92 also @ and . (keypair_name_special_chars*),
# and, as every Nova name, no leading or trailing space; at most 255 characters.
KEYPAIR = Pattern(
    r"^[-_@.a-zA-Z0-9]([-_@. a-zA-Z0-9]*[-_@.a-zA-Z0-9])?$",
    "must be letters, digits, spaces and - _ @ . (a Nova keypair name), not starting or ending with a space",
)
KeypairName = Annotated[str, Field(min_length=1, max_length=NAME_MAX), KEYPAIR]

# --- IP addresses and CIDRs -----------------------------------------------------------------------------


def _ip_patterns() -> tuple[str, str]:
    """IPv4 (dotted decimal, no leading zeros) and IPv6 (RFC 3986's IPv6address), as regular expressions.

    Exact, so the apiserver accepts what Octavia's IPAddressType/CidrType and Python's ipaddress accept (the
    models keep an ipaddress check too; tests/api check both agree). RFC 3986 lists nine forms; the seven
    that end in 32 bits (two groups or an IPv4 address) share that ending here, to keep the pattern short.
    """
    octet = r"(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
    ipv4 = rf"{octet}(\.{octet}){{3}}"
    h16 = r"[0-9a-fA-F]{1,4}"

    def upto(groups: int) -> str:  # [ *groups( h16 ":" ) h16 ]: at most groups + 1 groups before a "::"
        return rf"(({h16}:){{0,{groups}}}{h16})?" if groups else rf"({h16})?"

    before_ls32 = [rf"({h16}:){{6}}", rf"::({h16}:){{5}}"]
    before_ls32 += [rf"{upto(n)}::({h16}:){{{4 - n}}}" for n in range(3)]
    before_ls32 += [rf"{upto(3)}::{h16}:", rf"{upto(4)}::"]
    forms = [f"({'|'.join(before_ls32)})({h16}:{h16}|{ipv4})", rf"{upto(5)}::{h16}", rf"{upto(6)}::"]
    return ipv4, "(" + "|".join(forms) + ")"


IPV4, IPV6 = _ip_patterns()
IP_PATTERN = rf"^({IPV4}|{IPV6})$"
CIDR_PATTERN = rf"^({IPV4}/(3[0-2]|[12]?[0-9])|{IPV6}/(12[0-8]|1[01][0-9]|[1-9]?[0-9]))$"
IP_MAX = 45  # the longest IPv6 text form (IPv4-mapped, full width)
CIDR_MAX = IP_MAX + 4

IpAddress = Annotated[str, Field(max_length=IP_MAX), Pattern(IP_PATTERN, "must be an IPv4 or IPv6 address")]
Cidr = Annotated[
    str, Field(max_length=CIDR_MAX), Pattern(CIDR_PATTERN, "must be an IPv4 or IPv6 CIDR, e.g. 10.0.0.0/8")
]
