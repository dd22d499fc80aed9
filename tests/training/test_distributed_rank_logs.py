"""The live ``[rank N]`` copy of each rank's log file."""

from __future__ import annotations

from jupyter_air.training.logs import RankLogTail


def test_lines_split_across_reads_and_inside_a_character_arrive_whole(tmp_path):
    # Given a rank log written in pieces, the first piece ending inside the 3-byte character "█"
    log = tmp_path / "rank_0.log"
    text = "epoch 1 ███ 30%\nepoch 2 done\n".encode()
    cut = text.index("█".encode()) + 1
    tail = RankLogTail([log, tmp_path / "rank_1.log"])
    log.write_bytes(text[:cut])
    # When the tail is pumped after each piece
    assert tail.pump() == []
    with open(log, "ab") as f:
        f.write(text[cut:] + b"no newline yet")
    lines = tail.pump() + tail.pump(final=True)
    # Then every line arrives once, whole and with its rank, the unterminated one at the end
    assert lines == [(0, "epoch 1 ███ 30%"), (0, "epoch 2 done"), (0, "no newline yet")]
