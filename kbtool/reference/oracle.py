"""What the reference expects of a case: its outcome, computed in-process through the same invoke path as the
workers, once per case (cached; the run stage asks from one thread per backend)."""

from __future__ import annotations

import contextlib
import threading
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple

import numpy as np
from numpy.typing import NDArray

from kbtool.capture import Captured
from kbtool.reference.finite_differences import central_differences
from kbtool.reference.magnitude import with_magnitudes
from kbtool.worker import invoke, protocol

if TYPE_CHECKING:
    from kbtool.specs.cases import Case

Reply = Tuple[Dict[str, Any], List[Any]]  # (header, arrays), as a worker answers


class Oracle:
    """The NumPy reference's outcome for each case, and a backend's own name for K.backend()."""

    def __init__(self, module: Optional[ModuleType] = None) -> None:
        if module is None:
            from kbtool import reference

            module = reference
        self.module: ModuleType = module
        self._lock = threading.Lock()
        self._cache: Dict[Tuple[Any, ...], Reply] = {}

    def expected(
        self,
        case: Case,
        hello: Optional[Dict[str, Any]] = None,
        backend_name: Optional[str] = None,
        keras_name: Optional[Callable[[str], Optional[str]]] = None,
    ) -> Reply:
        """The reply a backend should give for `case` (header, arrays). For K.backend() the caller names the
        backend and gives `keras_name`, what Keras calls a built-in backend (the runners' registry knows it; the
        reference does not import the runners); without it a backend is called by kbtool's name."""
        if case.expect_backend_name:
            return own_name(backend_name or "", hello or {}, keras_name or _same_name)
        settings = getattr(case, "keras_config", None) or {}
        key = (case.op, case.id, tuple(sorted(settings.items())))
        with self._lock:
            if key not in self._cache:
                # what the reference prints or warns (log of 0, print_tensor) goes into the record, not the terminal
                with keras_settings(self.module, settings), Captured() as printed:
                    header, arrays = self._outcome(case)
                if printed.text:
                    header = dict(header, captured=printed.text)
                self._cache[key] = header, arrays
            return self._cache[key]

    def _outcome(self, case: Case) -> Reply:
        if case.grad:
            return numeric_gradients(self.module, case)
        # the reference answers in the case's first mode (a placeholder-only case has no eager form)
        request = case.request(case.modes[0])
        header, arrays = evaluate(self.module, request, case.arrays)
        if header["status"] == protocol.OK and not case.stats:
            return with_magnitudes(self.module, request, case.arrays, (header, arrays))
        return header, arrays


def evaluate(module: ModuleType, request: Mapping[str, Any], arrays: List[NDArray[Any]]) -> Reply:
    """The worker's invoke path on the reference module."""
    reply: Reply = invoke.evaluate(module, request, arrays)  # type: ignore[no-untyped-call]  # (the py36 worker is untyped)
    return reply


@contextlib.contextmanager
def keras_settings(module: ModuleType, settings: Mapping[str, Any]) -> Iterator[None]:
    """The reference follows the case's keras.json settings while it computes the case (then gets its own back)."""
    keys = [k for k in ("floatx", "epsilon", "image_data_format") if k in settings]
    saved = {k: getattr(module, k)() for k in keys}
    try:
        for key in keys:
            getattr(module, "set_" + key)(settings[key])
        yield
    finally:
        for key, value in saved.items():
            getattr(module, "set_" + key)(value)


class _NoValue(Exception):
    pass


def numeric_gradients(module: ModuleType, case: Case) -> Reply:
    """d sum(op(...)) / d input by central differences in float64, for each input the case builds as a tensor."""
    request = dict(case.request("eager"), grad=False)
    arrays64 = [a.astype("float64") if a.dtype.kind == "f" else a for a in case.arrays]

    def total(arrays: List[NDArray[Any]]) -> float:
        header, outs = evaluate(module, request, arrays)
        if header["status"] != protocol.OK:
            raise _NoValue(header)
        return float(sum(np.sum(o, dtype="float64") for o in outs))

    def total_at(index: int) -> Callable[[NDArray[Any]], float]:
        return lambda value: total(arrays64[:index] + [value] + arrays64[index + 1 :])

    try:
        total(arrays64)  # a call that has no value has no gradient: the reference's reply says why
        grads = [
            central_differences(total_at(i), arrays64[i]).astype(case.arrays[i].dtype) for i in case.tensor_indices
        ]
    except _NoValue as exc:
        return exc.args[0], []
    outputs = [
        {"kind": "array", "index": i, "dtype": str(g.dtype), "shape": list(g.shape)} for i, g in enumerate(grads)
    ]
    return {"status": protocol.OK, "outputs": outputs, "sequence": True}, grads


def _same_name(name: str) -> Optional[str]:
    return name


def own_name(backend_name: str, hello: Mapping[str, Any], keras_name: Callable[[str], Optional[str]]) -> Reply:
    """K.backend() should answer the backend's own name, as Keras names it: `keras_name(backend_name)` (the caller's
    lookup: tensorflow1 is keras 2.3.1's 'tensorflow'; for `module@env`, the env's), or where that is None (a custom
    module on kbtool's Python) what its worker reported at start."""
    want = keras_name(backend_name)
    if want is None:
        want = str(hello.get("backend", backend_name))
    return {
        "status": protocol.OK,
        "outputs": [{"kind": "python", "value": want, "pytype": "str"}],
        "sequence": False,
    }, []
