"""``python -m tclnats_py.compat``: the conformance runner (same as ``tclnats-compat``)."""

import sys

from tclnats_py.compat.runner import main

sys.exit(main())
