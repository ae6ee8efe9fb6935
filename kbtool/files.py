"""File chores shared by every stage: atomic writes, where in a YAML file a parse error is, and reading spec and
known-differences files that may be hostile (bounded size, bounded YAML, one-line problems)."""

import contextlib
import errno
import os
import re
import stat
import tempfile
import time
from typing import TYPE_CHECKING, Any, Dict, Iterable, Iterator, List, Optional, Tuple, Union

import yaml

from kbtool.errors import KbtoolError


def write_atomic(path: str, text: Union[str, bytes]) -> None:
    """Write `text` (str as UTF-8, or bytes) to `path` so that readers see the old file or the new one, never half
    of either.

    The temporary file gets a unique name beside the target (mkstemp: never a fixed name that another
    process, or a symlink planted there, could share) and replaces it in one rename. A write cut short (a full
    disk, `ulimit -f`: EFBIG) is an OSError and leaves the target as it was.
    """
    path = os.path.realpath(path)  # a symlinked file is updated where it lives; the link stays
    try:
        mode_now = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        mode_now = None
    if mode_now is not None and not stat.S_ISREG(mode_now):  # a link to /dev/zero must not replace the device
        raise OSError(errno.EINVAL, f"not a regular file ({_file_kind(mode_now)})", path)
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    mode = _mode_for(path)
    data = text.encode("utf-8") if isinstance(text, str) else text
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    try:
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _write_all(fd: int, data: bytes) -> None:
    """Every byte of `data` to `fd`: os.write may write part of it (it then says how much); a write that makes no
    progress is an OSError, never a silent short file."""
    view = memoryview(data)
    while view:
        count = os.write(fd, view)
        if count <= 0:
            raise OSError(errno.EIO, "short write")
        view = view[count:]


def refuse_output_over_input(outputs: Iterable[Optional[str]], inputs: Iterable[Optional[str]]) -> None:
    """A one-line KbtoolError when a file a command would write is also one it reads (the same real path, through a
    symlink too, or a hard link to it): writing it would replace the input before, or while, it is read. Called
    before anything is written. None among either is skipped (an option not given)."""
    read: Dict[str, str] = {}
    for name in inputs:
        if name:
            read.setdefault(os.path.realpath(name), name)
    for out in outputs:
        if not out:
            continue
        real = os.path.realpath(out)
        same = read.get(real) or next((name for name in read.values() if _same_file(out, name)), None)
        if same is not None:
            said = "" if same == out else f" (as {same})"
            raise KbtoolError(f"{out} is also an input of this command{said}: write the output to another file")


