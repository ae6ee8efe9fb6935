"""kbtool: conformance harness for the Keras backend API.

Kept import-free so that `kbtool --help` starts fast and the worker package can be
imported by Python 3.6 interpreters.
"""

__version__ = "0.1.0"
