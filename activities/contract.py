"""Registering the implementation of an api Activity contract (see osprov.api.activity)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from temporalio import activity

from osprov.api.activity import Activity

In = TypeVar("In")
Out = TypeVar("Out")


def implements(contract: Activity[In, Out]) -> Callable[[Callable[[In], Out]], Callable[[In], Out]]:
    """`@implements(io.FIND)`: a (thread-pool) activity of that name whose signature mypy checks against
    the contract."""

    def register(fn: Callable[[In], Out]) -> Callable[[In], Out]:
        return activity.defn(name=contract.name)(fn)

    return register


def implements_async(
    contract: Activity[In, Out],
) -> Callable[[Callable[[In], Awaitable[Out]]], Callable[[In], Awaitable[Out]]]:
    """The same for an `async def` activity (one that awaits, e.g. the worker's Temporal client)."""

    def register(fn: Callable[[In], Awaitable[Out]]) -> Callable[[In], Awaitable[Out]]:
        return activity.defn(name=contract.name)(fn)

    return register
