"""LoadBalancer (octavia.osh.openstack.org/v1alpha1): an Octavia load balancer and its whole topology.

Contract: ../shared/spec/octavia.md. Fields Octavia cannot change in place are rejected at admission (CEL),
before the provider sees them: an existing listener's protocol, port and proxyProtocolV2; and UDP listeners
take neither an idle timeout nor Proxy Protocol v2. Listener names enter Octavia object names
(lb-{uid}-{listener}-listener), so they are DNS labels.
"""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from osprov.api.common import CLOUD_SPEC_RULES, DNS_SUBDOMAIN_PATTERN, CamelModel, CloudSpec, CloudStatus
from osprov.api.limits import Cidr, IpAddress, immutable_if_set

OCTAVIA_GROUP = "octavia.osh.openstack.org"
MAX_LISTENERS = 16
MAX_MEMBERS = 256
# Octavia sets no count; each CIDR becomes one Neutron security-group rule on the VIP port per listener, and
# Neutron's default quota is 100 rules per project (neutron/conf/quota.py).
MAX_ALLOWED_CIDRS = 64
LISTENER_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
VIP_NETWORK_IMMUTABLE_MESSAGE = (
    "spec.vipNetworkID cannot change: Octavia cannot move a VIP; create a new LoadBalancer"
)
VIP_NETWORK_REF_IMMUTABLE_MESSAGE = (
    "spec.vipNetwork cannot change: Octavia cannot move a VIP; create a new LoadBalancer"
)
VIP_NETWORK_CHOICE_MESSAGE = (
    "give exactly one of vipNetworkID (a Neutron network ID) or vipNetwork (the name of a Network resource)"
)
VIP_SUBNET_IMMUTABLE_MESSAGE = (
    "spec.vipSubnetID cannot change: Octavia cannot move a VIP; create a new LoadBalancer"
)
VIP_ADDRESS_IMMUTABLE_MESSAGE = (
    "spec.vipAddress cannot change: Octavia cannot readdress a VIP; create a new LoadBalancer"
)

# `proxyProtocolV2` of a listener item, false when the field (or its pool) is absent.
_PROXY = "(has({0}.pool) && has({0}.pool.proxyProtocolV2) && {0}.pool.proxyProtocolV2)"
LISTENER_KEY_IMMUTABLE_RULE = (
    "oldSelf.all(o, self.all(n, n.name != o.name || (n.protocol == o.protocol && n.port == o.port)))"
)
LISTENER_KEY_IMMUTABLE_MESSAGE = (
    "the protocol and port of an existing listener cannot change; give the listener a new name to replace it"
)
PROXY_IMMUTABLE_RULE = (
    f"oldSelf.all(o, self.all(n, n.name != o.name || {_PROXY.format('n')} == {_PROXY.format('o')}))"
)
PROXY_IMMUTABLE_MESSAGE = (
    "pool.proxyProtocolV2 of an existing listener cannot change (Octavia cannot change a pool's protocol); "
    "give the listener a new name to replace it"
)
UNIQUE_PORT_RULE = "self.all(a, self.exists_one(b, b.protocol == a.protocol && b.port == a.port))"
UNIQUE_PORT_MESSAGE = "two listeners cannot use the same protocol and port"
UDP_IDLE_TIMEOUT_RULE = "self.protocol == 'TCP' || !has(self.idleTimeoutSeconds)"
UDP_IDLE_TIMEOUT_MESSAGE = "UDP listeners take no idleTimeoutSeconds"
UDP_PROXY_RULE = f"self.protocol == 'TCP' || !{_PROXY.format('self')}"
UDP_PROXY_MESSAGE = "UDP listeners cannot use pool.proxyProtocolV2"
HEALTH_TIMEOUT_RULE = "self.timeoutSeconds <= self.delaySeconds"
HEALTH_TIMEOUT_MESSAGE = "healthCheck.timeoutSeconds must not exceed healthCheck.delaySeconds"


