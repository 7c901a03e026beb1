"""``python -m compat``: the conformance runner (same as ``tclnats-compat``)."""

import sys

from compat.runner import main

sys.exit(main())
