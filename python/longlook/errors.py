"""One error type for everything a user can get wrong: it says what and how to fix it."""


class LonglookError(Exception):
    """A problem the user can fix; `hint` says how. The CLI prints both and exits 2."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


class Terminated(SystemExit):
    """SIGTERM or SIGHUP arrived: unwinds like Ctrl-C (every `with` closes, every finished run
    is kept), and exits 128 + the signal number if nobody catches it."""

    def __init__(self, signum: int):
        super().__init__(128 + signum)
        self.signum = signum


TEXT_LIMIT = 4 << 20  # a scenario or link profile; far beyond any real one, and quick to read
TRACE_LIMIT = 256 << 20  # a mahimahi trace: one line per packet opportunity, hours at 1 Gbit/s


def read_user_bytes(path, what: str, example: str, limit: int = TEXT_LIMIT) -> bytes:
    """A file the user named, as bytes: only a regular file (a FIFO or /dev/zero would block
    or never end) and at most `limit` bytes; anything else is one clear error naming `what`."""
    import os
    import stat

    try:  # O_NONBLOCK: opening a FIFO with no writer must not wait
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise LonglookError(f"{path}: no such {what}", hint=f"check the path, e.g. {example}") from None
    except IsADirectoryError:
        raise LonglookError(f"{path}: is a directory, not a {what}", hint=f"give a file, e.g. {example}") from None
    except OSError as e:
        raise LonglookError(f"{path}: cannot read the {what} ({e.strerror})") from None
    st = os.fstat(fd)
    if stat.S_ISDIR(st.st_mode):
        os.close(fd)
        raise LonglookError(f"{path}: is a directory, not a {what}", hint=f"give a file, e.g. {example}")
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(st.st_mode):
            raise LonglookError(
                f"{path}: not a regular file (a device, FIFO or socket), not a {what}",
                hint=f"give a file on a disk, e.g. {example}",
            )
        if st.st_size > limit:
            raise LonglookError(
                f"{path}: {st.st_size:,} bytes, more than a {what} may hold ({limit:,})",
                hint=f"is this the right file? e.g. {example}",
            )
        try:
            data = f.read(limit + 1)
        except OSError as e:
            raise LonglookError(f"{path}: cannot read the {what} ({e.strerror})") from None
    if len(data) > limit:  # it grew while read
        raise LonglookError(f"{path}: more than {limit:,} bytes, more than a {what} may hold")
    return data


def read_user_text(path, what: str, example: str, limit: int = TEXT_LIMIT) -> str:
    """A file the user named (scenario, link profile, trace), as UTF-8 text; anything that
    makes it not one (missing, a directory, a device, too large, not UTF-8) is one clear
    error naming `what`."""
    data = read_user_bytes(path, what, example, limit)
    try:
        return data.decode()
    except UnicodeDecodeError as e:
        raise LonglookError(
            f"{path}: not UTF-8 text ({e.reason} at byte {e.start})", hint=f"a {what} is a text file, e.g. {example}"
        ) from None


_NO_FILES = ("proc", "sys", "dev")  # pseudo file systems: nothing written there is kept


def check_output(path, option: str, *, directory: bool = False, suffixes: tuple[str, ...] = ()):
    """An output path (`--out`, `--json`, `--plot`, ...) checked before any work starts: not a
    directory where a file is wanted (or the reverse), not under a regular file, not a device
    or FIFO, a known extension, and a place this process can write to. Returns it as a Path."""
    import os
    from pathlib import Path

    p = Path(path)
    say = f"{option} {p}"
    if suffixes and p.suffix.lower() not in suffixes:
        raise LonglookError(
            f"{say}: unknown extension {p.suffix or '(none)'!r}", hint=f"end the name in {', '.join(suffixes)}"
        )
    try:
        resolved = p.resolve()
    except (OSError, RuntimeError) as e:  # a symlink loop
        raise LonglookError(f"{say}: cannot resolve the path ({e})") from None
    if resolved.parts[1:2] in tuple((d,) for d in _NO_FILES):
        raise LonglookError(
            f"{say}: under /{resolved.parts[1]}, which holds no files", hint="give a path on a disk, e.g. results/NAME"
        )
    if p.exists():
        if directory and not p.is_dir():
            raise LonglookError(f"{say}: is a file, not a directory", hint="give a new or existing directory")
        if not directory and p.is_dir():
            raise LonglookError(f"{say}: is a directory, not a file", hint=f"give a file name, e.g. {p / 'out'}")
        if not directory and not p.is_file():
            raise LonglookError(f"{say}: not a regular file (a device or FIFO)", hint="give a file name on a disk")
    existing = next(a for a in (resolved, *resolved.parents) if a.exists())
    if existing != resolved and not existing.is_dir():
        raise LonglookError(f"{say}: is under {existing}, which is a file", hint="give a path in a directory")
    if not os.access(existing, os.W_OK | (os.X_OK if existing.is_dir() else 0)):
        raise LonglookError(
            f"{say}: cannot write to {existing} (permission denied)", hint="give a place you can write to"
        )
    return p


def check_range(
    option: str, value, low=None, high=None, *, low_open: bool = False, high_open: bool = False, hint: str | None = None
):
    """A number the user gave, within [low, high] (an open end excludes it); NaN and
    infinities never pass. Returns the value."""
    import math

    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value < high if high_open else value <= high
    if not ok:
        lo = "" if low is None else f"{'>' if low_open else '>='} {low:g}"
        hi = "" if high is None else f"{'<' if high_open else '<='} {high:g}"
        want = " and ".join(x for x in (lo, hi) if x) or "a finite number"
        raise LonglookError(f"{option}: must be {want}, got {value!r}", hint=hint)
    return value
