# py36-compatible
"""Wire format between controller and worker.

One message = 4-byte big-endian length + UTF-8 JSON header, then for each entry of
header["arrays"] (a list of byte counts) that many bytes in `.npy` format. Arrays never
travel as pickles: numpy 2 pickles do not load under numpy 1.x.
"""

import io
import json
import struct

import numpy as np

_LEN = struct.Struct(">I")


def array_to_bytes(array):
    buf = io.BytesIO()
    np.save(buf, np.asarray(array), allow_pickle=False)
    return buf.getvalue()


def array_from_bytes(data):
    return np.load(io.BytesIO(data), allow_pickle=False)


def encode(header, arrays=()):
    blobs = [array_to_bytes(a) for a in arrays]
    header = dict(header)
    header["arrays"] = [len(b) for b in blobs]
    raw = json.dumps(header).encode("utf-8")
    return b"".join([_LEN.pack(len(raw)), raw] + blobs)


def decode_header(raw):
    return json.loads(raw.decode("utf-8"))


def write_message(stream, header, arrays=()):
    stream.write(encode(header, arrays))
    stream.flush()


# Hello statuses: what a worker says once it has (or has not) imported its backend.
READY = "ready"
BROKEN = "broken"

# Reply statuses: what a worker (or the client, for a worker that died) says of one request.
OK = "ok"  # the call returned; "outputs" describe the values
RAISED = "raised"  # the call raised; "error" has its type, MRO and message
# making the case's inputs raised (a variable, placeholder, constant or {"call": ...} argument), before the op under
# test was called: "error" as for RAISED; the result says nothing of the op
NOT_REACHED = "not_reached"
UNSUPPORTED = "unsupported"  # the backend module has no such function
CRASH = "crash"  # the worker died during the request (set by the client)
TIMEOUT = "timeout"  # the worker did not answer in time and was killed (set by the client)
UNAVAILABLE = "unavailable"  # no worker could be started for the request (set by the client)


def _stream_reader(stream):
    def read_exact(n):
        chunks = []
        while n:
            chunk = stream.read(n)
            if not chunk:
                raise EOFError("stream closed")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    return read_exact


def read_message_with(read_exact):
    """Read one message through `read_exact(n) -> n bytes`: (header, [arrays]).

    The one reader of the wire format: the worker reads requests from a blocking stream, the controller
    reads replies through a reader that enforces its deadline.
    """
    (size,) = _LEN.unpack(read_exact(_LEN.size))
    header = decode_header(read_exact(size))
    if not isinstance(header, dict):
        raise ValueError("message header is not a JSON object")
    arrays = [array_from_bytes(read_exact(n)) for n in header.get("arrays", [])]
    return header, arrays


def read_message(stream):
    """Blocking read of one message from a binary stream: (header, [arrays])."""
    return read_message_with(_stream_reader(stream))
