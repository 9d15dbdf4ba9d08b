"""Fixtures of the pipeline tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def data_root(tmp_path_factory):
    """One dataset cache for the session: stand-ins are generated once and shared by the tests."""
    return tmp_path_factory.mktemp("pipeline-data")
