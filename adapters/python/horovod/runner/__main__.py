"""python -m horovod.runner: the same as the horovodrun command."""

import sys

from horovod.runner import main

sys.exit(main())
