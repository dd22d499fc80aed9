"""What a notebook shows when the Ray cluster cannot be used: the cell's own line and the message, as for worker
errors, not jupyter_air's frames."""

from __future__ import annotations

import io
from contextlib import redirect_stdout

import pytest
from IPython.core.interactiveshell import InteractiveShell

pytestmark = pytest.mark.ray


@pytest.fixture
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "jupyter_air")
    yield ip
    ip.run_line_magic("unload_ext", "jupyter_air")


def shown(shell, cell: str) -> str:
    """What IPython prints for ``cell`` (a plain shell prints a cell's error to stdout)."""
    out = io.StringIO()
    with redirect_stdout(out):
        shell.run_cell(cell)
    return out.getvalue()


@pytest.mark.parametrize(
    ("line", "error"),
    [
        (
            "distributed(work, nodes=2, ray_address='127.0.0.1:1').distributed()",
            "ClusterUnreachable: cannot reach the Ray head (GCS) at 127.0.0.1:1: Connection refused",
        ),
        (
            "distributed(work, nodes=2, ray_address='no port here')",
            "BadAddress: Ray address 'no port here' is not an address: use 'auto'",
        ),
    ],
    ids=["unreachable", "bad-address"],
)
def test_a_cluster_error_shows_the_cells_line_and_the_message(shell, line, error):
    # Given a cell whose call cannot reach the cluster, When it runs
    text = shown(shell, f"from jupyter_air import distributed\n\ndef work():\n    pass\n\n{line}\n")

    # Then the error shows the cell's line and the message, and none of jupyter_air's frames
    assert line in text and error in text
    assert "jupyter_air/" not in text and "<string>" not in text
    assert len(text.strip().splitlines()) <= 6, text


def test_a_bad_address_given_to_the_magic_shows_the_message(shell):
    # Given the magic with an address that is not one, When the cell runs
    text = shown(shell, "%%air_distributed --nodes 2 --ray-address no-port\nprint('never')\n")

    # Then the message shows, without jupyter_air's frames, and the cell did not run
    assert "BadAddress: Ray address 'no-port' is not an address" in text
    assert "jupyter_air/" not in text and "never" not in text.splitlines()
    assert len(text.strip().splitlines()) <= 6, text
