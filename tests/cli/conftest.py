"""Fixtures shared with the API and client tests."""

from tests.api.test_auth import authed  # noqa: F401 (a server with authentication on)
from tests.clients.conftest import unix_target  # noqa: F401 (a server on a Unix socket)
