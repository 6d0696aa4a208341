import pytest
from support.view import finished_mini_run


@pytest.fixture(scope="module")
def mini_run(tmp_path_factory):
    """One real mini-swe-agent session (REJECTED, then ACCEPTED), made once per test file."""
    return finished_mini_run(tmp_path_factory.mktemp("mini"))
