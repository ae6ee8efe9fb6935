"""scripts/compare-backends.py: where two backends of one report disagree, grouped by what each side says."""

import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location("compare_backends", os.path.join(ROOT, "scripts", "compare-backends.py"))
compare = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare)


def result(op, case, backend, status, known=None, mode="eager"):
    return {"op": op, "case": case, "mode": mode, "backend": backend, "status": status, "known": known}


REPORT = {
    "backends": [{"name": "a"}, {"name": "b"}],
    "results": [
        result("mean", "int", "a", "fail", "a truncates ints"),
        result("mean", "int", "b", "pass"),
        result("mean", "int2", "a", "fail", "a truncates ints"),
        result("mean", "int2", "b", "pass"),
        result("slice", "x", "a", "pass"),
        result("slice", "x", "b", "unsupported", "b has no slice"),
        result("abs", "x", "a", "pass"),
        result("abs", "x", "b", "pass"),
        result("log", "zero", "a", "fail", "shared cause"),
        result("log", "zero", "b", "fail", "shared cause"),
        result("conv1d", "causal", "a", "error"),
        result("conv1d", "causal", "b", "fail", "b pads channels"),
        result("conv2d", "x.kernel_flipped", "b", "fail", "only b runs this variant"),
    ],
}


def test_disagreements_are_grouped_by_what_each_side_says():
    groups = compare.disagreements(REPORT, "a", "b")
    assert groups == {
        ("a truncates ints", "pass"): [("mean", "int", "eager"), ("mean", "int2", "eager")],
        ("pass", "b has no slice"): [("slice", "x", "eager")],
        ("error (unexplained)", "b pads channels"): [("conv1d", "causal", "eager")],
    }
    text = compare.render(groups, "a", "b", "r.json")
    assert "4 (op, case, mode) where the two disagree: 2 do not pass on a only, 1 on b only, 1 on both" in text
    assert "| 2 | mean | a truncates ints | pass |" in text


def test_a_backend_the_report_lacks_is_one_line(tmp_path, capsys):
    import json

    path = tmp_path / "r.json"
    path.write_text(json.dumps(REPORT))
    assert compare.main([str(path), "a", "c"]) == 2
    assert capsys.readouterr().err == f"compare-backends: {path} has no backend c (it has a, b)\n"
