"""A log the plugin cannot read (here: one that is no log at all, in the
session's log folder): its tests' findings are unknown, not absent.  The
summary says so as an error, and with --gputrace-fail-* the session fails
although every test passed."""
import os


def test_leaves_a_bad_log():
    folder = os.path.dirname(os.environ["TRACE_OUTPUT"])
    with open(os.path.join(folder, "pytest-0.tlog"), "wb") as f:
        f.write(b"this is not a log\n" * 100)
