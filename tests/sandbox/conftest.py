"""Fixtures for the sandbox tests: the module's real Redis (the one a hostile bot looks for, too) and its client."""

from tests.redis_fixtures import module_redis, r  # noqa: F401 (fixtures, found by pytest)
