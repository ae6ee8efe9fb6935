"""`python -m kbtool`: the same click CLI as the `kbtool` command."""

from .cli import main

if __name__ == "__main__":
    main(prog_name="kbtool")
