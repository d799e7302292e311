"""How the suite treats a missing server: skipped on a developer's machine, failed under CI."""

from __future__ import annotations

import pytest

from test_servers_support import import_or_skip, servers_required, skip_or_fail


@pytest.mark.parametrize("value", ["true", "TRUE", "1", "yes"])
def test_ci_makes_a_missing_server_fail(monkeypatch, value):
    monkeypatch.setenv("CI", value)
    assert servers_required()
    with pytest.raises(pytest.fail.Exception, match="CI is set"):
        skip_or_fail("PostgreSQL is not installed")
    with pytest.raises(ModuleNotFoundError):
        import_or_skip("no_such_client_library_for_bizon_tests")


@pytest.mark.parametrize("value", [None, "", "false", "0"])
def test_outside_ci_a_missing_server_skips(monkeypatch, value):
    if value is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", value)
    assert not servers_required()
    with pytest.raises(pytest.skip.Exception, match="RabbitMQ is not installed"):
        skip_or_fail("RabbitMQ is not installed")
    with pytest.raises(pytest.skip.Exception):
        import_or_skip("no_such_client_library_for_bizon_tests")
