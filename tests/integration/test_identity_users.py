"""Users on the real Keystone: password from a Secret, rotation, lockout safety, outages, drift, leaks.

Keystone runs with lockout_failure_attempts = 3, so every check here authenticates only with the
password it expects to be right, and reads Keystone's own record (local_user.failed_auth_count, the
newest password row) to prove what osprov did. The worker reaches Keystone through a fault proxy so
an outage can be staged without stopping the Keystone other sessions share.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from keystoneauth1 import session as ksa_session
from keystoneauth1.identity import v3
from openstack.identity.v3._proxy import Proxy as Identity

from devenv import stack
from devenv.config import PORTS
from devenv.faults.proxy import Fault, FaultProxy
from devenv.testing import StackEnv, _live_other_users
from osprov.api import keystone_io as io
from tests.integration.test_identity_support import (
    Passwords,
    activity_runs,
    assert_no_leaks,
    identity_client,
    keystone_domain_id,
    login_record,
    now,
    proxied_clouds_env,
    ready_status,
    sweep_state,
    sweep_ticks,
    uniq,
    wait_condition,
    wait_new_id,
    workflow_id,
)
from tests.support.osprov import Osprov, run_osprov
from tests.support.waiting import wait_for

pytestmark = pytest.mark.stack

STARTED = now()
PASSWORDS = Passwords()


@pytest.fixture(scope="module")
def proxy() -> Iterator[FaultProxy]:
    with FaultProxy("127.0.0.1", PORTS.keystone) as p:
        yield p


@pytest.fixture(scope="module")
def osprov(
    identity_stack: StackEnv, tmp_path_factory: pytest.TempPathFactory, proxy: FaultProxy
) -> Iterator[Osprov]:
    tmp: Path = tmp_path_factory.mktemp("identity-users")
    yield from run_osprov(
        identity_stack, tmp, resync_seconds=2, extra_env=proxied_clouds_env(identity_stack, tmp, proxy)
    )


@pytest.fixture(scope="module")
def ks(identity_stack: StackEnv) -> Iterator[Identity]:
    yield from identity_client(identity_stack)


@pytest.fixture(scope="module")
def domain(osprov: Osprov, ks: Identity) -> Iterator[str]:
    name = uniq("users")
    osprov.apply("Domain", "users", {"name": name})
    domain_id = ready_status(osprov, "Domain", "users")["domainID"]
    yield name
    ks.update_domain(domain_id, enabled=False)  # Keystone outlives runs: drop the domain and its users
    ks.delete_domain(domain_id, ignore_missing=True)


def other_test_sessions() -> bool:
    return bool(_live_other_users())


def authenticates(stack: StackEnv, user_id: str, password: str) -> bool:
    """One login as the user, straight to Keystone. Call only with the password expected to be right."""
    url = stack.keystone_url.rstrip("/")
    plugin = v3.Password(
        auth_url=url if url.endswith("/v3") else f"{url}/v3",
        user_id=user_id,
        password=password,
        unscoped=True,
        include_catalog=False,
    )
    try:
        plugin.get_access(ksa_session.Session(auth=plugin))
    except Exception:
        return False
    return True


def make_user(osprov: Osprov, domain: str, name: str, secret: str, **extra: object) -> tuple[str, str]:
    """A User resource whose password lives in a fresh Secret; returns (user ID, password)."""
    password = PASSWORDS.new()
    osprov.create_secret(secret, {"OS_PASSWORD": password})
    osprov.apply("User", name, {"name": name, "domain": domain, "passwordSecret": {"name": secret}, **extra})
    user_id = ready_status(osprov, "User", name)["userID"]
    return user_id, password


def test_password_comes_from_the_secret_default_key(osprov: Osprov, ks: Identity, domain: str) -> None:
    user_id, password = make_user(osprov, domain, "alice", "alice-pw", description="from a Secret")
    kuser = ks.get_user(user_id)
    assert kuser.name == "alice" and kuser.description == "from a Secret" and kuser.is_enabled
    assert authenticates(osprov.stack, user_id, password)
    assert login_record(user_id).failed_auth_count == 0  # created with its password: nothing probed


def test_unchanged_password_over_many_resync_logins_causes_zero_failed_logins(
    osprov: Osprov, domain: str
) -> None:
    user_id, password = make_user(osprov, domain, "steady", "steady-pw")
    wf = workflow_id(osprov, "User", "steady")
    before = login_record(user_id)
    # Resync every 2 s: the Keystone sweep's scans, each a real login with the Secret's password (the
    # user's report names the Secret). Six whole scans after the report:
    wait_for(
        lambda: any(
            x.probe is not None and x.probe.user_id == user_id for x in sweep_state(osprov).swept.values()
        ),
        "the user's report, with its password to check",
        30,
    )
    ticks = sweep_ticks(osprov)
    wait_for(lambda: sweep_ticks(osprov) >= ticks + 7, "six scans, each logging in", 90, 1)
    # Keystone resets its counter on every successful login, so the counter alone could hide a failure
    # between two probes; but a probe rejected with 401 is always followed by a password write, so "no
    # new password row and no second set_password" closes that gap.
    after = login_record(user_id)
    assert after.failed_auth_count == 0 and after.failed_auth_at is None
    assert after.password_row == before.password_row, "an unchanged password was written again"
    assert activity_runs(osprov.stack, wf, io.SET_PASSWORD.name) == 1  # the create only
    assert authenticates(osprov.stack, user_id, password)


def test_rotated_secret_is_applied_without_touching_the_user(osprov: Osprov, domain: str) -> None:
    user_id, _ = make_user(osprov, domain, "rotor", "rotor-pw")
    before = login_record(user_id)
    rotated = PASSWORDS.new()
    osprov.create_secret("rotor-pw", {"OS_PASSWORD": rotated})  # patches the existing Secret
    wait_for(
        lambda: login_record(user_id).password_row != before.password_row, "the rotated password written", 60
    )
    assert (osprov.get("User", "rotor") or {}).get("metadata", {}).get("generation") == 1, (
        "the User object itself was changed"
    )
    assert authenticates(osprov.stack, user_id, rotated)
    wait_condition(osprov, "User", "rotor", lambda c: c["status"] == "True", "Ready")


def test_missing_secret_or_key_is_reported_and_nothing_written(
    osprov: Osprov, ks: Identity, domain: str
) -> None:
    name = uniq("nosecret")
    osprov.apply(
        "User", "nosecret", {"name": name, "domain": domain, "passwordSecret": {"name": "absent-pw"}}
    )
    cond = wait_condition(osprov, "User", "nosecret", lambda c: c["status"] == "False", "reports the Secret")
    assert "absent-pw" in cond["message"]
    osprov.create_secret("absent-pw", {"WRONG_KEY": PASSWORDS.new()})
    wait_for(
        lambda: "OS_PASSWORD" in (osprov.condition("User", "nosecret") or {}).get("message", ""),
        "Ready names the missing key",
        60,
    )
    assert ks.find_user(name, domain_id=keystone_domain_id(ks, domain)) is None, (
        "a user was written to Keystone"
    )
    password = PASSWORDS.new()
    osprov.create_secret("absent-pw", {"OS_PASSWORD": password})
    user_id = str(ready_status(osprov, "User", "nosecret", timeout_s=60)["userID"])
    assert authenticates(osprov.stack, user_id, password)


def test_user_deleted_by_hand_is_recreated_by_the_resync(osprov: Osprov, ks: Identity, domain: str) -> None:
    old_id, password = make_user(osprov, domain, "phoenix", "phoenix-pw")
    ks.delete_user(old_id)
    new_id = wait_new_id(osprov, "User", "phoenix", "userID", old_id)
    kuser = ks.get_user(new_id)
    assert kuser.name == "phoenix" and kuser.domain_id == keystone_domain_id(ks, domain)
    assert authenticates(osprov.stack, new_id, password)


def test_keystone_outage_mid_reconcile_writes_no_password_and_recovers(
    osprov: Osprov, ks: Identity, proxy: FaultProxy, domain: str
) -> None:
    user_id, password = make_user(osprov, domain, "outage", "outage-pw")
    before = login_record(user_id)
    wf = workflow_id(osprov, "User", "outage")
    writes = activity_runs(osprov.stack, wf, io.SET_PASSWORD.name)
    proxy.set_fault(Fault.RESET, drop_existing=True)  # Keystone unreachable for the worker
    try:
        osprov.apply(
            "User",
            "outage",
            {
                "name": "outage",
                "domain": domain,
                "passwordSecret": {"name": "outage-pw"},
                "description": "changed during the outage",
            },
        )
        cond = wait_condition(osprov, "User", "outage", lambda c: c["status"] == "False", "failing", 90)
        assert cond["reason"] == "ReconcileError"
        assert password not in cond["message"]
    finally:
        proxy.set_fault(Fault.PASS)
    osprov.wait_ready("User", "outage", generation=2, timeout_s=120)
    after = login_record(user_id)
    assert after.password_row == before.password_row and after.failed_auth_count == 0
    assert activity_runs(osprov.stack, wf, io.SET_PASSWORD.name) == writes
    assert ks.get_user(user_id).description == "changed during the outage"
    assert authenticates(osprov.stack, user_id, password)


def test_keystone_stopped_mid_reconcile_writes_no_password_and_recovers_on_restart(
    osprov: Osprov, ks: Identity, domain: str
) -> None:
    """The real outage: Keystone's process is stopped and started again. It is shared by every test
    session on this machine, so this runs only when no other session is registered (as in CI)."""
    if other_test_sessions():
        pytest.skip(
            "other test sessions share this Keystone; the proxy outage test above covers the worker side"
        )
    user_id, password = make_user(osprov, domain, "stopped", "stopped-pw")
    before = login_record(user_id)
    wf = workflow_id(osprov, "User", "stopped")
    spec = {"name": "stopped", "domain": domain, "passwordSecret": {"name": "stopped-pw"}}
    stack.stop_service("keystone")
    try:
        osprov.apply("User", "stopped", spec | {"description": "changed while Keystone was down"})
        cond = wait_condition(osprov, "User", "stopped", lambda c: c["status"] == "False", "failing", 120)
        assert cond["reason"] == "ReconcileError" and password not in cond["message"]
    finally:
        stack.start_service("keystone")
    ready_status(osprov, "User", "stopped", generation=2, timeout_s=180)
    after = login_record(user_id)
    assert after.password_row == before.password_row and after.failed_auth_count == 0
    assert activity_runs(osprov.stack, wf, io.SET_PASSWORD.name) == 1  # the create only
    assert ks.get_user(user_id).description == "changed while Keystone was down"
    assert authenticates(osprov.stack, user_id, password)


def test_zz_no_test_password_in_histories_logs_or_status(osprov: Osprov) -> None:
    """Runs last in this module (tests run in file order): everything the module made is scanned."""
    scanned = assert_no_leaks(osprov, PASSWORDS, STARTED)
    assert scanned > 100
