"""Errors that the CLI turns into a single line on stderr and exit code 2."""


class KbtoolError(Exception):
    """A user-facing error: bad input, bad config, bad spec. Never shown as a traceback."""

    exit_code = 2