def refuse_missing_folder(path: str, flag: str = "-o") -> None:
    """A one-line KbtoolError when the folder `path` would be written in does not exist: a typo'd -o is refused,
    never a tree of folders made (as root, anywhere). Every command's -o follows this rule."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(folder):
        return
    if os.path.lexists(folder) or any(os.path.isfile(p) for p in _parents(folder)):
        raise KbtoolError(f"{flag} {path}: {_nearest_file(folder)} is a file, not a folder")
    raise KbtoolError(f"{flag} {path}: no folder {folder}; create it first")


def _parents(folder: str) -> List[str]:
    """`folder` and the folders above it, nearest first."""
    out = [folder]
    while os.path.dirname(out[-1]) != out[-1]:
        out.append(os.path.dirname(out[-1]))
    return out


def _nearest_file(folder: str) -> str:
    """The first of `folder` and its parents that exists (a file where a folder of the path should be)."""
    return next((p for p in _parents(folder) if os.path.lexists(p)), folder)


def _same_file(one: str, other: str) -> bool:
    """Whether two existing paths are one file (hard links); False when either is missing or unreadable."""
    try:
        return os.path.samefile(one, other)
    except (OSError, ValueError):
        return False


LOCK_WAIT_SECONDS = 60.0  # how long a run waits for another run's update of the same file


@contextlib.contextmanager
def locked(path: str, what: str = "") -> Iterator[None]:
    """Hold an exclusive lock for a read-modify-write of `path` (a known-differences or history file another run
    may update at once): read the file inside it, write it (atomically) inside it.

    The lock is fcntl.flock on a sidecar `PATH.lock` beside the real file, never on the file itself: an atomic
    write replaces the file, and a lock on the replaced inode would not stop a run that opens the new one. A lock
    not had within LOCK_WAIT_SECONDS is a one-line KbtoolError."""
    import fcntl

    what = what if not what or what.endswith(" ") else what + " "
    lock_path = os.path.realpath(path) + ".lock"
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
    except (OSError, ValueError) as exc:
        raise KbtoolError(f"cannot lock {what}{path}: {lock_path}: {getattr(exc, 'strerror', None) or exc}")
    try:
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise KbtoolError(
                        f"{what}{path} is being updated by another run ({lock_path} held for "
                        f"{LOCK_WAIT_SECONDS:g} s); try again when it ends"
                    )
                time.sleep(0.05)
            except OSError as exc:  # a file system without locks (ENOLCK)
                raise KbtoolError(f"cannot lock {what}{path}: {lock_path}: {exc.strerror or exc}")
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _mode_for(path: str) -> int:
    """The permissions the written file gets: the old file's, else what a plain open() would give (mkstemp's
    temporary file is private, 0600)."""
    try:
        return os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def yaml_error(path: str, exc: BaseException, what: str = "not valid YAML") -> KbtoolError:
    """A one-line KbtoolError for a YAML parse error: `file:line: what (problem)`."""
    mark = getattr(exc, "problem_mark", None)
    where = f"{path}:{mark.line + 1}" if mark else path
    return KbtoolError("{}: {} ({})".format(where, what, getattr(exc, "problem", None) or exc))


# ---------------------------------------------------------------------------------------------------------------------
# Reading spec and known-differences files that may be hostile: bounded bytes, bounded YAML, one-line problems.

MAX_FILE_BYTES = 20 * 1024 * 1024  # a YAML file kbtool reads (the shipped spec is 0.2 MB)
MAX_YAML_NODES = 150000  # values once aliases are expanded (the shipped spec: 28,500): ~3 s to validate at most
MAX_YAML_DEPTH = 50  # nesting levels (the shipped spec: 12); bounds recursion in every later stage
QUOTE_CHARS = 100  # how much of an offending text a message quotes
LINE_CHARS = 400  # the most a one-line message keeps

_LINE_BREAKS = re.compile("[\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]+")


class FileProblem(KbtoolError):
    """The file was read but its content is refused (too large, not UTF-8, not YAML, past a YAML limit)."""


def clip(text: object, limit: int = QUOTE_CHARS) -> str:
    """`text` cut to `limit` characters, saying how long it was."""
    text = str(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


def quote(value: object, limit: int = QUOTE_CHARS) -> str:
    """repr(value), cut to `limit` characters: how a message shows data from a file."""
    return clip(repr(value), limit)


def one_line(text: object, limit: int = LINE_CHARS) -> str:
    """A message as one line (line breaks become spaces) of at most about `limit` characters."""
    return clip(_LINE_BREAKS.sub(" ", str(text)), limit)


class Unreadable(Exception):
    """A file that cannot be read: an OS error (`reason`, its text) or not a regular file (`kind`: "a directory",
    "a FIFO", "a character device", ...). Each reader words it in its own message."""

    def __init__(self, reason: str = "", kind: str = "") -> None:
        super().__init__(reason or f"not a regular file ({kind})")
        self.reason, self.kind = reason, kind


def read_bytes(path: str, max_bytes: int) -> Optional[bytes]:
    """The bytes of the regular file `path`, at most `max_bytes` + 1 of them (more than `max_bytes`: the file is
    larger, and the rest is never read), or None when `path` does not exist.

    Every hostile file kbtool reads (a spec, known differences, a report, keras.json) comes through here: it is
    opened without blocking (a FIFO never waits for a writer) and only a regular file is read (a device such as
    /dev/zero never ends). Anything else is Unreadable."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise Unreadable(getattr(exc, "strerror", None) or str(exc))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise Unreadable(kind=_file_kind(mode))
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise Unreadable(exc.strerror or str(exc))
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_text(
    path: str, what: str = "", missing_ok: bool = False, max_bytes: int = MAX_FILE_BYTES, gzipped_ok: bool = False
) -> Optional[str]:
    """The UTF-8 text of the regular file `path`, read in at most `max_bytes` bytes.

    Returns None for a missing file when `missing_ok`. A file that cannot be opened or is not a regular file
    (a directory, a device such as /dev/zero, a FIFO: opened without blocking) is a KbtoolError
    `cannot read WHAT PATH: why`; one too large or not UTF-8 is a FileProblem naming the file (and line). With
    `gzipped_ok` a gzipped file (a report kept as a GPU machine's are) is read as its text, within the same bound.
    """
    what = what if not what or what.endswith(" ") else what + " "  # "bench report" reads as "bench report PATH"
    try:
        data = read_bytes(path, max_bytes)
    except Unreadable as exc:
        if exc.kind == _DIRECTORY:
            raise KbtoolError(f"cannot read {what}{path}: {os.strerror(errno.EISDIR)}")
        raise KbtoolError(f"cannot read {what}{path}: {exc}")
    if data is None:
        if missing_ok:
            return None
        raise KbtoolError(f"cannot read {what}{path}: {os.strerror(errno.ENOENT)}")
    if gzipped_ok and data[:2] == GZIP_MAGIC:
        data = _gunzip(path, data, max_bytes)
    if len(data) > max_bytes:
        raise FileProblem(
            "{}: larger than {}, the most kbtool reads from {}".format(
                path, _size(max_bytes), f"a {what.strip()} file" if what.strip() else "such a file"
            )
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileProblem("{}:{}: not UTF-8 text ({})".format(path, data.count(b"\n", 0, exc.start) + 1, exc.reason))


_DIRECTORY = "a directory"
GZIP_MAGIC = b"\x1f\x8b"


def _gunzip(path: str, data: bytes, max_bytes: int) -> bytes:
    """A gzipped file's bytes, decompressed up to one byte past `max_bytes` (the caller refuses more)."""
    import zlib

    try:
        return zlib.decompressobj(wbits=16 + zlib.MAX_WBITS).decompress(data, max_bytes + 1)
    except zlib.error as exc:
        raise FileProblem(f"{path}: not a readable gzip file ({exc})")


def _size(count: int) -> str:
    """A byte count in words: 20 MB, 1 GB, 1000 bytes."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if count >= size and count % size == 0:
            return f"{count // size} {unit}"
    return f"{count} bytes"


def _file_kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, _DIRECTORY),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return f"mode {stat.S_IFMT(mode):o}"


class YamlLimitError(yaml.YAMLError):
    """YAML data past one of kbtool's limits (size once aliases are expanded, depth, recursion)."""

    def __init__(self, problem: str, mark: Any) -> None:
        super().__init__(problem)
        self.problem, self.problem_mark = problem, mark


class _BoundedComposer(yaml.composer.Composer):
    """PyYAML's composer, counting what the document would be with every alias expanded.

    Aliases share one node, so composing them is cheap; what costs is every later walk (schema validation,
    duplicate keys, repr in a message), which sees each alias expanded: `a: &a [x, x]`, `b: &b [*a, *a]`, ...
    doubles per level (the "billion laughs"). Each node's expanded size is known once it is composed; an alias
    adds its target's. A document past MAX_YAML_NODES, nested past MAX_YAML_DEPTH, or with an alias inside the
    collection it names (recursive data) is refused where it happens, before anything walks it.
    This composer is Python over the C parser's events: it never recurses in C, which a deeply nested
    document crashes (libyaml's composer is recursive).
    """

    if TYPE_CHECKING:  # the parser mixed in beside it (C or Python) reads the events

        def check_event(self, *choices: Any) -> bool: ...
        def peek_event(self) -> Any: ...

    def compose_document(self) -> Optional[yaml.Node]:
        self._expanded, self._depth = 0, 0
        self._sizes: Dict[int, int] = {}
        return super().compose_document()

    def _grow(self, count: int, mark: Any, why: str) -> None:
        self._expanded += count
        if self._expanded > MAX_YAML_NODES:
            raise YamlLimitError(
                f"more than {MAX_YAML_NODES} values once aliases are expanded ({why}); kbtool refuses larger YAML data",
                mark,
            )

    def compose_node(self, parent: Optional[yaml.Node], index: Any) -> Optional[yaml.Node]:
        if self.check_event(yaml.events.AliasEvent):
            event = self.peek_event()
            node = self.anchors.get(event.anchor)
            if node is not None:
                size = self._sizes.get(id(node))
                if size is None:  # the anchor's collection is still open: the alias is inside it
                    raise YamlLimitError(
                        f"alias *{clip(event.anchor, 40)} is inside the collection it names (recursive data is not "
                        "allowed)",
                        event.start_mark,
                    )
                self._grow(size, event.start_mark, f"alias *{clip(event.anchor, 40)} here")
            return super().compose_node(parent, index)  # an undefined alias: PyYAML's own error
        event = self.peek_event()
        if self._depth >= MAX_YAML_DEPTH:
            raise YamlLimitError(
                f"nested more than {MAX_YAML_DEPTH} levels deep; kbtool refuses deeper YAML data", event.start_mark
            )
        self._depth += 1
        before = self._expanded
        self._grow(1, event.start_mark, "no alias needed")
        node = super().compose_node(parent, index)
        self._depth -= 1
        self._sizes[id(node)] = self._expanded - before
        return node


class _JsonConstructor(yaml.constructor.SafeConstructor):
    """SafeConstructor for JSON-like data: timestamps stay strings (as written), and the types JSON cannot carry
    to a worker (!!binary, !!set, !!omap, !!pairs) are refused; an integer too long for Python (more than 4300
    digits) is a YAML error at its line, not a ValueError."""

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        try:
            return super().construct_yaml_int(node)
        except ValueError:  # Python's limit on the digits of an int read from text
            raise yaml.constructor.ConstructorError(
                None, None, f"integer too long ({len(node.value)} characters)", node.start_mark
            )

    def construct_timestamp_as_text(self, node: yaml.ScalarNode) -> Any:
        return self.construct_scalar(node)

    def construct_refused(self, node: yaml.Node) -> Any:
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f"{clip(node.tag, 60)} is not allowed: kbtool's YAML files hold plain JSON-like data",
            node.start_mark,
        )


