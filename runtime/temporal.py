"""The Temporal client every process uses: pydantic JSON payloads, encrypted when keys are configured,
over TLS/mTLS and with an API key when configured (OSPROV_TEMPORAL_TLS*, OSPROV_TEMPORAL_API_KEY*).
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

from temporalio.client import Client
from temporalio.contrib.pydantic import PydanticPayloadConverter, pydantic_data_converter
from temporalio.converter import (
    CompositePayloadConverter,
    DataConverter,
    DefaultFailureConverterWithEncodedAttributes,
    EncodingPayloadConverter,
)
from temporalio.service import TLSConfig

from osprov.runtime import logs, metrics
from osprov.runtime.codec import AesGcmCodec, codec_from_env
from osprov.runtime.settings import Settings


class TransportConfigError(ValueError):
    """The connection settings contradict each other or name unreadable files (never echoes secrets)."""


@functools.cache
def _pydantic_converters() -> tuple[EncodingPayloadConverter, ...]:
    return tuple(PydanticPayloadConverter().converters.values())


class SharedPydanticPayloadConverter(CompositePayloadConverter):
    """temporalio's pydantic payload converter, its parts built once per process. The worker makes a
    payload converter for every workflow run and every activation (the SDK's per-command data converter),
    each with its own cache of pydantic TypeAdapters: shared, a run no longer rebuilds the adapters of
    its types. The parts keep no state but that cache (a thread-safe functools.lru_cache); the payloads
    are byte for byte those of `pydantic_data_converter` (tests/test_converter.py)."""

    def __init__(self) -> None:
        super().__init__(*_pydantic_converters())


PYDANTIC = dataclasses.replace(
    pydantic_data_converter, payload_converter_class=SharedPydanticPayloadConverter
)


def data_converter(codec: AesGcmCodec | None = None) -> DataConverter:
    """pydantic JSON; with a codec, every payload and the failure messages/stack traces are encrypted."""
    codec = codec if codec is not None else codec_from_env()
    if codec is None:
        return PYDANTIC
    return dataclasses.replace(
        PYDANTIC,
        payload_codec=codec,
        failure_converter_class=DefaultFailureConverterWithEncodedAttributes,
    )


@dataclasses.dataclass(frozen=True)
class Transport:
    """How to reach the frontend: TLS (with optional CA, client certificate, server name) and API key."""

    tls: TLSConfig | None  # holds the client's private key: never in a repr or a log line
    api_key: str | None = None

    def __repr__(self) -> str:
        return f"Transport({self.describe()})"

    def describe(self) -> dict[str, str]:
        """Safe to log: which options are on, never their values."""
        if self.tls is None:
            return {"tls": "off", "api_key": "set" if self.api_key else "none"}
        return {
            "tls": "on",
            "tls_ca": "file" if self.tls.server_root_ca_cert else "system",
            "mtls": "on" if self.tls.client_cert else "off",
            "api_key": "set" if self.api_key else "none",
        }


def _read(variable: str, path: str, marker: bytes) -> bytes:
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise TransportConfigError(f"{variable}: cannot read {path} ({err.strerror})") from None
    if marker not in data:
        raise TransportConfigError(f"{variable}: {path} holds no PEM {marker.decode().strip('- ')}")
    return data


def transport(settings: Settings) -> Transport:
    """The transport the settings ask for; contradictions are errors (nothing is silently dropped)."""
    flag = settings.temporal_tls.lower()
    if flag not in ("", "true", "false"):
        raise TransportConfigError(f"OSPROV_TEMPORAL_TLS must be true or false, not {flag[:20]!r}")
    options = {
        "OSPROV_TEMPORAL_TLS_CA": settings.temporal_tls_ca,
        "OSPROV_TEMPORAL_TLS_CERT": settings.temporal_tls_cert,
        "OSPROV_TEMPORAL_TLS_KEY": settings.temporal_tls_key,
        "OSPROV_TEMPORAL_TLS_SERVER_NAME": settings.temporal_tls_server_name,
        "OSPROV_TEMPORAL_API_KEY": settings.temporal_api_key,
        "OSPROV_TEMPORAL_API_KEY_FILE": settings.temporal_api_key_file,
    }
    given = [name for name, value in options.items() if value]
    if flag == "false" and given:
        raise TransportConfigError(
            f"OSPROV_TEMPORAL_TLS=false contradicts {', '.join(given)}: a certificate or API key over "
            "plaintext; remove them or enable TLS"
        )
    if bool(settings.temporal_tls_cert) != bool(settings.temporal_tls_key):
        raise TransportConfigError("OSPROV_TEMPORAL_TLS_CERT and OSPROV_TEMPORAL_TLS_KEY go together (mTLS)")
    if settings.temporal_api_key and settings.temporal_api_key_file:
        raise TransportConfigError("set OSPROV_TEMPORAL_API_KEY or OSPROV_TEMPORAL_API_KEY_FILE, not both")
    if flag != "true" and not given:
        return Transport(tls=None)
    api_key = settings.temporal_api_key or None
    if settings.temporal_api_key_file:
        api_key = _read_api_key(settings.temporal_api_key_file)
    ca, cert, key = settings.temporal_tls_ca, settings.temporal_tls_cert, settings.temporal_tls_key
    tls = TLSConfig(
        server_root_ca_cert=_read("OSPROV_TEMPORAL_TLS_CA", ca, b"-----BEGIN CERTIFICATE") if ca else None,
        domain=settings.temporal_tls_server_name or None,
        client_cert=_read("OSPROV_TEMPORAL_TLS_CERT", cert, b"-----BEGIN CERTIFICATE") if cert else None,
        client_private_key=_read("OSPROV_TEMPORAL_TLS_KEY", key, b"PRIVATE KEY-----") if key else None,
    )
    return Transport(tls=tls, api_key=api_key)


def _read_api_key(path: str) -> str:
    try:
        key = Path(path).read_text().strip()
    except (OSError, UnicodeDecodeError):
        raise TransportConfigError(f"OSPROV_TEMPORAL_API_KEY_FILE: cannot read {path}") from None
    if not key:
        raise TransportConfigError(f"OSPROV_TEMPORAL_API_KEY_FILE: {path} is empty")
    return key


def encryption(settings: Settings) -> AesGcmCodec | None:
    """The payload codec from the environment; refuses a keyless start when encryption is required."""
    codec = codec_from_env()
    if codec is None and settings.require_encryption:
        raise TransportConfigError(
            "OSPROV_REQUIRE_ENCRYPTION is true but OSPROV_CODEC_KEYS is not set: refusing to write "
            "plaintext histories (provide the osprov-codec Secret, or set OSPROV_REQUIRE_ENCRYPTION=false "
            "for a development setup)"
        )
    return codec


async def connect(settings: Settings) -> Client:
    """Client with the data converter, the transport security and, when OSPROV_METRICS_PORT is set, the
    Prometheus runtime. Logs once what protects the connection and the payloads (IDs and on/off only)."""
    codec = encryption(settings)
    link = transport(settings)
    logs.log("osprov.temporal").info(
        "temporal connection",
        address=settings.temporal_address,
        namespace=settings.temporal_namespace,
        **link.describe(),
        encryption="on" if codec else "off",
        **({"encryption_key_id": codec.key_id, "decryption_key_ids": codec.key_ids} if codec else {}),
    )
    return await Client.connect(
        settings.temporal_address,
        namespace=settings.temporal_namespace,
        data_converter=data_converter(codec),
        tls=link.tls or False,
        api_key=link.api_key,
        runtime=metrics.runtime(settings.metrics_port, heartbeat_seconds=settings.worker_heartbeat_seconds),
    )
