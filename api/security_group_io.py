"""Inputs and outputs of the Neutron security-group activities (workflows/security_group.py <->
activities/security_group.py).

Pure pydantic and the standard library: workflows import this module inside Temporal's sandbox. Also the
conventions both sides must agree on: the deterministic group name, and the canonical key of a rule — the
same test Neutron applies when it calls two rules duplicates (neutron/db/securitygroups_db.py
`_rule_to_key`), so "the spec's rule exists" means exactly what Neutron's 409 means.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from osprov.api.activity import Activity
from osprov.api.identity_io import Credential

# neutron_lib.constants.IP_PROTOCOL_MAP: Neutron treats a protocol's name and number as the same rule.
IP_PROTOCOL_NUMBERS: dict[str, int] = {
    "ah": 51,
    "dccp": 33,
    "egp": 8,
    "esp": 50,
    "gre": 47,
    "hopopt": 0,
    "icmp": 1,
    "igmp": 2,
    "ip": 0,
    "ipip": 4,
    "ipv6-encap": 41,
    "ipv6-frag": 44,
    "ipv6-icmp": 58,
    "icmpv6": 58,
    "ipv6-nonxt": 59,
    "ipv6-opts": 60,
    "ipv6-route": 43,
    "ospf": 89,
    "pgm": 113,
    "rsvp": 46,
    "sctp": 132,
    "tcp": 6,
    "udp": 17,
    "udplite": 136,
    "vrrp": 112,
}
ICMP, ICMPV6 = 1, 58
ANY_PREFIXES = ("0.0.0.0/0", "::/0")  # Neutron: the same rule as no prefix at all
ALL_PORTS = (1, 65535)  # Neutron stores the whole range as no range


def security_group_name(uid: str) -> str:
    """The Neutron name of the SecurityGroup resource with this UID (its stable identity; never rename).
    Servers will name their groups through this function."""
    return f"secgroup-{uid}"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RuleKey(_Model):
    """A rule in Neutron's own duplicate terms: protocol as a number (None: any), the whole port range as
    none, the any-address prefix as none."""

    direction: str
    ethertype: str
    protocol: str | None = None
    port_range_min: int | None = None
    port_range_max: int | None = None
    remote_ip_prefix: str | None = None
    remote_group_id: str | None = None

    def describe(self) -> str:
        """How step labels and Events name the rule (no IDs besides the remote group's)."""
        proto = "any" if self.protocol is None else self.protocol
        ports = "" if self.port_range_min is None else f" {self.port_range_min}-{self.port_range_max}"
        peer = self.remote_ip_prefix or (
            f"group {self.remote_group_id}" if self.remote_group_id else "anywhere"
        )
        return f"{self.direction} {self.ethertype} protocol {proto}{ports} {peer}"


def _protocol_number(protocol: str | None, ethertype: str) -> str | None:
    if protocol in (None, "", "any"):
        return None
    number = IP_PROTOCOL_NUMBERS.get(protocol)
    text = str(number) if number is not None else protocol
    if ethertype == "IPv6" and text == str(ICMP):  # Neutron stores IPv6 "icmp" as ipv6-icmp (58)
        text = str(ICMPV6)
    return text


def rule_key(
    *,
    direction: str,
    ethertype: str,
    protocol: str | None,
    port_range_min: int | None,
    port_range_max: int | None,
    remote_ip_prefix: str | None,
    remote_group_id: str | None,
) -> RuleKey:
    """The canonical key of a rule, from the spec or from Neutron (both sides call this)."""
    ports = (port_range_min, port_range_max)
    if ports == ALL_PORTS:
        ports = (None, None)
    return RuleKey(
        direction=direction,
        ethertype=ethertype,
        protocol=_protocol_number(protocol, ethertype),
        port_range_min=ports[0],
        port_range_max=ports[1],
        remote_ip_prefix=None if remote_ip_prefix in ANY_PREFIXES else remote_ip_prefix,
        remote_group_id=remote_group_id,
    )


class Scope(_Model):
    """The Keystone project every call is scoped to: with `credential`, its Identity's application credential
    makes the calls; without, the controller's credentials re-scoped to it (spec.project, where mapped)."""

    project: str
    domain: str
    credential: Credential | None = None


class Rule(_Model):
    """A rule of the group as Neutron holds it."""

    id: str
    key: RuleKey


class Group(_Model):
    """What the workflow sees of a Neutron security group."""

    id: str
    name: str
    description: str = ""
    rules: list[Rule] = Field(default_factory=list)  # sorted by ID


class FindGroup(_Model):
    scope: Scope
    name: str
    # Observe by ID (import.id of an unmanaged SecurityGroup): the project's group with this ID, whatever its name.
    id: str | None = None


class GroupLookup(_Model):
    """project_found=False: the project does not exist in Keystone (so no group can exist in it)."""

    project_found: bool
    groups: list[Group] = Field(default_factory=list)  # exact-name matches, sorted by ID


class ResolveGroups(_Model):
    """The Neutron IDs of other SecurityGroup resources' groups (by metadata.name, in `namespace`): each must
    live where this one does (the same Identity or spec.project), in the same project."""

    scope: Scope
    namespace: str
    names: list[str]


class Resolved(_Model):
    """name -> Neutron group ID; a name without one is listed in `missing` with the reason (user-safe)."""

    ids: dict[str, str] = Field(default_factory=dict)
    missing: dict[str, str] = Field(default_factory=dict)


class CreateGroup(_Model):
    """Create-if-absent: an existing exact-name group is returned instead of creating another."""

    scope: Scope
    name: str
    description: str = ""


class UpdateGroup(_Model):
    scope: Scope
    id: str
    description: str


class CreateRule(_Model):
    """Create the rule; a 409 (Neutron holds the same rule already) adopts the existing rule."""

    scope: Scope
    group_id: str
    key: RuleKey


class DeleteRule(_Model):
    scope: Scope
    group_id: str
    rule_id: str


class DeleteGroup(_Model):
    scope: Scope
    id: str


DeleteOutcome = Literal["deleted", "absent", "in_use"]


class DeleteResult(_Model):
    outcome: DeleteOutcome


# --- activities: the typed contracts (osprov.api.activity) -----------------------------------------
FIND_GROUP: Activity[FindGroup, GroupLookup] = Activity("neutron.find_security_group", FindGroup, GroupLookup)
RESOLVE_GROUPS: Activity[ResolveGroups, Resolved] = Activity(
    "neutron.resolve_security_groups", ResolveGroups, Resolved
)
CREATE_GROUP: Activity[CreateGroup, Group] = Activity("neutron.create_security_group", CreateGroup, Group)
UPDATE_GROUP: Activity[UpdateGroup, Group] = Activity("neutron.update_security_group", UpdateGroup, Group)
CREATE_RULE: Activity[CreateRule, Rule] = Activity("neutron.create_security_group_rule", CreateRule, Rule)
DELETE_RULE: Activity[DeleteRule, bool] = Activity("neutron.delete_security_group_rule", DeleteRule, bool)
DELETE_GROUP: Activity[DeleteGroup, DeleteResult] = Activity(
    "neutron.delete_security_group", DeleteGroup, DeleteResult
)
