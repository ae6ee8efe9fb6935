"""File chores shared by every stage: atomic writes, and where in a YAML file a parse error is."""
import os
import tempfile

from .errors import KbtoolError


def write_atomic(path, text):
    """Write `text` to `path` so that readers see the old file or the new one, never half of either.

    The temporary file gets a unique name beside the target (mkstemp: never a fixed name that another
    process, or a symlink planted there, could share) and replaces it in one rename.
    """
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def yaml_error(path, exc, what="not valid YAML"):
    """A one-line KbtoolError for a YAML parse error: `file:line: what (problem)`."""
    mark = getattr(exc, "problem_mark", None)
    where = "{}:{}".format(path, mark.line + 1) if mark else path
    return KbtoolError("{}: {} ({})".format(where, what, getattr(exc, "problem", None) or exc))
