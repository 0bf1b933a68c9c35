"""One error type for everything a user can get wrong: it says what and how to fix it."""


class LonglookError(Exception):
    """A problem the user can fix; `hint` says how. The CLI prints both and exits 2."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"
