"""Seed 001 inside a test suite: an extension that initialises objects
twice (tests/fixtures/double_init, built by the plugin's test into a folder
on PYTHONPATH); skipped where it was not built."""
import pytest

d = pytest.importorskip("double_init")


def test_twice():
    for _ in range(3):
        d.make_twice()              # LINE:twice


def test_once():
    for _ in range(3):
        d.make_once()
