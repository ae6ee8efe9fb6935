"""The `kbtool spec` commands, which inspect and validate the spec (ops.yaml), its coverage and its K.* -> Keras 3
map."""

import json
import sys
from typing import TYPE_CHECKING, List, Optional, Tuple

import click

from kbtool import options
from kbtool.errors import KbtoolError
from kbtool.options import complete_op

if TYPE_CHECKING:
    from rich.console import Console

    from kbtool.specs.keras3_map import Row
    from kbtool.specs.loader import Spec
    from kbtool.specs.page import PageFacts


@click.group()
def spec() -> None:
    """Inspect and validate the spec (ops.yaml).

    \b
    Examples:
      kbtool spec list
      kbtool spec show batch_dot
      kbtool spec validate
    """


def _load_spec(path: Optional[str] = None) -> "Spec":
    """The spec at `path` (default: the shipped one); the loader (and yaml) imported only when a command runs."""
    from kbtool.specs import loader

    return loader.load(path)


@spec.command("list")
@options.SPEC
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON: one object per op.")
def spec_list(spec_path: Optional[str], as_json: bool) -> None:
    """List every op with its category and case counts.

    \b
    Examples:
      kbtool spec list
      kbtool spec list --json
    """
    from kbtool.specs.domains import grid_cases

    s = _load_spec(spec_path)
    rows = [
        {
            "op": name,
            "category": e["category"],
            "alias_of": e.get("alias_of"),
            "documented_in": e["documented_in"],
            "cases": len(e.get("cases", [])),
            "grid_cases": len(grid_cases(s, name)),
            "examples": len(e.get("examples", [])),
        }
        for name, e in sorted(s.ops.items())
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        alias = " (alias of {})".format(row["alias_of"]) if row["alias_of"] else ""
        click.echo(
            "{:<32} {:<10} cases={:<3} grid={:<3} examples={:<2} docs={}{}".format(
                row["op"],
                row["category"],
                row["cases"],
                row["grid_cases"],
                row["examples"],
                ",".join(row["documented_in"]),
                alias,
            )
        )
    click.echo(f"{len(rows)} functions")


@spec.command("show")
@click.argument("op", shell_complete=complete_op)
@options.SPEC
@click.option("--yaml", "as_yaml", is_flag=True, help="The spec's own text of the entry (YAML) instead of the page.")
@click.option("--json", "as_json", is_flag=True, help="The entry as JSON instead of the page.")
def spec_show(op: str, spec_path: Optional[str], as_yaml: bool, as_json: bool) -> None:
    """Show one op: its signature, summary, parameters, tolerances and cases as calls.

    The page fits the terminal (80 columns at least): each case is the call it makes, its inputs drawn with seed 0
    and summarised (shape, dtype, range); how many known differences name the op. --yaml prints the spec's entry.

    \b
    Examples:
      kbtool spec show batch_dot
      kbtool spec show conv2d --yaml
      kbtool spec show conv2d --json
    """
    from kbtool.reports.report import standard

    if as_yaml and as_json:
        raise KbtoolError("--yaml and --json are two spellings of the entry: give one")
    s = _load_spec(spec_path)
    entry = s.op(op)
    if as_json:  # standard JSON: a hard-value case's NaN or inf is spelt as a string, as in the report
        click.echo(json.dumps(standard({op: entry}), indent=2, default=repr, allow_nan=False))
        return
    if as_yaml:
        import yaml

        click.echo(yaml.safe_dump({op: entry}, sort_keys=False, allow_unicode=True))
        return
    _show_page(s, op)


def _show_page(s: "Spec", op: str) -> None:
    """`spec show OP`: the page (kbtool/specs/page.py) at the terminal's width."""
    import shutil

    from kbtool.specs import cases, page

    expanded = cases.cases_for(s, op)
    grid = [c for c in expanded if c.id.startswith("grid.")]
    own = [c for c in expanded if not c.id.startswith("grid.")]
    width = shutil.get_terminal_size((80, 24)).columns
    for line in page.render(op, s.ops[op], own, grid, _page_facts(s, op), width):
        click.echo(line)


def _page_facts(s: "Spec", op: str) -> "PageFacts":
    """What the page says besides the entry: the shipped known entries that name `op`, per backend, and how its
    values are compared (the default tolerances with the op's own, the error bound where it has one)."""
    from kbtool import known
    from kbtool.known.globs import matches
    from kbtool.reference.magnitude import BOUNDED, WHAT
    from kbtool.specs.domains import param_domains
    from kbtool.specs.page import PageFacts
    from kbtool.verdicts.tolerances import DEFAULT_TOLERANCE, tolerance_for

    facts = PageFacts(
        tolerance={d: tolerance_for(d, s.ops[op].get("tolerance", {})) for d in DEFAULT_TOLERANCE},
        bound=WHAT.get(op, "M") if op in BOUNDED else "",
        domains=param_domains(s, op),
    )
    try:
        entries = known.load(None, spec=s)
    except KbtoolError:  # a broken known file is `kbtool check`'s to report; the page goes without the count
        return facts
    for entry in entries:
        if matches(op, entry.op):
            facts.known_entries += 1
            for backend in (entry.backend,) if isinstance(entry.backend, str) else entry.backend:
                facts.known[backend] = facts.known.get(backend, 0) + 1
    return facts


@spec.command("coverage")
@click.option("--op", "ops", multiple=True, help="Only this op (repeatable).", shell_complete=complete_op)
@options.SPEC
@click.option("--json", "as_json", is_flag=True, help="Print what is unexercised (or the blind spots) as JSON.")
@click.option(
    "--backend",
    metavar="NAME",
    help="Blind spots of this backend: documented values and pairs exercised only by results that do not pass on "
    "it (by default the known-differences file's recorded results).",
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False),
    help="With --backend: the failing results are this JSON report's non-passing results for the backend.",
)
@options.KNOWN
def spec_coverage(
    ops: Tuple[str, ...],
    spec_path: Optional[str],
    as_json: bool,
    backend: Optional[str],
    report_path: Optional[str],
    known_paths: Tuple[str, ...],
    no_shipped_known: bool,
) -> None:
    """List documented values that no case exercises.

    The documented parameter space is each value and each pair of values. Exit code 1 when something is
    unexercised. With --backend: what only results that do not pass on the backend exercise, per mode (blind
    spots), each `unsupported` (the backend lacks the function or the mode), `refused` (every call with the value
    raises or crashes), `decided` (a reference decision of the spec says the backend differs on every such call),
    `broken` (a known entry's `every_call` says so, for its cause) or real; exit code 1 when a real one is left,
    or when a passing result contradicts a decision's or entry's claim.

    \b
    Examples:
      kbtool spec coverage --op conv2d
      kbtool spec coverage --backend cntk --json
      kbtool spec coverage --backend theano --report full.json
    """
    from kbtool.specs import coverage

    if (report_path or known_paths or no_shipped_known) and not backend:
        raise KbtoolError("--report and --known need --backend")
    s = _load_spec(spec_path)
    for op in ops:
        s.op(op)
    if backend:
        from kbtool.reports import blind_spots
        from kbtool.reports.load import read_report

        blind_spots.backend_modes(backend)  # an unknown backend is bad input before any file is read
        report = read_report(report_path) if report_path else None
        found = blind_spots.blind_spots(
            s, backend, report, report_path, options.known_files(known_paths, no_shipped_known), ops or None
        )
        if as_json:
            click.echo(json.dumps(found, indent=2))
        else:
            for line in coverage.render_blind_spots(found):
                click.echo(line)
        sys.exit(1 if found["real"] or found["contradicted"] else 0)
    report = coverage.coverage(s, ops or None)
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        for line in coverage.render(report):
            click.echo(line)
    sys.exit(1 if report["unexercised"] else 0)


