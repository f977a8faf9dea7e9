"""A Kubernetes API server emulator: the local cluster of the dev stack and of the tests (issue 2)."""
