"""``python -m dpref``."""

from dpref.cli import main

raise SystemExit(main())
