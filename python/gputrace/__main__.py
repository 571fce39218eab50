"""python -m gputrace: the same as the gputrace command."""
import sys

from gputrace.cli import main

sys.exit(main())
