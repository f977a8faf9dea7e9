"""keystone.probe_password / set_password on the real Keystone (lockout after 3 failed logins), with
Keystone made unreachable on the client side: a closed port, an answer of 503, and a stalled server.

Keystone is never stopped here: the stack is shared with other test sessions, and from the client's
side a stopped Keystone is exactly a refused connection.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.api.failure.v1 import Failure
from temporalio.converter import DataConverter
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from devenv.testing import StackEnv
from osprov.activities import keystone
from osprov.api.errors import NOT_FOUND, TRANSIENT
from osprov.api.keystone_io import Create, Find, Probe, ProbeResult, SecretRef, SetPassword
from tests.activities.conftest import SecretStore

pytestmark = pytest.mark.stack


@pytest.fixture
def user(env: ActivityEnvironment, test_domain: str, unique: str) -> tuple[str, str]:
    name = f"pw-user-{unique}"
    request = Create(
        kind="user",
        fields={"name": name, "domain_id": test_domain},
        find=Find(kind="user", name=name, filters={"domain_id": test_domain}),
    )
    return env.run(keystone.create, request).id, name


def _probe(env: ActivityEnvironment, user: tuple[str, str], domain: str, secret: SecretRef) -> ProbeResult:
    return env.run(
        keystone.probe_password, Probe(user_id=user[0], user_name=user[1], domain_id=domain, secret=secret)
    )


def _failure_text(err: ApplicationError) -> str:
    """Everything Temporal would record for this error: message, type, details, stack, causes."""
    failure = Failure()
    converter = DataConverter.default
    converter.failure_converter.to_failure(err, converter.payload_converter, failure)
    return str(failure) + repr(err) + str(err.__cause__) + str(err.__context__)


def test_probe_is_valid_after_set_and_unauthorized_for_another_password(
    env: ActivityEnvironment,
    user: tuple[str, str],
    test_domain: str,
    secret_store: SecretStore,
    failed_logins: Callable[[str], int],
    unique: str,
) -> None:
    current, _ = secret_store.password_secret(f"pw-a-{unique}")
    rotated, _ = secret_store.password_secret(f"pw-b-{unique}")
    env.run(keystone.set_password, SetPassword(user_id=user[0], secret=current))

    for _ in range(4):  # more probes than lockout_failure_attempts (3): a valid probe never counts
        assert _probe(env, user, test_domain, current).outcome == "valid"
    assert failed_logins(user[0]) == 0

    assert _probe(env, user, test_domain, rotated).outcome == "unauthorized"
    assert failed_logins(user[0]) == 1  # the counter the zero above is read from does count

    env.run(keystone.set_password, SetPassword(user_id=user[0], secret=rotated))
    assert _probe(env, user, test_domain, rotated).outcome == "valid"
    assert _probe(env, user, test_domain, current).outcome == "unauthorized"


def test_missing_secret_or_key_is_a_typed_error_and_no_keystone_call(
    env: ActivityEnvironment, user: tuple[str, str], test_domain: str, secret_store: SecretStore, unique: str
) -> None:
    ref, _ = secret_store.password_secret(f"pw-k-{unique}")
    with pytest.raises(ApplicationError) as err:
        _probe(env, user, test_domain, ref.model_copy(update={"key": "NOPE"}))
    assert err.value.type == NOT_FOUND and "NOPE" in str(err.value)
    with pytest.raises(ApplicationError) as err:
        env.run(
            keystone.set_password,
            SetPassword(user_id=user[0], secret=ref.model_copy(update={"name": "absent"})),
        )
    assert err.value.type == NOT_FOUND


def test_set_password_of_a_missing_user_is_not_found_and_leaks_nothing(
    env: ActivityEnvironment,
    secret_store: SecretStore,
    unique: str,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    ref, password = secret_store.password_secret(f"pw-m-{unique}")
    caplog.set_level(logging.DEBUG)  # keystoneauth/openstacksdk would print request bodies at DEBUG
    with pytest.raises(ApplicationError) as err:
        env.run(keystone.set_password, SetPassword(user_id=f"nouser{unique}", secret=ref))
    assert err.value.type == NOT_FOUND
    out, errout = capfd.readouterr()
    for text in (_failure_text(err.value), caplog.text, out, errout):
        assert password not in text


@pytest.fixture
def unreachable_cloud(
    identity_stack: StackEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[[str, float], None]:
    """Point the activities at another auth URL (same credentials) with the given request timeout."""

    def point_at(auth_url: str, timeout: float) -> None:
        clouds = yaml.safe_load(identity_stack.clouds_yaml.read_text())
        clouds["clouds"][identity_stack.cloud]["auth"]["auth_url"] = auth_url
        path = tmp_path / "clouds.yaml"
        path.write_text(yaml.safe_dump(clouds))
        path.chmod(0o600)
        monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(path))
        monkeypatch.setenv("OSPROV_API_TIMEOUT", str(timeout))

    return point_at


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port that refuses connections for the whole test: bound (so no other process, e.g. the concurrent
    pytest session of `make test`, can take it) but never listening. A port merely closed again was
    once taken by another process mid-test, which then answered the "refused" outage."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


@pytest.fixture
def failing_keystone() -> Iterator[str]:
    """An HTTP server answering every request with 503, as a Keystone behind a failing proxy would."""

    class Unavailable(BaseHTTPRequestHandler):
        def _fail(self) -> None:
            self.send_response(503)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"error": {"code": 503, "message": "Service Unavailable"}}')

        do_GET = do_POST = do_PATCH = do_HEAD = _fail

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Unavailable)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v3"
    server.shutdown()
    server.server_close()


@pytest.fixture
def stalled_keystone() -> Iterator[str]:
    """A listening socket that accepts and never answers: every request times out."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v3"


@pytest.mark.parametrize("outage", ["refused", "http 503", "timeout"])
def test_probe_during_a_keystone_outage_is_transient_never_unauthorized(
    env: ActivityEnvironment,
    user: tuple[str, str],
    test_domain: str,
    secret_store: SecretStore,
    unreachable_cloud: Callable[[str, float], None],
    closed_port: int,
    request: pytest.FixtureRequest,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
    failed_logins: Callable[[str], int],
    outage: str,
    unique: str,
) -> None:
    ref, password = secret_store.password_secret(f"pw-o-{unique}")
    env.run(keystone.set_password, SetPassword(user_id=user[0], secret=ref))
    if outage == "refused":
        unreachable_cloud(f"http://127.0.0.1:{closed_port}/v3", 5)
    elif outage == "http 503":
        unreachable_cloud(request.getfixturevalue("failing_keystone"), 5)
    else:
        unreachable_cloud(request.getfixturevalue("stalled_keystone"), 1)
    caplog.set_level(logging.DEBUG)

    for activity_call in (
        lambda: _probe(env, user, test_domain, ref),
        lambda: env.run(keystone.set_password, SetPassword(user_id=user[0], secret=ref)),
        lambda: env.run(keystone.find, Find(kind="user", name=user[1], filters={"domain_id": test_domain})),
    ):
        with pytest.raises(ApplicationError) as err:
            activity_call()
        assert err.value.type == TRANSIENT and not err.value.non_retryable
        assert password not in _failure_text(err.value)
    out, errout = capfd.readouterr()
    assert password not in caplog.text + out + errout
    assert failed_logins(user[0]) == 0
