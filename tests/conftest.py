"""Shared test wiring: the local stack fixtures (identity_stack, full_stack) come from devenv.testing."""

pytest_plugins = ["devenv.testing"]
