"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics.

- A candidate reads the Lease. It may take it when nobody holds it, or when the record it observed
  has not changed for the record's leaseDurationSeconds *on the candidate's own clock* (clocks of
  different machines are never compared). Taking it from another holder increments leaseTransitions;
  a renewal keeps acquireTime and leaseTransitions.
- Every write replaces the Lease with the resourceVersion that was read (optimistic concurrency): of two
  candidates racing for it, one gets 409 Conflict and stays a follower.
- The leader renews every retryPeriod. Its authority ends renewDeadline after the last renewal that
  succeeded was *sent* (`valid_until`). A follower can take over no earlier than leaseDuration after it
  saw that renewal, so leaseDuration - renewDeadline is the margin the leader has to stop acting
  (fencing): `may_act()` turns false at valid_until whether or not anything noticed the loss yet.
- Releasing (graceful stop) empties holderIdentity, so a follower takes over at its next attempt.

The official client's own `kubernetes.leaderelection` is not used: it has no leaseTransitions, uses the
process-wide default client, cannot be stopped or released, and a renewal blocked in a request cannot
end its leadership on time.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from osprov.runtime import logs

log = logs.log("osprov.bridge.leader")
JITTER = 0.2  # a candidate waits retryPeriod * (1 + up to JITTER) between attempts


@dataclass(frozen=True)
class ElectionConfig:
    namespace: str
    name: str
    identity: str
    lease_duration_s: float = 10.0
    renew_deadline_s: float = 7.0
    retry_period_s: float = 2.0

    def __post_init__(self) -> None:
        # client-go's validation: the renew deadline must leave room for retries and for fencing.
        if not self.lease_duration_s > self.renew_deadline_s > self.retry_period_s * (1 + JITTER) > 0:
            raise ValueError(
                "leader election needs leaseDuration > renewDeadline > retryPeriod * 1.2 > 0, got "
                f"{self.lease_duration_s}/{self.renew_deadline_s}/{self.retry_period_s}"
            )
        if not self.identity:
            raise ValueError("leader election needs a holder identity")

    @property
    def takeover_bound_s(self) -> float:
        """Worst case from a leader's last renewal to a follower holding the Lease: the follower sees the
        renewal up to one retry later, waits leaseDuration, then at most one more (jittered) retry."""
        return self.lease_duration_s + self.retry_period_s * (2 + JITTER)


@dataclass(frozen=True)
class Record:
    """What the Lease says; any change of it (a renewal changes renewTime) restarts the expiry clock."""

    holder: str
    duration_s: int
    acquired: datetime | None
    renewed: datetime | None
    transitions: int

    @classmethod
    def of(cls, lease: client.V1Lease) -> Record:
        spec = lease.spec or client.V1LeaseSpec()
        return cls(
            holder=spec.holder_identity or "",
            duration_s=spec.lease_duration_seconds or 0,
            acquired=spec.acquire_time,
            renewed=spec.renew_time,
            transitions=spec.lease_transitions or 0,
        )


