"""python -m mbd_ros.cli: the mbd-ros command line."""
import sys

from . import main

sys.exit(main())
