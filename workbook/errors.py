"""One error type for expected mistakes in the user's input (scenario files, catalogs, CLI args).

The CLI prints ``str(err)`` as one line per problem and exits 2, with no traceback."""


class InputError(ValueError):
    """Bad input: the message names the file, the field and what was expected."""

    def __init__(self, message: str, problems: list[str] | None = None):
        self.problems = problems or [message]
        super().__init__("\n".join(self.problems))
