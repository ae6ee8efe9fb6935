"""Compare one backend's outcome with the reference: values, shapes, dtypes, raised errors.

An outcome is a worker reply: (header, arrays). Verdicts:
  pass         same shapes, dtypes and values within tolerance, or the same exception type
  fail         a divergence (message gives the numbers)
  error        the backend raised where the reference returned a value
  unsupported  the backend has no such function
  crash/timeout  the worker died or hung on this case
"""
import re

import numpy as np

DEFAULT_TOLERANCE = {
    "float16": {"rtol": 1e-3, "atol": 1e-3},
    "float32": {"rtol": 1e-5, "atol": 1e-6},
    "float64": {"rtol": 1e-10, "atol": 1e-12},
    "int": {"rtol": 0, "atol": 0},
}


def tolerance_for(dtype, overrides):
    key = dtype if dtype in DEFAULT_TOLERANCE else "int"
    tol = dict(DEFAULT_TOLERANCE[key])
    tol.update(overrides.get(key, {}))
    return tol


def output_values(header, arrays):
    """The outputs of a reply as a list of ndarray / python values."""
    values = []
    for out in header.get("outputs", []):
        values.append(arrays[out["index"]] if out["kind"] == "array" else out["value"])
    return values


def compare(case, expected, actual):
    """Return (status, message) for `actual` against the reference outcome `expected`."""
    exp_header, exp_arrays = expected
    act_header, act_arrays = actual
    act_status = act_header["status"]
    if act_status in ("crash", "timeout", "unsupported", "error"):
        return act_status, act_header.get("message", "")
    exp_status = exp_header["status"]
    if exp_status == "raised" or case.raises:
        want = case.raises or exp_header["error"]["type"]
        if act_status != "raised":
            return "fail", "expected {} to be raised, got a result{}".format(want, _shape_note(act_header))
        error = act_header["error"]
        if want not in error["mro"]:
            return "fail", "expected {}, raised {}: {}".format(want, error["type"], error["message"][:200])
        if case.match and not re.search(case.match, error["message"]):
            return "fail", "raised {} but message {!r} does not match {!r}".format(
                error["type"], error["message"][:200], case.match)
        return "pass", ""
    if act_status == "raised":
        error = act_header["error"]
        if "NotImplementedError" in error["mro"]:
            # the backend says itself that it lacks the feature (e.g. keras 2.3.1's CNTK arange, ctc_*)
            return "unsupported", "{}: {}".format(error["type"], error["message"][:300] or "(no message)")
        return "error", "{}: {}".format(error["type"], error["message"][:300])
    if exp_status != "ok":
        return "error", "reference did not produce a value: {}".format(exp_header.get("message", exp_status))
    if case.stats:
        return compare_stats(case.stats, output_values(exp_header, exp_arrays), output_values(act_header, act_arrays))
    return compare_outputs(output_values(exp_header, exp_arrays), output_values(act_header, act_arrays),
                           case.tolerance)


def _shape_note(header):
    shapes = [o.get("shape") for o in header.get("outputs", []) if o["kind"] == "array"]
    return " of shape {}".format(tuple(shapes[0])) if len(shapes) == 1 else ""


def compare_outputs(expected, actual, tolerance):
    if len(expected) != len(actual):
        return "fail", "returned {} outputs, reference returned {}".format(len(actual), len(expected))
    for i, (exp, act) in enumerate(zip(expected, actual)):
        where = "output {}: ".format(i) if len(expected) > 1 else ""
        status, message = compare_value(exp, act, tolerance)
        if status != "pass":
            return status, where + message
    return "pass", ""


def compare_value(exp, act, tolerance):
    exp, act = _scalar_as_number(exp), _scalar_as_number(act)
    exp_is_array, act_is_array = isinstance(exp, np.ndarray), isinstance(act, np.ndarray)
    if not exp_is_array or not act_is_array:
        if _is_number(exp) and _is_number(act):
            # a NumPy scalar from one backend, a Python number from another: the value is what counts
            return ("pass", "") if np.isclose(act, exp) else ("fail", "returned {!r}, reference {!r}".format(act, exp))
        if exp_is_array != act_is_array:
            return "fail", "returned {}, reference returned {}".format(_kind(act), _kind(exp))
        return ("pass", "") if _py_equal(exp, act) else ("fail", "returned {!r}, reference {!r}".format(act, exp))
    if exp.shape != act.shape:
        return "fail", "shape {} != reference {}".format(tuple(act.shape), tuple(exp.shape))
    if exp.dtype != act.dtype:
        # the values are still compared, so that a dtype difference never hides a value difference
        loose = [tolerance_for(str(d), tolerance) for d in (exp.dtype, act.dtype)]
        tol = {k: max(t[k] for t in loose) for k in ("rtol", "atol")}
        common = np.promote_types(exp.dtype, act.dtype) if exp.dtype.kind != "b" and act.dtype.kind != "b" else "float64"
        status, message = _compare_values(exp.astype(common), act.astype(common), tol)
        return "fail", "dtype {} != reference {} ({})".format(
            act.dtype, exp.dtype, "values agree" if status == "pass" else "values also differ: " + message)
    return _compare_values(exp, act, tolerance_for(str(exp.dtype), tolerance))


