"""The Temporal client every process uses: one data converter (pydantic JSON) for all payloads."""

from __future__ import annotations

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter

from osprov.settings import Settings


def data_converter() -> DataConverter:
    return pydantic_data_converter


async def connect(settings: Settings) -> Client:
    return await Client.connect(
        settings.temporal_address, namespace=settings.temporal_namespace, data_converter=data_converter()
    )
