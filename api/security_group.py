"""SecurityGroup (neutron.osh.openstack.org/v1alpha1): a Neutron security group and exactly its rules.

The spec is the whole rule set: rules are converged in place (missing ones created, others deleted — Neutron's
default egress rules on a new group too, unless the spec declares them), the group itself is never recreated.
What Neutron would refuse is refused here first (CRD schema and CEL; what CEL cannot check, such as a CIDR's
address family, the model rejects with a message naming the rule), so a bad rule never reaches a cloud write.
docs/security-group.md has the table and the decisions.
"""

from __future__ import annotations

import ipaddress
from enum import StrEnum
from typing import Self

from pydantic import ConfigDict, Field, field_validator, model_validator

from osprov.api import security_group_io as io
from osprov.api.common import CLOUD_SPEC_RULES, DNS_SUBDOMAIN_PATTERN, CamelModel, CloudSpec, CloudStatus
from osprov.api.limits import Cidr

# The API group of the Neutron kinds; defined here so this module stands alone (api/network.py has its own).
# Neutron's default quota is 100 rules per project (neutron/conf/quota.py), shared by every group there.
MAX_RULES = 64
DESCRIPTION_MAX = 255  # Neutron's description attribute (neutron_lib db_const.DESCRIPTION_FIELD_SIZE)
SELF = "self"  # remoteGroup: this group itself (e.g. "members may talk to each other")
PORT_PROTOCOLS = ("tcp", "udp")  # the protocols spec rules take ports for
# any, a name Neutron knows for the common cases, or an IP protocol number (0-255).
PROTOCOL_PATTERN = r"^(any|tcp|udp|icmp|[0-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5])$"

PORTS_NEED_PROTOCOL_MESSAGE = "portRangeMin and portRangeMax are allowed only with protocol tcp or udp"
PORTS_BOTH_MESSAGE = (
    "set both portRangeMin and portRangeMax (equal for a single port), or neither (all ports)"
)
PORT_ORDER_MESSAGE = "portRangeMin must not be greater than portRangeMax"
ONE_REMOTE_MESSAGE = "set at most one of remoteIPPrefix and remoteGroup (neither: from/to anywhere)"
FAMILY_MESSAGE = (
    "remoteIPPrefix must be of the rule's ethertype (an IPv4 CIDR with IPv4, an IPv6 CIDR with IPv6)"
)
OBSERVED_RULES_MESSAGE = (
    "an unmanaged SecurityGroup only observes its group and never writes its rules: remove spec.rules"
)
DUPLICATE_RULE_MESSAGE = "rules {0} and {1} are the same rule (Neutron keeps one of each): remove one"

_PORTS = "(has(self.portRangeMin) || has(self.portRangeMax))"
_TCP_UDP = "has(self.protocol) && (self.protocol == 'tcp' || self.protocol == 'udp')"
_ETHERTYPE = "(has(self.ethertype) ? self.ethertype : 'IPv4')"


class Direction(StrEnum):
    INGRESS = "ingress"
    EGRESS = "egress"


class Ethertype(StrEnum):
    IPV4 = "IPv4"
    IPV6 = "IPv6"