class LeaseLock:
    """client-go's tryAcquireOrRenew on one Lease (synchronous: the official client is)."""

    def __init__(
        self, api: client.ApiClient, config: ElectionConfig, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.coordination = client.CoordinationV1Api(api)
        self.config, self.clock = config, clock
        self.lease: client.V1Lease | None = None  # as last read or written (carries resourceVersion)
        self.observed: Record | None = None
        self.observed_at = 0.0

    @property
    def holder(self) -> str:
        return self.observed.holder if self.observed else ""

    def is_leader(self) -> bool:
        return self.holder == self.config.identity

    def _observe(self, record: Record) -> None:
        if record != self.observed:
            self.observed, self.observed_at = record, self.clock()

    def _spec(self, now: datetime, acquired: datetime | None, transitions: int) -> client.V1LeaseSpec:
        return client.V1LeaseSpec(
            holder_identity=self.config.identity,
            lease_duration_seconds=math.ceil(self.config.lease_duration_s),
            acquire_time=acquired or now,
            renew_time=now,
            lease_transitions=transitions,
        )

    def try_acquire_or_renew(self) -> bool:
        c, timeout = self.config, self.config.retry_period_s
        now = datetime.now(UTC)
        try:
            lease = self.coordination.read_namespaced_lease(c.name, c.namespace, _request_timeout=timeout)
        except ApiException as err:
            if err.status != 404:
                log.warning("cannot read the lease", lease=c.name, status=err.status)
                return False
            body = client.V1Lease(metadata=client.V1ObjectMeta(name=c.name), spec=self._spec(now, None, 0))
            return self._write(
                lambda: self.coordination.create_namespaced_lease(c.namespace, body, _request_timeout=timeout)
            )
        except (HTTPError, OSError) as err:
            log.warning("cannot read the lease", lease=c.name, error=type(err).__name__)
            return False
        self.lease = lease
        self._observe(Record.of(lease))
        assert self.observed is not None
        held_by_other = self.observed.holder not in ("", c.identity)
        if held_by_other and self.observed_at + self.observed.duration_s > self.clock():
            return False  # held, and not yet expired by our own observation
        if self.is_leader():
            spec = self._spec(now, self.observed.acquired, self.observed.transitions)
        else:
            spec = self._spec(now, None, self.observed.transitions + 1)
            log.info("taking over the lease", lease=c.name, previous=self.observed.holder or None)
        lease.spec = spec
        return self._write(
            lambda: self.coordination.replace_namespaced_lease(
                c.name, c.namespace, lease, _request_timeout=timeout
            )
        )

    def _write(self, call: Callable[[], client.V1Lease]) -> bool:
        try:
            written = call()
        except ApiException as err:
            if err.status != 409:  # 409: another candidate wrote first (or the Lease now exists)
                log.warning("cannot write the lease", lease=self.config.name, status=err.status)
            return False
        except (HTTPError, OSError) as err:
            log.warning("cannot write the lease", lease=self.config.name, error=type(err).__name__)
            return False
        self.lease = written
        self._observe(Record.of(written))
        return True

    def release(self) -> bool:
        """Give the Lease up (holderIdentity emptied) so a follower need not wait for it to expire."""
        if self.lease is None or not self.is_leader():
            return False
        now, c, lease = datetime.now(UTC), self.config, self.lease
        lease.spec = client.V1LeaseSpec(
            holder_identity="",
            lease_duration_seconds=1,
            acquire_time=now,
            renew_time=now,
            lease_transitions=self.observed.transitions if self.observed else 0,
        )
        return self._write(
            lambda: self.coordination.replace_namespaced_lease(
                c.name, c.namespace, lease, _request_timeout=c.retry_period_s
            )
        )


class Election:
    """Drives a LeaseLock from asyncio: acquire(), hold() until lost, release(). One thread does every
    Lease call, in order; a call that hangs cannot extend the leadership past valid_until."""

    def __init__(self, lock: LeaseLock, on_attempt: Callable[[], None] | None = None) -> None:
        self.lock, self.config = lock, lock.config
        self.on_attempt = on_attempt  # liveness: the election loop is making attempts
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lease")
        self.leading = False
        self.valid_until = 0.0  # time.monotonic() (= the event loop's clock)
        self.renewed_at = 0.0  # when the last successful renewal was sent

    def may_act(self) -> bool:
        """True while this process may signal: it leads and its last renewal is within renewDeadline."""
        return self.leading and time.monotonic() < self.valid_until

    async def _attempt(self, timeout_s: float) -> bool:
        sent = time.monotonic()
        loop = asyncio.get_running_loop()
        if self.on_attempt:
            self.on_attempt()
        try:
            ok = await asyncio.wait_for(
                loop.run_in_executor(self.executor, self.lock.try_acquire_or_renew), timeout_s
            )
        except TimeoutError:
            return False
        if ok:
            self.renewed_at, self.valid_until = sent, sent + self.config.renew_deadline_s
        return ok

    async def acquire(self) -> None:
        """Returns once this process holds the Lease."""
        log.info("candidate for the lease", lease=self.config.name, identity=self.config.identity)
        while True:
            if await self._attempt(self.config.retry_period_s):
                break
            await asyncio.sleep(self.config.retry_period_s * (1 + random.random() * JITTER))  # a poll period
        self.leading = True
        log.info("leading", lease=self.config.name, identity=self.config.identity)

    async def hold(self) -> None:
        """Renew every retryPeriod; return when the Lease is lost (not renewed within renewDeadline of the
        last renewal, or taken by another holder). Never returns later than valid_until."""
        c = self.config
        while True:
            await asyncio.sleep(c.retry_period_s)
            while not await self._attempt(max(self.valid_until - time.monotonic(), 0.0)):
                remaining = self.valid_until - time.monotonic()
                if remaining <= 0 or self.lock.holder not in ("", c.identity):
                    self.leading = False
                    log.warning(
                        "lost the lease",
                        lease=c.name,
                        holder=self.lock.holder or None,
                        since_last_renewal_s=round(time.monotonic() - self.renewed_at, 3),
                    )
                    return
                await asyncio.sleep(min(c.retry_period_s, remaining))

    async def release(self) -> None:
        """Give the Lease up if this process holds it (also after an acquire() cancelled mid-call)."""
        self.leading = False
        loop = asyncio.get_running_loop()
        try:
            released = await asyncio.wait_for(
                loop.run_in_executor(self.executor, self.lock.release), self.config.retry_period_s * 2
            )
        except TimeoutError:
            released = False
        if released:
            log.info("released the lease", lease=self.config.name, identity=self.config.identity)
