"""`python -m osprov …` is the `osprov` command."""

from osprov.cli import main

raise SystemExit(main())
