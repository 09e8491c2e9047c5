"""``python -m sealmem.client.cli``: the same as the ``sealmem`` command."""

import sys

from sealmem.client.cli import main

sys.exit(main())
