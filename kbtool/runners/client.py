"""Controller side of a worker: start it, send requests, survive its crashes and hangs.

A crash (segfault, abort, exit) or a timeout costs only the request in flight: it comes back
as a `crash`/`timeout` reply, the process is discarded, and the next request starts a new one.

`kill()` may be called from any thread (the check command's signal handler calls it): it kills the worker's
process group, the request in flight returns a `cancelled` reply at once, and the client starts no worker again.

Only kbtool/runners/session.py makes clients (tests/test_layering.py holds it so). Each worker runs in a scratch directory
of its own (a backend that writes or deletes files in its cwd never touches the user's), and is told the controller's
pid: its watchdog kills its process group when the controller dies, by SIGKILL too (worker/main.py).
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from typing import IO, Any, List, Mapping, Optional

from kbtool.runners import messages as protocol
from kbtool.runners.messages import CANCELLED, Hello, Reply, Request

DEFAULT_START_TIMEOUT = 180.0  # TensorFlow imports in ~5 s; a cold Theano/CNTK start is slower
DEFAULT_CASE_TIMEOUT = 120.0  # Theano compiles each new graph once; later runs hit its cache
TAIL_BYTES = 64 * 1024  # a dead worker's last words: read from the end of its output, never the whole file
_POLL = 0.1  # how often a blocked read looks whether the client was killed
LIMIT_BYTES = 4000  # read at most 4 × this of what a worker printed during one request (then cut to characters)


class WorkerDied(Exception):
    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


SCRATCH_PREFIX = "kbtool-worker-"  # a worker's working directory in TMPDIR, removed when it stops
STALE_SECONDS = 24 * 3600.0  # one left by a controller killed with -9: removed by a later run once this old
_swept = False


def remove_stale_scratch(root: Optional[str] = None, now: Optional[float] = None) -> List[str]:
    """Remove the workers' working directories a killed controller left in `root` (TMPDIR): only directories (never
    a link) named kbtool-worker-*, owned by this user, untouched for STALE_SECONDS. Returns those removed."""
    root = root or tempfile.gettempdir()
    now = time.time() if now is None else now
    removed = []
    try:
        names = [n for n in os.listdir(root) if n.startswith(SCRATCH_PREFIX)]
    except OSError:
        return []
    for name in names:
        path = os.path.join(root, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and now - info.st_mtime > STALE_SECONDS:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


class WorkerClient:
    def __init__(
        self,
        launch: Any,  # runners.base.Launch
        start_timeout: float = DEFAULT_START_TIMEOUT,
        case_timeout: float = DEFAULT_CASE_TIMEOUT,
        keras_config: Optional[Mapping[str, Any]] = None,
    ) -> None:
        self.launch = launch
        self.keras_config = keras_config  # the settings of the worker's keras.json (None: the documented defaults)
        self.start_timeout, self.case_timeout = start_timeout, case_timeout
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.hello: Optional[Hello] = None
        self.restarts = 0
        self._stderr: Optional[IO[bytes]] = None
        self._scratch: Optional[str] = None  # the worker's working directory, removed when it stops
        self.start_output = ""  # what the worker printed while it started
        self._started_at = 0  # where its output after start-up begins: a crash's tail never quotes start-up logs
        self._lock = threading.RLock()  # guards process creation against kill() from another thread
        self._procs: List[subprocess.Popen[bytes]] = []  # every worker started and not yet reaped: what kill() kills
        self.killed = False

    # -- process lifecycle -------------------------------------------------------------
    def start(self) -> Hello:
        """Start the worker and return its hello message (status ready or broken)."""
        with self._lock:
            if self.killed:
                self.hello = {"status": protocol.BROKEN, "error": "cancelled"}
                return self.hello
            self._close_stderr()  # a restarted worker's predecessor wrote to its own file
            self._stderr = tempfile.TemporaryFile()
            self._started_at = 0
            global _swept
            if not _swept:  # once a run: what a controller killed with -9 left behind
                _swept = True
                remove_stale_scratch()
            self._scratch = self._scratch or tempfile.mkdtemp(prefix=SCRATCH_PREFIX)
            env = dict(self.launch.environ(self.keras_config), KBTOOL_CONTROLLER_PID=str(os.getpid()))
            try:
                self.proc = subprocess.Popen(
                    self.launch.argv(),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=self._stderr,
                    env=env,
                    cwd=self._scratch,
                    start_new_session=True,
                )
            except OSError as exc:  # its interpreter is gone (a removed pyenv version), not executable, ...
                self.hello = {"status": protocol.BROKEN, "error": f"cannot start the worker: {exc}"}
                self.proc = None
                return self.hello
            self._procs.append(self.proc)
        try:
            self.hello, _ = self._read(self.start_timeout)
        except WorkerDied as died:
            self.hello = {"status": protocol.BROKEN, "error": "cancelled" if self.killed else died.message}
        self.start_output = self._output_since(0)  # TensorFlow's and Theano's import chatter, a failed import's
        self._started_at = self._output_mark()
        self.hello = not_its_pins(self.launch, self.hello)
        if self.hello.get("status") != protocol.READY:
            self.stop()
        return self.hello

    def ensure_started(self) -> Hello:
        if self.proc is None or self.proc.poll() is not None:
            if self.hello is not None:
                self.restarts += 1
                self._remove_scratch()  # the dead worker's (killed with -9: it removed nothing); the next gets its own
            self.start()
        assert self.hello is not None
        return self.hello

    def stop(self) -> None:
        if self.proc is None:
            self._close_stderr()
            self._remove_scratch()
            return
        if self.killed:
            self._kill()
        elif self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(Request("exit").encode())
                self.proc.stdin.flush()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired, ValueError):
                self._kill()
        _killpg_after_exit(self.proc)
        self._forget(self.proc)
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        self.proc = None
        self._close_stderr()
        self._remove_scratch()

    def _remove_scratch(self) -> None:
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def _kill(self) -> None:
        if self.proc is None:
            return
        _killpg(self.proc)
        self.proc.wait()
        self._forget(self.proc)

    def _forget(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            if proc in self._procs:
                self._procs.remove(proc)

    def kill(self) -> None:
        """Kill every worker process group of this client, from any thread (a signal handler included), and
        start none again: a request blocked on the worker returns a `cancelled` reply within a moment."""
        with self._lock:
            self.killed = True
            for proc in list(self._procs):
                _killpg(proc)

    # -- requests ------------------------------------------------------------------------
    def request(self, request: Request) -> Reply:
        """Send one request. Crash/timeout come back as statuses, and a request the client was killed during (or
        before) as `cancelled`."""
        if self.killed:
            return _cancelled()
        hello = self.ensure_started()
        if self.killed:
            return _cancelled()
        if hello.get("status") != protocol.READY or self.proc is None:
            return Reply.failure(protocol.UNAVAILABLE, "worker could not start: {}".format(hello.get("error")))
        mark = self._output_mark()
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(request.encode())
            self.proc.stdin.flush()
            reply = self._read(request.timeout or self.case_timeout)
        except (OSError, ValueError, WorkerDied) as exc:  # BrokenPipe, or a pipe closed under a killed worker
            if self.killed:
                self._reap()
                return _cancelled()
            if not isinstance(exc, (BrokenPipeError, WorkerDied)):
                raise
            died = exc if isinstance(exc, WorkerDied) else self._death()
            self.proc = None  # dead or killed; the next request starts a fresh worker
            self._remove_scratch()  # and its working directory: a worker killed with -9 leaves it otherwise
            # what it said before it died (an abort's message, a C++ check)
            return Reply.failure(died.status, died.message, self._output_since(mark) or None)
        if self.killed:  # the reply raced the kill: the check is over, drop it
            self._reap()
            return _cancelled()
        printed = self._output_since(mark)
        if printed:  # what the backend printed or warned while it ran this request: the result keeps it
            reply = reply.with_captured(printed)
        return reply

    def _reap(self) -> None:
        if self.proc is not None:
            self._kill()

    def _read(self, timeout: float) -> Reply:
        deadline = time.monotonic() + timeout

        def read_exact(n: int) -> bytes:
            return self._read_exact(n, deadline, timeout)

        try:
            # the worker's reader (Python 3.6, untyped): the one reader of the wire format
            return Reply.from_wire(*protocol.wire.read_message_with(read_exact))  # type: ignore[no-untyped-call]
        except (ValueError, UnicodeDecodeError) as exc:  # JSON, .npy or framing garbage on the protocol pipe
            self._kill()
            if self.killed:
                raise WorkerDied(CANCELLED, "cancelled")
            raise WorkerDied(
                protocol.CRASH,
                f"worker sent an unreadable reply ({type(exc).__name__}: {str(exc)[:200]}); worker killed",
            )

    def _read_exact(self, n: int, deadline: float, timeout: float) -> bytes:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        chunks = []
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while n:
                if self.killed:
                    self._kill()
                    raise WorkerDied(CANCELLED, "cancelled")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self._kill()
                    raise WorkerDied(protocol.TIMEOUT, f"no answer within {timeout:g} s; worker killed")
                if not sel.select(min(remaining, _POLL)):
                    continue
                chunk = os.read(fd, min(n, 1 << 20))
                if not chunk:
                    if self.killed:
                        self._kill()
                        raise WorkerDied(CANCELLED, "cancelled")
                    raise self._death()
                chunks.append(chunk)
                n -= len(chunk)
        return b"".join(chunks)

    def _death(self) -> WorkerDied:
        assert self.proc is not None
        code = self.proc.wait()
        _killpg_after_exit(self.proc)
        self._forget(self.proc)
        how = f"killed by signal {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
        tail = self.stderr_tail()
        return WorkerDied(protocol.CRASH, "worker {}{}".format(how, ": " + tail if tail else ""))

    # The worker's stdout (fd 1, pointed at its stderr: worker/main.py) and stderr go to one temporary file, never
    # to kbtool's terminal; what one request added to it is that request's output.
    def _output_mark(self) -> int:
        if self._stderr is None:
            return 0
        try:
            return self._stderr.seek(0, 2)
        except (OSError, ValueError):
            return 0

    def _output_since(self, mark: int) -> str:
        """What the worker wrote from offset `mark` on (cut to capture.LIMIT characters), or ""."""
        from kbtool.capture import cut

        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(mark)
            data = self._stderr.read(4 * LIMIT_BYTES)
            end = self._stderr.seek(0, 2)
        except (OSError, ValueError):
            return ""
        text = data.decode("utf-8", "replace").strip()
        more = end - mark - len(data)
        return cut(text) + (f" (and {more} more bytes)" if more > 0 else "") if text else ""

    def _close_stderr(self) -> None:
        if self._stderr is not None:
            try:
                self._stderr.close()
            except OSError:
                pass
            self._stderr = None

    def stderr_tail(self, lines: int = 3) -> str:
        """The last lines the worker wrote since it started (read from the last TAIL_BYTES: a worker may have written
        gigabytes); what it printed while starting is start_output's (the report's, the start-up log's), not this."""
        if self._stderr is None:
            return ""
        end = self._stderr.seek(0, 2)
        self._stderr.seek(max(self._started_at, end - TAIL_BYTES))
        text = self._stderr.read(TAIL_BYTES).decode("utf-8", "replace").strip().splitlines()
        self._stderr.seek(0, 2)
        keep = [line.strip() for line in text if line.strip()][-lines:]
        return " | ".join(keep)[:500]


def not_its_pins(launch: Any, hello: Hello) -> Hello:
    """`hello`, or a broken one when a release's worker reports other versions than its name pins (its env's lock or
    base changed under it): its results would be another release's under this one's name."""
    pins = getattr(launch, "pins", None)
    if not pins or hello.get("status") != protocol.READY:
        return hello
    from kbtool.runners.names import Release

    wrong = Release("", tuple(sorted(pins.items()))).mismatches(hello.get("versions") or {})
    if not wrong:
        return hello
    return {
        "status": protocol.BROKEN,
        "python": hello.get("python"),
        "error": "{}: its env imports {}; not run under its name (`kbtool env install '{}' --force` rebuilds "
        "it)".format(launch.backend, ", ".join(wrong), launch.backend),
    }


def _killpg(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group a worker leads (start_new_session: its pid is the group's id), unless reaped."""
    if proc.returncode is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _killpg_after_exit(proc: subprocess.Popen[bytes]) -> None:
    """Whatever a worker started in its process group goes with it (the group outlives its leader)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _cancelled() -> Reply:
    return Reply.failure(CANCELLED, "cancelled: the check was interrupted")
