"""The OpenStack mini cloud of the local stack: install, configure, start, bootstrap."""
