"""runtime/temporal.py: the payload converter shares its pydantic parts across the converters the
worker makes (one per workflow run and per activation), and writes exactly what temporalio's does."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.contrib.pydantic import PydanticJSONPlainPayloadConverter, pydantic_data_converter

from osprov.api.messages import ConditionState
from osprov.api.ownership import ObjectKey
from osprov.runtime.temporal import PYDANTIC, SharedPydanticPayloadConverter, data_converter

VALUES: list[tuple[Any, Any]] = [
    (None, type(None)),
    (b"raw", bytes),
    ({"a": [1, 2.5, "x"]}, dict[str, list[Any]]),
    (ObjectKey(kind="project", name="p", domain="d"), ObjectKey),
    ([ConditionState(type="Ready", status="True", reason="Provisioned", message="ok")], list[ConditionState]),
]


@pytest.mark.parametrize(("value", "hint"), VALUES, ids=lambda v: type(v).__name__)
def test_payloads_are_those_of_temporalios_pydantic_converter(
    value: Any, hint: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OSPROV_CODEC_KEYS", raising=False)  # no codec from a developer's stack env
    ours, theirs = PYDANTIC.payload_converter, pydantic_data_converter.payload_converter
    written = ours.to_payloads([value])
    assert written == theirs.to_payloads([value])
    assert ours.from_payloads(written, [hint]) == [value]
    assert data_converter(None) is PYDANTIC


def _json(converter: SharedPydanticPayloadConverter) -> PydanticJSONPlainPayloadConverter:
    found = converter.converters[b"json/plain"]
    assert isinstance(found, PydanticJSONPlainPayloadConverter)
    return found


def test_every_converter_shares_one_cache_of_type_adapters() -> None:
    """What a workflow run's converter and each activation's converter used to build for themselves."""
    first, second = SharedPydanticPayloadConverter(), SharedPydanticPayloadConverter()
    assert _json(first) is _json(second)
    payloads = first.to_payloads([[ObjectKey(kind="role", name="r")]])
    first.from_payloads(payloads, [list[ObjectKey]])
    hits = _json(second)._type_adapter.cache_info().hits
    second.from_payloads(payloads, [list[ObjectKey]])
    assert _json(second)._type_adapter.cache_info().hits == hits + 1
