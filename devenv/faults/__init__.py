"""Fault tooling for tests, built on the real services of the local stack."""
