"""``python -m sealmem.client.cli``: the same as the ``sealmem`` command."""

import sys

from . import main

sys.exit(main())
