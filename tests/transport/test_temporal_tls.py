"""TLS, mTLS and API keys towards Temporal, through osprov's own `connect`, against a real frontend.

The dev server speaks plaintext gRPC only, so a TLS-terminating gateway (tests/support/tls_gateway.py:
OpenSSL handshake, ALPN h2, client-certificate verification, API-key check on every request) stands
in front of it, as an ingress does in production. Each test shows the refusal next to the success.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.api.workflowservice.v1 import GetSystemInfoRequest

from osprov.runtime.settings import Settings
from osprov.runtime.temporal import TransportConfigError, connect, transport
from tests.support.tls_gateway import TlsGateway
from tests.transport.conftest import Pki

API_KEY = "tmprl-test-" + "k" * 40


def settings(address: str, **transport_options: str) -> Settings:
    return Settings(temporal_address=address, require_encryption=False, **transport_options)  # type: ignore[arg-type]


async def reaches_temporal(s: Settings) -> bool:
    """True when osprov's client connects and the frontend answers; False when the connection is refused."""
    try:
        client = await asyncio.wait_for(connect(s), 30)
        await client.workflow_service.get_system_info(GetSystemInfoRequest())
    except RuntimeError as err:  # temporalio's "Failed client connect: …"
        assert "connect" in str(err)
        return False
    return True


async def test_tls_frontend_refuses_plaintext_and_unverified_clients(frontend: str, pki: Pki) -> None:
    with TlsGateway(frontend, pki.server_cert, pki.server_key) as gw:
        assert not await reaches_temporal(settings(gw.address))  # plaintext gRPC into a TLS port
        # TLS with the system roots: the frontend's certificate is from our CA, so the client refuses it.
        assert not await reaches_temporal(settings(gw.address, temporal_tls="true"))
        assert await reaches_temporal(settings(gw.address, temporal_tls_ca=str(pki.ca)))
        # The name checked is OSPROV_TEMPORAL_TLS_SERVER_NAME when set (here: a SAN of the certificate).
        named = settings(
            gw.address, temporal_tls_ca=str(pki.ca), temporal_tls_server_name="temporal-frontend"
        )
        assert await reaches_temporal(named)
        wrong = settings(
            gw.address, temporal_tls_ca=str(pki.ca), temporal_tls_server_name="elsewhere.example"
        )
        assert not await reaches_temporal(wrong)
        assert gw.seen.requests, "nothing reached the frontend through the gateway"


async def test_mtls_frontend_admits_only_our_client_certificate(frontend: str, pki: Pki) -> None:
    with TlsGateway(frontend, pki.server_cert, pki.server_key, client_ca=pki.ca) as gw:
        assert not await reaches_temporal(settings(gw.address, temporal_tls_ca=str(pki.ca)))  # no certificate
        rogue = {"temporal_tls_cert": str(pki.rogue_cert), "temporal_tls_key": str(pki.rogue_key)}
        assert not await reaches_temporal(settings(gw.address, temporal_tls_ca=str(pki.ca), **rogue))
        ours = {"temporal_tls_cert": str(pki.client_cert), "temporal_tls_key": str(pki.client_key)}
        assert await reaches_temporal(settings(gw.address, temporal_tls_ca=str(pki.ca), **ours))


async def test_api_key_is_sent_on_every_request_over_tls(frontend: str, pki: Pki, tmp_path: Path) -> None:
    key_file = tmp_path / "api-key"
    key_file.write_text(API_KEY + "\n")  # a mounted Secret often ends with a newline
    with TlsGateway(frontend, pki.server_cert, pki.server_key, api_key=API_KEY) as gw:
        ca = str(pki.ca)
        assert not await reaches_temporal(settings(gw.address, temporal_tls_ca=ca))
        assert not await reaches_temporal(
            settings(gw.address, temporal_tls_ca=ca, temporal_api_key="tmprl-wrong")
        )
        assert gw.seen.refused
        before = len(gw.seen.authorizations)
        assert await reaches_temporal(
            settings(gw.address, temporal_tls_ca=ca, temporal_api_key_file=str(key_file))
        )
        sent = gw.seen.authorizations[before:]
        assert sent and set(sent) == {f"Bearer {API_KEY}"}


def test_an_api_key_alone_turns_tls_on() -> None:
    """As the temporal CLI does: an API key is never sent over plaintext by omission."""
    link = transport(settings("x:1", temporal_api_key=API_KEY))
    assert link.tls is not None and link.api_key == API_KEY
    assert transport(settings("x:1")).tls is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"temporal_tls": "false", "temporal_api_key": API_KEY}, "contradicts OSPROV_TEMPORAL_API_KEY"),
        ({"temporal_tls": "yes"}, "must be true or false"),
        ({"temporal_tls_cert": "/c.crt"}, "go together"),
        ({"temporal_api_key": API_KEY, "temporal_api_key_file": "/k"}, "not both"),
        (
            {"temporal_tls_ca": "/nonexistent/ca.crt"},
            "OSPROV_TEMPORAL_TLS_CA: cannot read /nonexistent/ca.crt",
        ),
        ({"temporal_api_key_file": "/nonexistent/key"}, "OSPROV_TEMPORAL_API_KEY_FILE: cannot read"),
    ],
)
def test_contradictory_or_unreadable_settings_stop_the_process(options: dict[str, str], message: str) -> None:
    with pytest.raises(TransportConfigError, match=message) as err:
        transport(settings("x:1", **options))
    assert API_KEY not in str(err.value)


def test_a_file_that_is_not_pem_is_named_but_not_echoed(tmp_path: Path, pki: Pki) -> None:
    wrong = tmp_path / "tls.key"
    wrong.write_text("secret-material-that-is-no-pem")
    with pytest.raises(TransportConfigError, match=r"OSPROV_TEMPORAL_TLS_KEY: .* holds no PEM") as err:
        transport(settings("x:1", temporal_tls_cert=str(pki.client_cert), temporal_tls_key=str(wrong)))
    assert "secret-material" not in str(err.value)
    empty = tmp_path / "api-key"
    empty.write_text("\n")
    with pytest.raises(TransportConfigError, match="is empty"):
        transport(settings("x:1", temporal_api_key_file=str(empty)))


def test_reprs_hide_the_api_key_and_the_private_key(pki: Pki) -> None:
    s = settings(
        "x:1",
        temporal_api_key=API_KEY,
        temporal_tls_cert=str(pki.client_cert),
        temporal_tls_key=str(pki.client_key),
    )
    link = transport(s)
    assert link.tls is not None and link.tls.client_private_key
    for text in (repr(s), repr(link), str(link)):
        assert API_KEY not in text and "PRIVATE KEY" not in text
