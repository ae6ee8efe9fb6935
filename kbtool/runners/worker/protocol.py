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


def _read_exact(stream, n):
    chunks = []
    while n:
        chunk = stream.read(n)
        if not chunk:
            raise EOFError("stream closed")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_message(stream):
    """Blocking read of one message from a binary stream: (header, [arrays])."""
    (size,) = _LEN.unpack(_read_exact(stream, _LEN.size))
    header = decode_header(_read_exact(stream, size))
    arrays = [array_from_bytes(_read_exact(stream, n)) for n in header.get("arrays", [])]
    return header, arrays


def header_length(prefix):
    return _LEN.unpack(prefix)[0]
