"""The local stack's Web UI decodes encrypted histories through osprov's codec server."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import pytest
from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads
from temporalio.contrib.pydantic import pydantic_data_converter

from devenv import stack
from devenv.testing import StackEnv
from osprov.runtime.codec import codec_from_env

pytestmark = pytest.mark.stack


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read())


def test_ui_is_configured_with_the_codec_server(identity_stack: StackEnv) -> None:
    settings = get_json(f"{identity_stack.temporal_ui_url}/api/v1/settings")
    assert settings["Codec"]["Endpoint"] == identity_stack.env["OSPROV_CODEC_URL"]


def test_codec_server_answers_only_with_its_token(identity_stack: StackEnv) -> None:
    """The UI's endpoint carries the token as its first path segment; the bare server refuses."""
    endpoint = urllib.parse.urlsplit(identity_stack.env["OSPROV_CODEC_URL"])
    assert endpoint.path.strip("/") == stack.codec_token()
    for path in ("/decode", "/not-the-token-but-long-enough-to-look-like-one/decode"):
        request = urllib.request.Request(
            f"{endpoint.scheme}://{endpoint.netloc}{path}",
            data=b'{"payloads": []}',
            headers={"Content-Type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(request, timeout=10)
        assert err.value.code == 401


def test_codec_server_decodes_what_the_demo_encrypts(
    identity_stack: StackEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in stack.codec_env().items():
        monkeypatch.setenv(key, value)
    codec = codec_from_env()
    assert codec is not None
    plain = pydantic_data_converter.payload_converter.to_payloads(
        [{"spec": "visible only through the codec"}]
    )
    sealed = asyncio.run(codec.encode(plain))
    body = json_format.MessageToJson(Payloads(payloads=sealed)).encode()
    request = urllib.request.Request(
        f"{identity_stack.env['OSPROV_CODEC_URL']}/decode",
        data=body,
        headers={"Content-Type": "application/json", "Origin": identity_stack.temporal_ui_url},
    )
    with urllib.request.urlopen(request, timeout=10) as resp:
        assert resp.headers["Access-Control-Allow-Origin"] == identity_stack.temporal_ui_url
        decoded = json_format.Parse(resp.read(), Payloads())
    assert list(decoded.payloads) == plain