def _compare_values(exp, act, tol):
    if exp.dtype.kind in "fc":
        ok = np.isclose(act, exp, rtol=tol["rtol"], atol=tol["atol"], equal_nan=True)
    else:
        ok = act == exp
    if np.all(ok):
        return "pass", ""
    bad = np.argwhere(~ok)
    first = tuple(int(i) for i in bad[0])
    diff = np.abs(act.astype("float64") - exp.astype("float64"))
    finite = diff[np.isfinite(diff)]
    worst = float(finite.max()) if finite.size else float("nan")
    return "fail", "{} of {} values differ (max abs diff {:.3g}, rtol {:g}, atol {:g}); first at {}: {!r} vs reference {!r}".format(
        len(bad), ok.size, worst, tol["rtol"], tol["atol"], first, act[first].item(), exp[first].item())


def _claim_matches(want, got):
    """A doc's shown value against an output: numbers within 1e-4, anything else by equality."""
    if _contains_none(want):  # None would become nan as float64: compare item by item
        got = _plain(got)
        if want is None or got is None:
            return want is got
        if not isinstance(got, (list, tuple)) or len(got) != len(want):
            return False
        return all(_claim_matches(w, g) for w, g in zip(want, got))
    try:
        want_array = np.asarray(want, dtype="float64")
        got_array = np.asarray(got, dtype="float64")
    except (TypeError, ValueError):
        return _py_equal(_plain(got), want)
    return want_array.shape == got_array.shape and bool(np.allclose(got_array, want_array, atol=1e-4))


def _contains_none(value):
    if isinstance(value, (list, tuple)):
        return any(_contains_none(v) for v in value)
    return value is None


def _plain(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _scalar_as_number(value):
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iu" and not isinstance(value, bool):
        return value.item()
    return value


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _kind(value):
    return "an array" if isinstance(value, np.ndarray) else "{!r}".format(value)


def _py_equal(a, b):
    norm = lambda v: [norm(x) for x in v] if isinstance(v, (list, tuple)) else v  # noqa: E731
    return norm(a) == norm(b)


def compare_stats(stats, expected, values):
    """Random ops: same shape and dtype as the reference, statistics within the spec's bounds."""
    if not values or not isinstance(values[0], np.ndarray):
        return "fail", "returned {!r}, expected an array".format(values[:1])
    exp, act = np.asarray(expected[0]), values[0]
    if exp.shape != act.shape:
        return "fail", "shape {} != reference {}".format(tuple(act.shape), tuple(exp.shape))
    if exp.dtype != act.dtype:
        return "fail", "dtype {} != reference {}".format(act.dtype, exp.dtype)
    array = act.astype("float64")
    if array.size == 0:
        return "fail", "empty output"
    measured = {"mean": array.mean(), "std": array.std(), "min": array.min(), "max": array.max()}
    for key in ("mean", "std", "min", "max"):
        if key in stats and not stats[key][0] <= measured[key] <= stats[key][1]:
            return "fail", "{} {:.4g} outside [{:g}, {:g}]".format(key, measured[key], *stats[key])
    if stats.get("reproducible"):
        second = np.asarray(values[1]) if len(values) > 1 else None
        if second is None or second.shape != act.shape or not np.array_equal(act, second):
            differing = int(np.sum(act != second)) if second is not None and second.shape == act.shape else array.size
            return "fail", "not reproducible: the same seed drew different values ({} of {} differ)".format(
                differing, array.size)
    return "pass", ""


def doc_check(shown, values):
    """Does a backend's output match what a doc version shows? Returns a list of verdicts."""
    verdicts = []
    for claim in shown:
        if not values:
            verdicts.append({"docs": claim["docs"], "matches": False})
            continue
        out = values[0] if len(values) == 1 else values
        if "shape" in claim:
            got = list(np.shape(out)) if isinstance(out, np.ndarray) else out
            matches = _py_equal(got, claim["shape"])
        elif "value" in claim:
            matches = _claim_matches(claim["value"], out)
        else:
            matches = None  # a textual claim (e.g. a repr) is shown to the user, not judged
        shown = claim.get("shape", claim.get("value", claim.get("text")))
        verdicts.append({"docs": claim["docs"], "shown": ("shape " if "shape" in claim else "") + str(shown),
                         "matches": matches})
    return verdicts
