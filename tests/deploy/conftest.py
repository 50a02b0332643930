"""Fixtures for the deployment tests: a real Redis of the test's own beside the deployment's (the fault test
replays the deployment's results on it)."""

from tests.redis_fixtures import module_redis, r  # noqa: F401 (fixtures, found by pytest)
