"""`osprov codec-server`: decodes payloads for the Temporal Web UI and CLI (encodes only when enabled).

Whoever reaches it can read every history, so every call must carry the access token
(OSPROV_CODEC_TOKEN or OSPROV_CODEC_TOKEN_FILE), compared in constant time:
- `Authorization: Bearer <token>`: the CLI (`temporal … --codec-auth "Bearer <token>"`) and scripts;
- with --token-in-path, as the endpoint's first path segment (`http://host:8081/<token>`): for a Web UI
  without OIDC login, which sends no Authorization header of its own (its passAccessToken forwards the
  user's OIDC token, and only to https endpoints). The token is then visible to whoever can open the
  UI's settings; access logs are off, so it is never logged here.
`/encode` (only needed for UI write actions and CLI inputs) is off unless --enable-encode. CORS answers
only the configured UI origins. Bodies up to 8 MiB: Temporal payloads reach 2 MiB each, several per call.
"""

from __future__ import annotations

import argparse
import hmac
import os
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from aiohttp import hdrs, web
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads

from osprov.runtime import logs
from osprov.runtime.codec import AesGcmCodec, CodecConfigError, PayloadRejected, codec_from_env

MAX_BODY_BYTES = 8 * 1024 * 1024
TOKEN_PATTERN = re.compile(r"[A-Za-z0-9._~-]{32,}")  # URL-safe: it may travel as a path segment

Convert = Callable[[list[Payload]], Awaitable[list[Payload]]]


@dataclass(frozen=True)
class Access:
    """Who may call: the token (compared in constant time), where it may travel, which UI origins."""

    token: bytes
    token_in_path: bool
    cors_origins: list[str]

    def authorized(self, req: web.Request) -> bool:
        scheme, _, value = req.headers.get(hdrs.AUTHORIZATION, "").partition(" ")
        presented = value.strip() if scheme.lower() == "bearer" else ""
        if not presented and self.token_in_path:
            presented = req.match_info.get("token", "")
        return hmac.compare_digest(presented.encode(), self.token)

    def cors(self, resp: web.StreamResponse, req: web.Request) -> web.StreamResponse:
        resp.headers[hdrs.VARY] = "Origin"
        origin = req.headers.get(hdrs.ORIGIN)
        if origin and origin in self.cors_origins:
            resp.headers["Access-Control-Allow-Origin"] = origin
            resp.headers["Access-Control-Allow-Methods"] = "POST"
            resp.headers["Access-Control-Allow-Headers"] = "authorization,content-type,x-namespace"
        return resp

    def error(self, req: web.Request, status: int, message: str) -> web.StreamResponse:
        headers = {hdrs.WWW_AUTHENTICATE: 'Bearer realm="osprov-codec"'} if status == 401 else None
        return self.cors(web.json_response({"error": message}, status=status, headers=headers), req)

    def handler(self, convert: Convert) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def handle(req: web.Request) -> web.StreamResponse:
            if not self.authorized(req):
                return self.error(req, 401, "missing or wrong codec server token")
            try:
                payloads = json_format.Parse(await req.read(), Payloads())
                result = Payloads(payloads=await convert(list(payloads.payloads)))
            except json_format.ParseError:
                return self.error(req, 400, 'body must be {"payloads": [...]}')
            except PayloadRejected as err:  # its message names key IDs and formats, never data
                return self.error(req, 400, str(err))
            resp = web.Response(text=json_format.MessageToJson(result), content_type="application/json")
            return self.cors(resp, req)

        return handle

    async def preflight(self, req: web.Request) -> web.StreamResponse:
        return self.cors(web.Response(), req)  # browsers send no credentials on a preflight


async def _health(_: web.Request) -> web.StreamResponse:
    return web.Response(text="ok")


def build_app(
    codec: AesGcmCodec,
    cors_origins: list[str],
    token: str,
    *,
    enable_encode: bool = False,
    token_in_path: bool = False,
) -> web.Application:
    if not TOKEN_PATTERN.fullmatch(token):
        raise ValueError("the codec server token must be at least 32 URL-safe characters")
    access = Access(token.encode(), token_in_path, cors_origins)
    operations: dict[str, Convert] = {"decode": codec.decode}
    if enable_encode:
        operations["encode"] = codec.encode
    app = web.Application(client_max_size=MAX_BODY_BYTES)
    for prefix in ["", "/{token}"] if token_in_path else [""]:
        for name, convert in operations.items():
            app.router.add_post(f"{prefix}/{name}", access.handler(convert))
            app.router.add_route("OPTIONS", f"{prefix}/{name}", access.preflight)
    app.router.add_get("/healthz", _health)
    return app


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() == "true"


def read_token() -> str:
    """OSPROV_CODEC_TOKEN, or the file OSPROV_CODEC_TOKEN_FILE names (a mounted Secret)."""
    inline = os.environ.get("OSPROV_CODEC_TOKEN", "").strip()
    path = os.environ.get("OSPROV_CODEC_TOKEN_FILE", "").strip()
    if inline and path:
        raise ValueError("set OSPROV_CODEC_TOKEN or OSPROV_CODEC_TOKEN_FILE, not both")
    if path:
        try:
            return Path(path).read_text().strip()
        except OSError as err:
            raise ValueError(f"OSPROV_CODEC_TOKEN_FILE: cannot read {path} ({err.strerror})") from None
    if not inline:
        raise ValueError(
            "the codec server needs an access token: set OSPROV_CODEC_TOKEN or OSPROV_CODEC_TOKEN_FILE "
            '(python -c "import secrets; print(secrets.token_urlsafe(32))")'
        )
    return inline


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="osprov codec-server")
    parser.add_argument("--host", default=os.environ.get("OSPROV_CODEC_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("OSPROV_CODEC_PORT", "8081")))
    parser.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        help="Web UI origin allowed to call it, e.g. http://localhost:8233 (repeatable)",
    )
    parser.add_argument(
        "--enable-encode",
        action="store_true",
        default=_flag("OSPROV_CODEC_ENABLE_ENCODE"),
        help="serve /encode too (UI write actions, CLI inputs); off by default",
    )
    parser.add_argument(
        "--token-in-path",
        action="store_true",
        default=_flag("OSPROV_CODEC_TOKEN_IN_PATH"),
        help="also accept the token as the first path segment (a Web UI without OIDC sends no header)",
    )
    args = parser.parse_args(argv)
    try:
        codec = codec_from_env(accept_plaintext=True)  # it only shows histories: plaintext passes through
        token = read_token()
    except (CodecConfigError, ValueError) as err:
        parser.error(str(err))
    if codec is None:
        parser.error("OSPROV_CODEC_KEYS is not set: nothing to decode")
    origins = args.cors_origin or [o for o in os.environ.get("OSPROV_CODEC_CORS_ORIGINS", "").split(",") if o]
    try:
        app = build_app(
            codec, origins, token, enable_encode=args.enable_encode, token_in_path=args.token_in_path
        )
    except ValueError as err:
        parser.error(str(err))
    logs.configure(os.environ.get("OSPROV_LOG_LEVEL", "INFO"), component="codec-server")
    logs.log("osprov.codec_server").info(
        "codec server listening",
        address=f"{args.host}:{args.port}",
        encode="on" if args.enable_encode else "off",
        token_in_path=args.token_in_path,
        cors_origins=origins,
        decryption_key_ids=codec.key_ids,
    )
    # No access log: with --token-in-path the request line carries the token.
    web.run_app(app, host=args.host, port=args.port, print=None, access_log=None)
    return 0
