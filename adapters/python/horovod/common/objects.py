"""Python objects as bytes, for broadcast_object and allgather_object: each
binding moves the bytes as a uint8 tensor of its framework."""

import io
import pickle

try:
    import cloudpickle as _pickler
except ImportError:  # cloudpickle adds lambdas and local classes; pickle does the rest
    _pickler = pickle


def serialize(obj):
    """obj pickled (by cloudpickle where installed)."""
    buf = io.BytesIO()
    _pickler.dump(obj, buf)
    return buf.getvalue()


def deserialize(data):
    """The object serialize() made `data` (bytes or a buffer) from."""
    return pickle.loads(bytes(data))


def split_gathered(data, lengths):
    """The objects in `data`, the concatenation of serialized objects of
    the given byte lengths (what allgather_object gathers)."""
    data = memoryview(data)
    objects, offset = [], 0
    for n in lengths:
        objects.append(deserialize(data[offset:offset + n]))
        offset += n
    return objects
