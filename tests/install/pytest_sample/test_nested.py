"""A test that runs pytest itself (as plugin authors' tests do), with the
traced session's environment: the inner pytest must leave the session's
logs and marks alone."""
import os
import subprocess
import sys


def test_runs_pytest():
    here = os.path.dirname(os.path.abspath(__file__))
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "gputrace.pytest_plugin", "-p", "no:cacheprovider",
                        "--gputrace", os.path.join(here, "test_outcomes.py") + "::test_passes"],
                       capture_output=True, text=True, cwd=here)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "= gputrace =" not in p.stdout