# (types-PyYAML types add_constructor for its own loaders only)
_JsonConstructor.add_constructor("tag:yaml.org,2002:int", _JsonConstructor.construct_yaml_int)  # type: ignore[type-var]
_JsonConstructor.add_constructor("tag:yaml.org,2002:timestamp", _JsonConstructor.construct_timestamp_as_text)  # type: ignore[type-var]
for _tag in ("binary", "set", "omap", "pairs"):
    _JsonConstructor.add_constructor("tag:yaml.org,2002:" + _tag, _JsonConstructor.construct_refused)  # type: ignore[type-var]

try:  # the C parser is ~10x faster than PyYAML's; the composer above runs on its events
    from yaml._yaml import CParser as _Parser

    class BoundedLoader(_BoundedComposer, _Parser, _JsonConstructor, yaml.resolver.Resolver):
        """A safe YAML loader that refuses data past kbtool's limits (see _BoundedComposer)."""

        def __init__(self, stream: str) -> None:
            _Parser.__init__(self, stream)
            _BoundedComposer.__init__(self)
            _JsonConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)
except ImportError:  # pragma: no cover - PyYAML built without libyaml

    class BoundedLoader(  # type: ignore[no-redef]
        _BoundedComposer,
        yaml.reader.Reader,
        yaml.scanner.Scanner,
        yaml.parser.Parser,
        _JsonConstructor,
        yaml.resolver.Resolver,
    ):
        """A safe YAML loader that refuses data past kbtool's limits (see _BoundedComposer)."""

        def __init__(self, stream: str) -> None:
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)
            _BoundedComposer.__init__(self)
            _JsonConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)


