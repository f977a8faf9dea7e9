"""The Temporal client every process uses: pydantic JSON payloads, encrypted when keys are configured."""

from __future__ import annotations

import dataclasses

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter, DefaultFailureConverterWithEncodedAttributes

from osprov.runtime import metrics
from osprov.runtime.codec import AesGcmCodec, codec_from_env
from osprov.runtime.settings import Settings


def data_converter(codec: AesGcmCodec | None = None) -> DataConverter:
    """pydantic JSON; with a codec, every payload and the failure messages/stack traces are encrypted."""
    codec = codec if codec is not None else codec_from_env()
    if codec is None:
        return pydantic_data_converter
    return dataclasses.replace(
        pydantic_data_converter,
        payload_codec=codec,
        failure_converter_class=DefaultFailureConverterWithEncodedAttributes,
    )


async def connect(settings: Settings) -> Client:
    """Client with the data converter and, when OSPROV_METRICS_PORT is set, the Prometheus runtime."""
    return await Client.connect(
        settings.temporal_address,
        namespace=settings.temporal_namespace,
        data_converter=data_converter(),
        runtime=metrics.runtime(settings.metrics_port, heartbeat_seconds=settings.worker_heartbeat_seconds),
    )
