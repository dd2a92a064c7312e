"""Small helpers shared by the framework bindings."""

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
