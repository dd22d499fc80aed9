"""`python -m jupyter_air.cli` runs the `air` command."""

from . import main

raise SystemExit(main())
