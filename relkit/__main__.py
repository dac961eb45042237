"""Run the relkit command line as ``python -m relkit``."""

from relkit.cli import main

raise SystemExit(main())
