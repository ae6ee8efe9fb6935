"""File chores shared by every stage: atomic writes, and where in a YAML file a parse error is."""
import os
import tempfile

from .errors import KbtoolError


def write_atomic(path, text):
    """Write `text` to `path` so that readers see the old file or the new one, never half of either.

    The temporary file gets a unique name beside the target (mkstemp: never a fixed name that another
    process, or a symlink planted there, could share) and replaces it in one rename.
    """
    path = os.path.realpath(path)  # a symlinked file is updated where it lives; the link stays
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    mode = _mode_for(path)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _mode_for(path):
    """The permissions the written file gets: the old file's, else what a plain open() would give (mkstemp's
    temporary file is private, 0600)."""
    try:
        return os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def yaml_error(path, exc, what="not valid YAML"):
    """A one-line KbtoolError for a YAML parse error: `file:line: what (problem)`."""
    mark = getattr(exc, "problem_mark", None)
    where = "{}:{}".format(path, mark.line + 1) if mark else path
    return KbtoolError("{}: {} ({})".format(where, what, getattr(exc, "problem", None) or exc))
