"""What `docker compose config` would say about a compose file, for a machine without Docker.

Two rules of the Compose specification: variable interpolation (`${VAR:-default}` and friends) and how
a `ports` entry publishes (short syntax `[[IP:]HOST:]CONTAINER[/PROTO]`, long syntax with `host_ip`).
A port without an IP is published on every interface (0.0.0.0 and ::), like `docker run -p`.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Any

_VAR = re.compile(r"\$(?:\$|\{(?P<braced>[^}]*)\}|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))")


class MissingVariable(KeyError):
    """A `${VAR:?message}` whose variable is unset (compose refuses the file)."""


def interpolate(text: str, env: dict[str, str]) -> str:
    def one(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        if m.group("bare"):
            return env.get(m.group("bare"), "")
        expr = m.group("braced")
        name, op, arg = re.match(r"([A-Za-z_][A-Za-z0-9_]*)(:?[-?+]|)(.*)", expr, re.S).groups()  # type: ignore[union-attr]
        value = env.get(name)
        empty_counts = op.startswith(":")
        unset = value is None or (empty_counts and value == "")
        if op.endswith("-"):
            return arg if unset else str(value)
        if op.endswith("?"):
            if unset:
                raise MissingVariable(f"{name}: {arg}")
            return str(value)
        if op.endswith("+"):
            return "" if unset else arg
        return value or ""

    return _VAR.sub(one, text)


def interpolated(node: Any, env: dict[str, str]) -> Any:
    """The whole parsed compose document with every string interpolated."""
    if isinstance(node, str):
        return interpolate(node, env)
    if isinstance(node, dict):
        return {k: interpolated(v, env) for k, v in node.items()}
    if isinstance(node, list):
        return [interpolated(v, env) for v in node]
    return node


@dataclass(frozen=True)
class Published:
    host_ip: str  # "" = every interface
    host_port: str  # "" = an ephemeral port Docker picks
    container_port: str

    @property
    def loopback_only(self) -> bool:
        if not self.host_ip:
            return False
        return ipaddress.ip_address(self.host_ip.strip("[]")).is_loopback


def published(entry: str | int | dict[str, Any]) -> Published:
    if isinstance(entry, dict):  # long syntax
        return Published(str(entry.get("host_ip", "")), str(entry.get("published", "")), str(entry["target"]))
    spec = str(entry).split("/", 1)[0]
    host_ip = ""
    if spec.startswith("["):  # [IPv6]:host:container
        host_ip, _, spec = spec[1:].partition("]:")
    parts = spec.split(":")
    if len(parts) > 2:  # IP:HOST:CONTAINER (an unbracketed IPv6 address holds colons itself)
        host_ip, parts = ":".join(parts[:-2]), parts[-2:]
    host_port = parts[0] if len(parts) == 2 else ""
    return Published(host_ip, host_port, parts[-1])
