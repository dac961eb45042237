"""Progress of long reads on stderr: lines, bytes, rate and time left.

A :class:`ProgressMeter` is told how far a read has got (bytes of a file or a
directory, lines, files) and passes a message to its ``say`` callback at most
once every :data:`EVERY_S` seconds, and never for work that ends sooner: a small
file says nothing, a 10 GB log or a directory of 10,000 files says how far it
is, how fast it goes and when it should end (from the bytes done and left).
"""

import time
from collections.abc import Callable

#: Seconds between two progress messages (and before the first).
EVERY_S = 2.0


def _size(n_bytes: float) -> str:
    """``812 MB``, ``1.18 GB``: decimal units, as ``ls -h --si`` and disks count."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n_bytes >= scale:
            value = n_bytes / scale
            return f"{value:.2f} {unit}" if value < 10 else f"{value:.0f} {unit}"
    return f"{n_bytes:.0f} B"


def _eta(seconds: float) -> str:
    """``45 s``, ``3 min 20 s``, ``2 h 05 min``."""
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class ProgressMeter:
    """Throttled progress of one read (a file, or a directory of files).

    Parameters
    ----------
    say : callable or None
        Gets each message (one line, no trailing newline); None: silent.
    what : str
        Names the read in each message (a file or directory name).
    total_bytes : int, optional
        Bytes the read will cover, when known (a plain file's size, the sum
        of a directory's files): gives the share done and the time left.
    total_files : int, optional
        Files the read will cover (a directory).
    clock : callable, default time.monotonic
        Seconds (tests pass a fake clock).
    """

    def __init__(
        self,
        say: Callable[[str], None] | None,
        what: str,
        *,
        total_bytes: int | None = None,
        total_files: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.say = say
        self.what = what
        self.total_bytes = total_bytes
        self.total_files = total_files
        self.clock = clock
        self.start = clock()
        self.last = self.start
        self.n_said = 0

    def update(self, *, n_bytes: int, n_lines: int, n_files: int | None = None) -> None:
        """Say how far the read is, if :data:`EVERY_S` passed since the last time."""
        if self.say is None:
            return
        now = self.clock()
        if now - self.last < EVERY_S:
            return
        self.last = now
        self.n_said += 1
        took = max(now - self.start, 1e-9)
        parts = []
        if n_files is not None and self.total_files:
            parts.append(f"{n_files:,}/{self.total_files:,} files")
        parts.append(f"{n_lines:,} lines")
        if self.total_bytes:
            share = min(n_bytes / self.total_bytes, 1.0)
            parts.append(f"{_size(n_bytes)} of {_size(self.total_bytes)} ({share:.0%})")
        else:
            parts.append(_size(n_bytes))
        rate = f"{n_lines / took:,.0f} lines/s, {_size(n_bytes / took)}/s"
        left = ""
        if self.total_bytes and n_bytes:
            remaining = took * (self.total_bytes - n_bytes) / n_bytes
            left = f", about {_eta(max(remaining, 0.0))} left"
        self.say(f"{self.what}: {', '.join(parts)}; {rate}{left}")
