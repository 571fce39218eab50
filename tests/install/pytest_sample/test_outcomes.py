"""Outcomes that must be the same with and without --gputrace."""
import os
import sys

import pytest


def test_passes():
    assert sum(range(10)) == 45


def test_fails():
    assert os.getpid() < 0


@pytest.mark.skip(reason="skipped on purpose")
def test_skipped():
    pass


@pytest.mark.xfail(reason="expected")
def test_xfails():
    assert False


@pytest.fixture
def broken():
    raise RuntimeError("fixture error")


def test_errors(broken):
    pass


def test_argv_and_stdout(capsys):
    print("hello")
    assert capsys.readouterr().out == "hello\n"
    assert "pytest" in sys.argv[0] or sys.argv[0].endswith("__main__.py")
