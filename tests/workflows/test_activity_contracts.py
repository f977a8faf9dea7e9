"""Every typed activity contract (osprov.api.activity.Activity) is implemented exactly once by a registered
activity whose signature is the contract's, and every registered activity has a contract."""

from __future__ import annotations

import importlib
import pkgutil
import typing

import osprov.api
from osprov.activities.all import ACTIVITIES
from osprov.api.activity import Activity


def contracts() -> dict[str, Activity[typing.Any, typing.Any]]:
    found: dict[str, Activity[typing.Any, typing.Any]] = {}
    for info in pkgutil.iter_modules(osprov.api.__path__):
        module = importlib.import_module(f"osprov.api.{info.name}")
        for value in vars(module).values():
            if isinstance(value, Activity):
                assert found.setdefault(value.name, value) is value, f"two contracts named {value.name}"
    return found


def test_every_contract_has_one_implementation_with_its_signature() -> None:
    registered: dict[str, typing.Any] = {}
    for fn in ACTIVITIES:
        name = fn.__temporal_activity_definition.name
        assert name not in registered, f"{name} registered twice"
        registered[name] = fn
    declared = contracts()
    assert set(registered) == set(declared)
    for name, contract in declared.items():
        hints = typing.get_type_hints(registered[name])
        (param,) = [k for k in hints if k != "return"]
        assert hints[param] == contract.input, name
        assert hints["return"] == contract.output, name  # get_type_hints gives NoneType for "-> None"
