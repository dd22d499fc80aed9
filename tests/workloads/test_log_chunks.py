"""Reading a log by byte offset: whole lines only, never a cut UTF-8 character, the next offset to ask for."""

from __future__ import annotations

import re

import pytest

from jupyter_air.workloads.state.logs import CHUNK_BYTES, OUTPUT, BadOffset, LogCursor, LogWriter, read_chunk


@pytest.fixture
def log(tmp_path):
    def write(data: bytes):
        (tmp_path / OUTPUT).write_bytes(data)
        return tmp_path

    return write


def test_an_unfinished_line_waits_until_the_log_is_finished(log):
    # Given a log whose last line is still being written
    directory = log("épique\nhalf a li".encode())
    # When it is read while the attempt runs, Then only the whole line comes, and where to go on from
    running = read_chunk(directory, 0, finished=False)
    assert (running.text, running.next_offset, running.size_bytes) == ("épique\n", 8, 17)
    assert read_chunk(directory, running.next_offset, finished=False).text == ""
    # When it is read once the attempt ended, Then the rest comes too
    done = read_chunk(directory, running.next_offset, finished=True)
    assert (done.text, done.next_offset) == ("half a li", 17)


def test_chunks_end_at_lines_and_a_line_longer_than_a_chunk_is_cut_between_characters(log):
    # Given lines of 3- and 4-byte characters, one far longer than a chunk
    text = "€€\n" + "😀" * 40 + "\nend\n"
    directory = log(text.encode())
    # When it is read in chunks of at most 10 bytes, each from the offset the last one gave
    pieces, offset = [], 0
    while offset < len(text.encode()):
        chunk = read_chunk(directory, offset, finished=False, max_bytes=10)
        assert chunk.next_offset > offset, "every read makes progress"
        pieces.append(chunk.text)
        offset = chunk.next_offset
    # Then no character is cut, short lines stay whole, and the pieces make up the log
    assert "".join(pieces) == text and "\ufffd" not in "".join(pieces)
    assert pieces[0] == "€€\n" and pieces[-1] == "end\n"
    assert all(len(p.encode()) <= 10 for p in pieces)


@pytest.mark.parametrize(
    ("offset", "message"),
    [(1, "offset 1 is inside a UTF-8 character"), (99, "offset 99 is past the end of the log (7 bytes)")],
)
def test_an_offset_that_is_no_place_to_read_from_is_refused(log, offset, message):
    directory = log("é\nabc\n".encode())
    with pytest.raises(BadOffset, match=re.escape(message)):
        read_chunk(directory, offset, finished=True)


def test_a_log_not_written_yet_reads_empty_from_zero_only(tmp_path):
    assert read_chunk(tmp_path, 0, finished=False).text == ""
    with pytest.raises(BadOffset, match="nothing written yet"):
        read_chunk(tmp_path, 5, finished=False)


def test_a_follower_reads_a_big_log_in_bounded_pieces_and_its_final_read_gets_the_rest(tmp_path):
    # Given a log of about four chunks, each line with its timestamp
    writer = LogWriter(tmp_path)
    lines = [f"{i:06d} " + "x" * 1000 for i in range(4 * CHUNK_BYTES // 1000)]
    for line in lines:
        writer.write(line.encode())
    writer.close()

    # When `air logs --follow` reads it once, Then it holds at most one chunk of it
    cursor = LogCursor(tmp_path)
    first = cursor.read()
    assert 0 < sum(len(item.line) + 1 for item in first) <= CHUNK_BYTES
    # And once the attempt ended, its final read gives every line left, in order, each with its timestamp
    rest = cursor.read(final=True)
    assert [item.line for item in first + rest] == lines
    assert all(item.ts is not None for item in first + rest)
