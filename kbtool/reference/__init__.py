"""The NumPy reference, itself a Keras backend module (`backend`, `variable`, `placeholder`,
`function`, `eval`, and the ops), organised by category. Written for kbtool from the docs'
definitions; each public op has exactly one reference function. Module names never equal an
op name (`shape`, `update`), or the submodule would shadow the function.
"""

from kbtool.reference.compare_ops import *  # noqa: F403
from kbtool.reference.control import *  # noqa: F403
from kbtool.reference.conv import *  # noqa: F403
from kbtool.reference.core import *  # noqa: F403
from kbtool.reference.core import (  # noqa: F401
    backend,
    constant,
    dtype,
    epsilon,
    eval,
    floatx,
    function,
    image_data_format,
    int_shape,
    is_placeholder,
    ndim,
    placeholder,
    variable,
)
from kbtool.reference.creation import *  # noqa: F403
from kbtool.reference.ctc import *  # noqa: F403
from kbtool.reference.linalg import *  # noqa: F403
from kbtool.reference.losses import *  # noqa: F403
from kbtool.reference.manipulation import *  # noqa: F403
from kbtool.reference.math import *  # noqa: F403
from kbtool.reference.nn import *  # noqa: F403
from kbtool.reference.norm import *  # noqa: F403
from kbtool.reference.random_ops import *  # noqa: F403
from kbtool.reference.reduce import *  # noqa: F403
from kbtool.reference.updates import *  # noqa: F403