def parse_yaml(path: str, text: str, what: str = "not valid YAML") -> Tuple[Optional[yaml.Node], Any]:
    """(root node, data) of one YAML document within kbtool's limits; (None, None) when it is empty.

    Any problem is a one-line FileProblem: `file:line: what (problem)`, or `file:line: problem` for a limit."""
    loader = BoundedLoader(text)
    try:
        root = loader.get_single_node()
        data = None if root is None else loader.construct_document(root)
    except YamlLimitError as exc:
        raise FileProblem(one_line(f"{path}:{exc.problem_mark.line + 1}: {exc.problem}"))
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow; its position, not a mark
        before = text.encode("utf-8")[: exc.position] if exc.encoding == "?" else text[: exc.position]  # C: bytes
        raise FileProblem(
            one_line(
                "{}:{}: {} (character {} is not allowed: {})".format(
                    path,
                    (before.count(b"\n") if isinstance(before, bytes) else before.count("\n")) + 1,
                    what,
                    f"#x{exc.character:04x}" if isinstance(exc.character, int) else repr(exc.character),
                    exc.reason,
                )
            )
        )
    except yaml.YAMLError as exc:
        raise FileProblem(one_line(yaml_error(path, exc, what)))
    except RecursionError:  # pragma: no cover - the depth limit keeps far from it
        raise FileProblem(f"{path}: {what} (nested too deep)")
    finally:
        loader.dispose()
    return root, data
