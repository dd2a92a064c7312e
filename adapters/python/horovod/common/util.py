"""Small helpers shared by the framework bindings."""

import re
import warnings


def get_average_backwards_compatibility_fun(reduce_ops):
    """Returns a function mapping the deprecated `average` argument and `op`
    to one op, as Horovod does: op=None and average=None mean Average."""

    def impl(op, average):
        if op is not None:
            if average is not None:
                raise ValueError("The op parameter supersedes average. "
                                 "Please provide only one of them.")
            return op
        if average is not None:
            warnings.warn("Parameter `average` has been replaced with `op` "
                          "and will be removed", DeprecationWarning)
            return reduce_ops.Average if average else reduce_ops.Sum
        return reduce_ops.Average

    return impl


def is_version_greater_equal_than(ver, target):
    """Whether version string `ver` is at least `target`, a
    "major.minor.patch" string (as Horovod's helper of that name: other
    arguments raise ValueError)."""
    if not isinstance(ver, str) or not isinstance(target, str):
        raise ValueError(f"is_version_greater_equal_than takes two strings, "
                         f"not {type(ver).__name__} {ver!r} and "
                         f"{type(target).__name__} {target!r}")
    if len(target.split(".")) != 3:
        raise ValueError(f"target must be major.minor.patch, not {target!r}")
    return _version_key(ver) >= _version_key(target)


# PEP 440's order of the parts after the release numbers: 1.0.dev1 < 1.0a1
# < 1.0b1 < 1.0rc1 < 1.0 < 1.0.post1 (a local part, +cu118, sorts after).
_STAGES = {"dev": 0, "a": 1, "alpha": 1, "b": 2, "beta": 2, "c": 3,
           "rc": 3, "pre": 3, "preview": 3, "": 4, "post": 5}


def _version_key(text):
    match = re.match(r"\s*v?(\d+(?:\.\d+)*)[.\-_]?([a-z]*)[.\-_]?(\d*)",
                     text.lower())
    if not match or match.group(2) not in _STAGES:
        raise ValueError(f"{text!r} is not a version")
    release = [int(n) for n in match.group(1).split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()  # 2.1 == 2.1.0
    return (tuple(release), _STAGES[match.group(2)],
            int(match.group(3) or 0))


def split_evenly(items, parts):
    """items in at most `parts` consecutive, non-empty runs whose lengths
    differ by at most one (the first runs the longer)."""
    base, extra = divmod(len(items), parts)
    out, start = [], 0
    for i in range(parts):
        end = start + base + (1 if i < extra else 0)
        if end > start:
            out.append(items[start:end])
        start = end
    return out