class SecurityGroupRule(CamelModel):
    """One Neutron rule. Two rules are the same rule when Neutron would call them duplicates."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {"rule": f"!{_PORTS} || ({_TCP_UDP})", "message": PORTS_NEED_PROTOCOL_MESSAGE},
                {"rule": "has(self.portRangeMin) == has(self.portRangeMax)", "message": PORTS_BOTH_MESSAGE},
                {
                    "rule": "!has(self.portRangeMin) || !has(self.portRangeMax) || "
                    "self.portRangeMin <= self.portRangeMax",
                    "message": PORT_ORDER_MESSAGE,
                },
                {
                    "rule": "!(has(self.remoteIPPrefix) && has(self.remoteGroup))",
                    "message": ONE_REMOTE_MESSAGE,
                },
                {
                    "rule": f"!has(self.remoteIPPrefix) || self.remoteIPPrefix.contains(':') == "
                    f"({_ETHERTYPE} == 'IPv6')",
                    "message": FAMILY_MESSAGE,
                },
            ]
        }
    )

    direction: Direction = Field(description="ingress (to the ports in the group) or egress (from them).")
    ethertype: Ethertype = Field(default=Ethertype.IPV4, description="IPv4 (default) or IPv6.")
    protocol: str = Field(
        default="any",
        pattern=PROTOCOL_PATTERN,
        description="any (default), tcp, udp, icmp (ICMPv6 with ethertype IPv6), or an IP protocol number "
        "0-255.",
    )
    port_range_min: int | None = Field(
        default=None, ge=1, le=65535, description="First port (tcp and udp only; with portRangeMax)."
    )
    port_range_max: int | None = Field(
        default=None, ge=1, le=65535, description="Last port (tcp and udp only; with portRangeMin)."
    )
    remote_ip_prefix: Cidr | None = Field(
        default=None,
        alias="remoteIPPrefix",
        description="Peer network as a CIDR of the rule's ethertype, e.g. 10.0.0.0/8 (host bits zero). Unset "
        "(and no remoteGroup): anywhere.",
    )
    remote_group: str | None = Field(
        default=None,
        min_length=1,
        max_length=253,
        pattern=DNS_SUBDOMAIN_PATTERN,
        description="Peers are the ports of a security group: 'self' (this group), or the metadata.name of "
        "another SecurityGroup in this namespace (it must live in the same project).",
    )

    @field_validator("remote_ip_prefix")
    @classmethod
    def _network(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            # Canonical text (Neutron stores the prefix as given, so host bits would make it another rule).
            return str(ipaddress.ip_network(value, strict=True))
        except ValueError as err:
            raise ValueError(f"remoteIPPrefix {value!r} is not a network CIDR ({err})") from None

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        ports = self.port_range_min is not None or self.port_range_max is not None
        if ports and self.protocol not in PORT_PROTOCOLS:
            raise ValueError(PORTS_NEED_PROTOCOL_MESSAGE)
        if (self.port_range_min is None) != (self.port_range_max is None):
            raise ValueError(PORTS_BOTH_MESSAGE)
        low, high = self.port_range_min, self.port_range_max
        if low is not None and high is not None and low > high:
            raise ValueError(PORT_ORDER_MESSAGE)
        if self.remote_ip_prefix is not None and self.remote_group is not None:
            raise ValueError(ONE_REMOTE_MESSAGE)
        if self.remote_ip_prefix is not None:
            version = ipaddress.ip_network(self.remote_ip_prefix).version
            if f"IPv{version}" != self.ethertype.value:
                raise ValueError(FAMILY_MESSAGE)
        return self


class SecurityGroupSpec(CloudSpec):
    """A Neutron security group named secgroup-{metadata.uid} in its Identity's project (or spec.project)."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                *CLOUD_SPEC_RULES,
                {
                    "rule": "!has(self.managementPolicy) || self.managementPolicy != 'unmanaged' || "
                    "!has(self.rules) || size(self.rules) == 0",
                    "message": OBSERVED_RULES_MESSAGE,
                },
            ]
        }
    )

    description: str = Field(
        default="",
        max_length=DESCRIPTION_MAX,
        description="Description of the Neutron group (updated in place).",
    )
    rules: list[SecurityGroupRule] = Field(
        default_factory=list,
        max_length=MAX_RULES,
        description=f"The group's whole rule set (at most {MAX_RULES}): rules Neutron holds that are not listed "
        "here are deleted, Neutron's default egress rules of a new group included; declare egress rules to keep "
        "outbound traffic. Empty: no traffic is allowed by this group.",
    )

    @model_validator(mode="after")
    def _observed_rules(self) -> Self:
        if self.unmanaged and self.rules:
            raise ValueError(OBSERVED_RULES_MESSAGE)
        return self

    @model_validator(mode="after")
    def _no_duplicates(self) -> Self:
        seen: dict[io.RuleKey, int] = {}
        for i, rule in enumerate(self.rules):
            key = spec_rule_key(rule, rule.remote_group)  # a group's name stands in for its ID here
            if key in seen:
                raise ValueError(DUPLICATE_RULE_MESSAGE.format(seen[key], i))
            seen[key] = i
        return self


def spec_rule_key(rule: SecurityGroupRule, remote_group_id: str | None) -> io.RuleKey:
    """The canonical key of a spec rule (io.rule_key) once its remoteGroup is resolved to a Neutron ID."""
    return io.rule_key(
        direction=rule.direction.value,
        ethertype=rule.ethertype.value,
        protocol=rule.protocol,
        port_range_min=rule.port_range_min,
        port_range_max=rule.port_range_max,
        remote_ip_prefix=rule.remote_ip_prefix,
        remote_group_id=remote_group_id,
    )


class SecurityGroupStatus(CloudStatus):
    security_group_id: str | None = Field(
        default=None, alias="securityGroupID", description="ID of the Neutron security group."
    )
    rule_count: int | None = Field(
        default=None, description="Rules the group holds in Neutron (the spec's, once converged)."
    )
