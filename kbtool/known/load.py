"""Reading entries: a known-differences file (within kbtool/files.py's limits: a regular file, 20 MB, bounded YAML)
or a report's embedded `known_entries`, held to the rules (kbtool/known/rules.py); every problem is one line."""

from typing import TYPE_CHECKING, Any, Callable, List, Optional, Tuple, cast

from kbtool import files, paths
from kbtool.errors import KbtoolError
from kbtool.known.entry import KnownEntry, numbered
from kbtool.known.rules import Problem, alias_problems, numbered_problems

if TYPE_CHECKING:  # pragma: no cover
    from kbtool.specs.loader import Spec


def _one_line(text: Any) -> str:
    return cast(Callable[[Any], str], files.one_line)(text)  # (files.one_line is not annotated)


def _parse_yaml(path: str, text: str) -> Tuple[Any, Any]:
    return cast(Callable[[str, str], Tuple[Any, Any]], files.parse_yaml)(path, text)  # (not annotated)


def load(path: Optional[str] = None, spec: Optional["Spec"] = None) -> List[KnownEntry]:
    """The validated entries of a known-differences file (none when it does not exist)."""
    path = path or paths.known_differences_file()
    text = files.read_text(path, missing_ok=True)  # a one-line KbtoolError when it cannot be read
    if text is None:
        return []
    root, entries = _parse_yaml(path, text)  # a one-line KbtoolError (FileProblem) for bad YAML or data
    entries = [] if entries is None else entries
    problems = numbered_problems(entries, spec)
    if problems:
        number, first = problems[0]
        raise KbtoolError(_one_line(f"{_position(path, root, number)}: {first}{_more(problems)}"))
    return numbered(entries)


def from_report(dicts: Any, where: str) -> List[KnownEntry]:
    """The known_entries a report recorded, held to the same rules and limits as a file users write (and the
    spec's alias entries to the exact form kbtool writes them in); a one-line KbtoolError naming `where`."""
    if not isinstance(dicts, list) or not all(isinstance(e, dict) for e in dicts):
        raise KbtoolError(f"{where}: known_entries must be a list of entries")
    problems = alias_problems(dicts)
    if problems:
        raise KbtoolError(_one_line(f"{where}: known_entries: {problems[0][1]}{_more(problems)}"))
    return numbered(dicts)


def _more(problems: List[Problem]) -> str:
    return f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""


def _position(path: str, root: Any, number: Optional[int]) -> str:
    """file:line of entry `number` (counted from 1), or the file alone for a problem of the whole file."""
    nodes = getattr(root, "value", None)
    if number is None or not isinstance(nodes, list) or not 0 < number <= len(nodes):
        return path
    return f"{path}:{nodes[number - 1].start_mark.line + 1}"
