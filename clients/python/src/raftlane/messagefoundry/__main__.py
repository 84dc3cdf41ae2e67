"""``python -m raftlane.messagefoundry serve ...`` (see :mod:`raftlane.messagefoundry.serve`)."""

import sys

from .serve import main

sys.exit(main())
