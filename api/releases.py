"""How many releases of workflow code (workflows/patches.py, RELEASES) the code of this build knows.

Whoever starts a run (the bridge, the claim activity, a run continuing as new) stamps it on the run's
input as its `generation`: the run then takes every patch of those releases without recording a marker,
and a worker that knows fewer releases refuses it (workflows/patches.py says why). It is a count, not a
list, so the bridge and the activities need not import workflow code; tests/workflows/test_patches.py
fails when it and RELEASES disagree.
"""

GENERATION = 13
