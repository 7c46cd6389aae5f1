"""``python -m proofs``: run every proof (the same as ``dpref prove``)."""

from proofs.cli import main

raise SystemExit(main())
