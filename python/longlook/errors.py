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


def read_user_text(path, what: str, example: str) -> str:
    """A file the user named (scenario, link profile), as text; anything that makes it not
    one (missing, a directory, not UTF-8, unreadable) is one clear error naming `what`."""
    from pathlib import Path

    try:
        return Path(path).read_text()
    except FileNotFoundError:
        raise LonglookError(f"{path}: no such {what}", hint=f"check the path, e.g. {example}") from None
    except IsADirectoryError:
        raise LonglookError(f"{path}: is a directory, not a {what}",
                            hint=f"give a .toml file, e.g. {example}") from None
    except UnicodeDecodeError as e:
        raise LonglookError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})",
                            hint=f"a {what} is a TOML text file") from None
    except OSError as e:
        raise LonglookError(f"{path}: cannot read the {what} ({e.strerror})") from None