def _ip(value: str) -> str:
    ipaddress.ip_address(value)  # ValueError names the bad value
    return value


class PoolMember(CamelModel):
    address: IpAddress = Field(description="IP address (IPv4 or IPv6) of the backend.")
    port: int = Field(ge=1, le=65535, description="Port of the backend.")

    @field_validator("address")
    @classmethod
    def _address(cls, value: str) -> str:
        return _ip(value)


class Pool(CamelModel):
    proxy_protocol_v2: bool = Field(
        default=False,
        description="Send the PROXY protocol v2 header to members (TCP only). Immutable per listener.",
    )
    members: list[PoolMember] = Field(
        default_factory=list,
        max_length=MAX_MEMBERS,
        description="Backends; changes are applied as one batch update.",
        json_schema_extra={
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["address", "port"],
        },
    )


class HealthCheck(CamelModel):
    """Health monitor of the listener's pool (TCP or UDP-CONNECT, after the listener's protocol)."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [{"rule": HEALTH_TIMEOUT_RULE, "message": HEALTH_TIMEOUT_MESSAGE}]
        }
    )

    delay_seconds: int = Field(ge=1, le=3600, description="Seconds between checks.")
    timeout_seconds: int = Field(ge=1, le=3600, description="Seconds a check may take; at most delaySeconds.")
    healthy_threshold: int = Field(ge=1, le=10, description="Successes before a member is healthy.")
    unhealthy_threshold: int = Field(ge=1, le=10, description="Failures before a member is unhealthy.")

    @model_validator(mode="after")
    def _timeout_within_delay(self) -> HealthCheck:
        if self.timeout_seconds > self.delay_seconds:
            raise ValueError(HEALTH_TIMEOUT_MESSAGE)
        return self


class Listener(CamelModel):
    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {"rule": UDP_IDLE_TIMEOUT_RULE, "message": UDP_IDLE_TIMEOUT_MESSAGE},
                {"rule": UDP_PROXY_RULE, "message": UDP_PROXY_MESSAGE},
            ]
        }
    )

    name: str = Field(
        min_length=1,
        max_length=63,
        pattern=LISTENER_NAME_PATTERN,
        description="Listener name (a DNS label); part of the Octavia object names. Renaming replaces it.",
    )
    protocol: Literal["TCP", "UDP"] = Field(
        description="TCP or UDP. Immutable for an existing listener name."
    )
    port: int = Field(ge=1, le=65535, description="Port on the VIP. Immutable for an existing listener name.")
    allowed_cidrs: list[Cidr] = Field(
        default_factory=list,
        alias="allowedCIDRs",
        max_length=MAX_ALLOWED_CIDRS,
        description=f"Source CIDRs (IPv4 or IPv6, at most {MAX_ALLOWED_CIDRS}) allowed to connect; empty: everyone.",
    )
    idle_timeout_seconds: int | None = Field(
        default=None,
        ge=1,
        le=86400,
        description="Client and member data idle timeout in seconds (TCP only). Unset: Octavia's default.",
    )
    pool: Pool = Field(
        default_factory=Pool, description="The listener's pool.", json_schema_extra={"default": {}}
    )
    health_check: HealthCheck | None = Field(default=None, description="Health monitor; unset: none.")

    @field_validator("allowed_cidrs")
    @classmethod
    def _cidrs(cls, value: list[str]) -> list[str]:
        for cidr in value:
            ipaddress.ip_network(cidr, strict=False)
        return value

    @model_validator(mode="after")
    def _udp_limits(self) -> Listener:
        if self.protocol == "UDP" and self.idle_timeout_seconds is not None:
            raise ValueError(UDP_IDLE_TIMEOUT_MESSAGE)
        if self.protocol == "UDP" and self.pool.proxy_protocol_v2:
            raise ValueError(UDP_PROXY_MESSAGE)
        return self


class LoadBalancerSpec(CloudSpec):
    """An Octavia load balancer named lb-{metadata.uid} in its Identity's project (or spec.project), with its listeners, pools and monitors."""

    # Spec level, so adding or removing the optional VIP fields is caught as well as changing them.
    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                *CLOUD_SPEC_RULES,
                {
                    "rule": "has(self.vipNetworkID) != has(self.vipNetwork)",
                    "message": VIP_NETWORK_CHOICE_MESSAGE,
                },
                immutable_if_set("vipNetworkID", VIP_NETWORK_IMMUTABLE_MESSAGE),
                immutable_if_set("vipNetwork", VIP_NETWORK_REF_IMMUTABLE_MESSAGE),
                immutable_if_set("vipSubnetID", VIP_SUBNET_IMMUTABLE_MESSAGE),
                immutable_if_set("vipAddress", VIP_ADDRESS_IMMUTABLE_MESSAGE),
            ]
        }
    )

    vip_network_id: str | None = Field(
        default=None,
        alias="vipNetworkID",
        min_length=1,
        max_length=255,
        description="Neutron network ID of the VIP (or vipNetwork). Immutable.",
    )
    vip_network: str | None = Field(
        default=None,
        alias="vipNetwork",
        min_length=1,
        max_length=253,
        pattern=DNS_SUBDOMAIN_PATTERN,
        description="Name of a Network resource in this namespace that lives where the load balancer does (the "
        "same identityRef, or the same spec.project), instead of vipNetworkID; the create waits until its Neutron "
        "network exists. Immutable.",
    )
    vip_subnet_id: str | None = Field(
        default=None,
        alias="vipSubnetID",
        max_length=255,
        description="Neutron subnet ID of the VIP. Immutable.",
    )
    vip_address: IpAddress | None = Field(
        default=None,
        description="Requested VIP address (IPv4 or IPv6); a different actual VIP is reported as an error. "
        "Immutable.",
    )
    public_ip: bool = Field(
        default=False, alias="publicIP", description="Attach a floating IP to the VIP port."
    )
    listeners: list[Listener] = Field(
        default_factory=list,
        max_length=MAX_LISTENERS,
        description="Listeners by name. A listener removed from the list is deleted with its pool and monitor.",
        json_schema_extra={
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "x-kubernetes-validations": [
                {"rule": UNIQUE_PORT_RULE, "message": UNIQUE_PORT_MESSAGE},
                {"rule": LISTENER_KEY_IMMUTABLE_RULE, "message": LISTENER_KEY_IMMUTABLE_MESSAGE},
                {"rule": PROXY_IMMUTABLE_RULE, "message": PROXY_IMMUTABLE_MESSAGE},
            ],
        },
    )

    @field_validator("vip_address")
    @classmethod
    def _vip(cls, value: str | None) -> str | None:
        return None if value is None else _ip(value)

    @model_validator(mode="after")
    def _one_vip_network(self) -> LoadBalancerSpec:
        if (self.vip_network_id is None) == (self.vip_network is None):
            raise ValueError(VIP_NETWORK_CHOICE_MESSAGE)
        return self

    @model_validator(mode="after")
    def _unique_listeners(self) -> LoadBalancerSpec:
        names = [listener.name for listener in self.listeners]
        if len(names) != len(set(names)):
            raise ValueError("listener names must be unique")
        keys = [(listener.protocol, listener.port) for listener in self.listeners]
        if len(keys) != len(set(keys)):
            raise ValueError(UNIQUE_PORT_MESSAGE)
        return self


class LoadBalancerStatus(CloudStatus):
    load_balancer_id: str | None = Field(
        default=None, alias="loadBalancerID", description="ID of the Octavia load balancer."
    )
    vip_address: str | None = Field(default=None, description="Address of the VIP.")
    public_ip: str | None = Field(default=None, alias="publicIP", description="Floating IP on the VIP port.")
