"""Fixtures shared with the API tests."""

from tests.api.test_auth import authed  # noqa: F401 (a server with authentication on)
