"""The tests' process handles SIGINT as a kernel does, and each test leaves its signal handling as it found it.

A test run started as a background job (``make test &``, a CI runner's shell) inherits SIGINT ignored, which Python
keeps: a call's interrupt tests then wait for an interrupt that never comes, so SIGINT gets Python's default
handler back here. A test whose code sets a SIGINT or SIGHUP handler in the process, or blocks one, errors naming
itself, and the handling is put back: otherwise every later test on that worker inherits it. (SIGTERM is left out:
every Jupyter server started in the process sets its own, as pytest-jupyter's do.)"""

from __future__ import annotations

import ctypes
import signal

import pytest

_LIBC = ctypes.CDLL(None, use_errno=True)

WATCHED = (signal.SIGINT, signal.SIGHUP)


def pytest_configure(config):
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _handling() -> dict:
    """Per signal: Python's handler, whether this thread blocks it, and the handler the kernel calls (a library in
    C may set one of its own beneath Python's)."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    return {s: (signal.getsignal(s), s in blocked, _kernel_handler(s)) for s in WATCHED}


def _kernel_handler(number: int) -> int:
    action = ctypes.create_string_buffer(256)  # a struct sigaction; its first field is the handler's address
    assert _LIBC.sigaction(number, None, action) == 0, ctypes.get_errno()
    return ctypes.c_void_p.from_buffer(action).value or 0


@pytest.fixture(autouse=True)
def signal_handling_left_alone():
    before = _handling()
    yield
    after = _handling()
    for number, (handler, blocked, _) in before.items():
        signal.signal(number, handler)
        if not blocked:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [number])
    changed = {s.name: (before[s], after[s]) for s in WATCHED if after[s] != before[s]}
    assert not changed, f"the test changed this process's signal handling (before, after): {changed}"
