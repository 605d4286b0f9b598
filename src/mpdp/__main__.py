"""``python -m mpdp`` is the ``mpdp`` command."""

from mpdp.cli import main

raise SystemExit(main())
