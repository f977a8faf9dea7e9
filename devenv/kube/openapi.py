"""OpenAPI documents for kubectl (placeholder until behaviour against kubectl is settled)."""

from __future__ import annotations

from aiohttp import web

from .errors import ApiError
from .handlers import error_response
from .store import Store


class OpenAPI:
    def __init__(self, store: Store) -> None:
        self.store = store

    def handle(self, request: web.Request) -> web.Response:
        return error_response(ApiError(404, "NotFound", "the server could not find the requested resource"))
