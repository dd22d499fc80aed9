"""The one reader of files that other processes append to: whole lines as they come, never a cut character."""

from __future__ import annotations

from jupyter_air.growing import GrowingFile, line_text


def test_lines_come_whole_as_the_file_grows_and_the_unfinished_one_only_at_the_end(tmp_path):
    # Given a file not written yet, then written in pieces: a "█" cut between two writes, a "\r" inside a line
    path = tmp_path / "rank_0.log"
    reader = GrowingFile(path)
    seen = [reader.lines()]
    bar = "█".encode()
    for piece in (b"epoch 1\nprogress " + bar[:1], bar[1:] + b"\r50%\nlast line wit", b"hout newline"):
        with open(path, "ab") as f:
            f.write(piece)
        seen.append([line_text(line) for line in reader.lines()])
    # When it is read a last time
    seen.append([line_text(line) for line in reader.lines(final=True)])
    # Then each line came once, whole, when its newline was written; the unfinished one at the final read
    assert seen == [[], ["epoch 1"], ["progress █\r50%"], [], ["last line without newline"]]
    assert reader.lines(final=True) == []


def test_a_bounded_read_catches_up_over_several_reads_and_keeps_an_invalid_byte_visible(tmp_path):
    # Given a file of 100 lines, one holding an invalid byte, read 64 bytes at a time
    path = tmp_path / "output.log"
    path.write_bytes(b"".join(b"line %02d\n" % i for i in range(99)) + b"bad \xff byte\n")
    reader = GrowingFile(path, max_bytes=64)
    # When it is read until nothing is new
    lines, reads = [], 0
    while batch := reader.lines(final=True):
        lines += batch
        reads += 1
    # Then every line came, in order, over many reads; the invalid byte shows as U+FFFD
    assert [line_text(line) for line in lines] == [f"line {i:02d}" for i in range(99)] + ["bad \ufffd byte"]
    assert reads > 10