@spec.command("validate")
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the path, whether it is valid and the problems as JSON.")
def spec_validate(file: Optional[str], as_json: bool) -> None:
    """Validate a spec file (default: the shipped spec).

    Every problem is printed as file:line: path: message; exit code 1 when there is one.

    \b
    Examples:
      kbtool spec validate
      kbtool spec validate specs/ops.yaml --json
    """
    from kbtool import paths
    from kbtool.specs import loader

    try:
        s = loader.load(file)
    except loader.SpecError as exc:
        if as_json:
            click.echo(
                json.dumps(
                    {"path": file or paths.spec_file(), "valid": False, "problems": list(exc.problems)}, indent=2
                )
            )
        else:
            for problem in exc.problems:
                click.echo(problem, err=True)
        sys.exit(1)
    if as_json:
        click.echo(json.dumps({"path": s.path, "valid": True, "ops": len(s.ops), "problems": []}, indent=2))
        return
    click.echo(f"{s.path}: valid ({len(s.ops)} ops)")


@spec.command("map")
@click.option("--op", "ops", multiple=True, help="Only this function (repeatable).", shell_complete=complete_op)
@options.MAP
@options.SPEC
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def spec_map(ops: Tuple[str, ...], map_path: Optional[str], spec_path: Optional[str], as_json: bool) -> None:
    """Print the K.* -> Keras 3 map.

    Each function's Keras 3 expression and note, or why there is none.

    \b
    Examples:
      kbtool spec map --op batch_dot
      kbtool spec map --json
    """
    from kbtool.reports.text import cell
    from kbtool.specs import keras3_map as map_mod

    s = _load_spec(spec_path)
    keras3_map = map_mod.load(map_path, list(s.ops))
    for op in ops:
        s.op(op)  # an unknown function: one line, with the closest names
    rows = [row for row in keras3_map.rows if not ops or row.op in ops]
    if as_json:
        click.echo(json.dumps([row.as_dict() for row in rows], indent=2))
        return
    from rich.console import Console

    console = Console()
    if not console.is_terminal:
        for row in rows:
            home = row.keras3 if row.keras3 is not None else "no equivalent: " + (row.none or "")
            click.echo("\t".join([row.op, cell(home), cell(row.note or "")]))
        return
    _print_map_table(console, rows, keras3_map.keras)


def _print_map_table(console: "Console", rows: List["Row"], keras: str) -> None:
    """`spec map` on a terminal: a table of each function's Keras 3 expression (or why none) and its note."""
    from rich.table import Table
    from rich.text import Text

    from kbtool.reports.text import cell

    table = Table("function", "Keras 3", "note", show_lines=True)
    for row in rows:
        if row.keras3 is not None:
            home = Text(cell(row.keras3), style="cyan")
        else:
            home = Text("no equivalent: " + cell(row.none or ""), style="yellow")
        table.add_row(Text("K." + row.op), home, Text(cell(row.note or "")))
    console.print(table)
    with_expression = sum(1 for row in rows if row.keras3 is not None)
    console.print(
        Text(
            f"{len(rows)} functions: {with_expression} with a Keras 3 expression, "
            f"{len(rows) - with_expression} with none (keras {keras})"
        )
    )
