"""An asyncio event loop on a simulated clock, for driving a library's timers in tests.

The loop's ``time()`` moves only when every task waits: where the real loop would block in
its selector until the next timer, this one moves its clock to that timer and goes on, so
a run of minutes of timers and sleeps takes milliseconds. (The looptime package does the
same, but its pytest plugin fails every test that uses a fixture when pytest-asyncio is not
installed, so the suite carries these few lines instead.)
"""

from __future__ import annotations

import asyncio
import selectors


class _Selector(selectors.DefaultSelector):
    """The loop's selector: never blocks, and moves the clock by the time it would have waited."""

    def __init__(self, loop: VirtualClockLoop):
        super().__init__()
        self.loop = loop

    def select(self, timeout=None):
        if timeout is None:
            raise RuntimeError("the virtual clock's loop would wait forever: nothing is scheduled")
        if timeout > 0:
            self.loop.now += timeout
        return super().select(0)


class VirtualClockLoop(asyncio.SelectorEventLoop):
    """An event loop whose time (seconds, from ``start``) is simulated."""

    def __init__(self, start: float = 0.0):
        self.now = float(start)
        super().__init__(_Selector(self))

    def time(self) -> float:
        return self.now
