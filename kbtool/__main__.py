"""`python -m kbtool`: the same click CLI as the `kbtool` command."""

from kbtool.cli import run

if __name__ == "__main__":
    run()
