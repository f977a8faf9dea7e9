"""`osprov codec-server`: decodes (and encodes) payloads for the Temporal Web UI and CLI.

The UI sends {"payloads": [...]} to /decode with the codec endpoint configured; the keys stay in this
process. Bind it to localhost or put it behind the same auth as the UI: whoever reaches it can read
histories.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Awaitable, Callable

from aiohttp import hdrs, web
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads

from osprov.runtime.codec import AesGcmCodec, codec_from_env


def build_app(codec: AesGcmCodec, cors_origins: list[str]) -> web.Application:
    def cors(resp: web.StreamResponse, req: web.Request) -> web.StreamResponse:
        origin = req.headers.get(hdrs.ORIGIN)
        if origin and origin in cors_origins:
            resp.headers["Access-Control-Allow-Origin"] = origin
            resp.headers["Access-Control-Allow-Methods"] = "POST"
            resp.headers["Access-Control-Allow-Headers"] = "content-type,x-namespace"
        return resp

    def handler(
        fn: Callable[[list[Payload]], Awaitable[list[Payload]]],
    ) -> Callable[..., Awaitable[web.StreamResponse]]:
        async def handle(req: web.Request) -> web.StreamResponse:
            payloads = json_format.Parse(await req.read(), Payloads())
            result = Payloads(payloads=await fn(list(payloads.payloads)))
            resp = web.Response(text=json_format.MessageToJson(result), content_type="application/json")
            return cors(resp, req)

        return handle

    async def options(req: web.Request) -> web.StreamResponse:
        return cors(web.Response(), req)

    async def health(_: web.Request) -> web.StreamResponse:
        return web.Response(text="ok")

    app = web.Application()
    app.add_routes(
        [
            web.post("/encode", handler(codec.encode)),
            web.post("/decode", handler(codec.decode)),
            web.options("/decode", options),
            web.options("/encode", options),
            web.get("/healthz", health),
        ]
    )
    return app


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
    args = parser.parse_args(argv)
    codec = codec_from_env()
    if codec is None:
        parser.error("OSPROV_CODEC_KEYS is not set: nothing to decode")
    origins = args.cors_origin or [o for o in os.environ.get("OSPROV_CODEC_CORS_ORIGINS", "").split(",") if o]
    web.run_app(build_app(codec, origins), host=args.host, port=args.port, print=None)
    return 0
