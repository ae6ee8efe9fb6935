"""Progress of a running check on stderr (stdout stays clean for --json): a line per backend every
`every` results or `seconds`, with its status counts and where it is."""
import collections
import threading
import time

import click


def printer(every=100, seconds=10.0, echo=None):
    echo = echo or (lambda line: click.echo(line, err=True))
    counts, last, lock = collections.defaultdict(collections.Counter), {}, threading.Lock()

    def progress(backend, result):
        with lock:
            tally = counts[backend]
            tally[str(result.status)] += 1
            done, now = sum(tally.values()), time.monotonic()
            if done % every == 0 or now - last.setdefault(backend, now) > seconds:
                last[backend] = now
                echo("  {:<11} {:>5} results ({})  at {} {}".format(
                    backend, done, ", ".join("{} {}".format(n, s) for s, n in sorted(tally.items())),
                    result.op, result.case))

    return progress
