"""`kbtool check --show-inputs`: the input arrays of the results that did not pass, under each case's call.

The inputs are drawn from the seed (kbtool/specs/cases.py), so the controller has them: they are the plan's own cases
(a backend's variant of a case, e.g. Theano's flipped kernels, is rebuilt by its recipe), never asked of a backend.
Each case is printed once, with the results it gave; NumPy prints the arrays, the edges of a large one.
"""

from typing import Any, Dict, List, Optional, Tuple

from kbtool.plan import Plan
from kbtool.results import SYMBOLS, Status
from kbtool.specs import call
from kbtool.specs.cases import Case

Record = Dict[str, Any]


def lines(plan: Plan, results: List[Record], width: int) -> List[str]:
    """The section `--show-inputs` prints: for each case with a non-passing result among `results`, the results, the
    call and each input array ([] when every result passed)."""
    shown: Dict[Tuple[str, str], List[Record]] = {}
    for record in results:
        if record["status"] != Status.PASS.value:
            shown.setdefault((record["op"], record["case"]), []).append(record)
    if not shown:
        return []
    cases = {(case.op, case.id): case for _entry, case in plan.work}
    out = [f"Inputs of the {len(shown)} case{'' if len(shown) == 1 else 's'} that did not pass (--show-inputs):"]
    for (op, case_id), records in shown.items():
        for record in records:
            status = "known" if record.get("known") else record["status"]
            out.append(
                f"  {SYMBOLS.get(status, '?')} {status} {op} {case_id} on {record['backend']} ({record['mode']})"
            )
        case = cases.get((op, case_id)) or _variant(plan, cases, records[0])
        if case is None:  # not in this plan (a report from elsewhere): nothing to rebuild
            out.append("      (its inputs are not in this run's plan)")
            continue
        out += call.of_case(case).lines(width, "      call: ", "          ")
        for name, array in call.input_arrays(case):
            out += call.show_array(name, array, width)
    return out


def _variant(plan: Plan, cases: Dict[Tuple[str, str], Case], record: Record) -> Optional[Case]:
    """A backend's variant of a planned case (its id is the case's with a suffix), as its recipe makes it."""
    launch = next((b.launch for b in plan.backends if b.name == record["backend"] and b.launch), None)
    if launch is None:
        return None
    for (op, case_id), case in cases.items():
        if op == record["op"] and record["case"].startswith(case_id + "."):
            for variant in launch.variants(case) or []:
                if variant.id == record["case"]:
                    return variant  # type: ignore[no-any-return]
    return None


def say(plan: Plan, results: List[Record]) -> None:
    """Print the section on stdout, at the terminal view's width (nothing when every result passed)."""
    from rich.console import Console
    from rich.text import Text

    console = Console()
    for line in lines(plan, results, console.width):
        console.print(Text(line), highlight=False, overflow="fold")
