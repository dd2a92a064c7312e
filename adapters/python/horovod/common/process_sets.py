"""Process sets: collectives over a subset of the ranks, as in Horovod.

Static sets are given to init(process_sets=[...]) and get ids 1, 2, ... in
that order; the global set (all ranks) has id 0. With
init(process_sets="dynamic") sets are added and removed at run time, every
rank calling add_process_set / remove_process_set in the same order. They
wait in the core's slices (horovod.common._native), so Ctrl-C interrupts
a change that a rank never joins.
"""

from horovod.common import _capi


def _is_iterable(x):
    try:
        iter(x)
    except TypeError:
        return False
    return True


class ProcessSet:
    """A set of world ranks. Registered with the runtime once init() (or
    add_process_set()) has given it a process_set_id."""

    process_set_id = None
    ranks = None

    def __init__(self, ranks_or_comm):
        self.mpi_comm = None
        if _is_iterable(ranks_or_comm):
            ranks = list(ranks_or_comm)
            if any(not isinstance(r, int) or isinstance(r, bool)
                   for r in ranks):
                raise ValueError(
                    "ProcessSet should be initialized with a list of ints")
            ranks.sort()
            if len(set(ranks)) != len(ranks):
                raise ValueError(f"ProcessSet {ranks} repeats a rank")
            self.ranks = ranks
        else:
            # An mpi4py communicator: its ranks in the world.
            self.mpi_comm = ranks_or_comm
            self.ranks = None

    def _resolve_comm(self):
        if self.mpi_comm is None or self.ranks is not None:
            return
        from mpi4py import MPI  # only for sets made from a communicator
        world = MPI.COMM_WORLD.Get_group()
        group = self.mpi_comm.Get_group()
        self.ranks = sorted(MPI.Group.Translate_ranks(
            group, list(range(group.Get_size())), world))

    def _invalidate(self):
        self.process_set_id = None

    def size(self):
        """The number of ranks; None while not registered."""
        if self.process_set_id is None:
            return None
        return len(self.ranks)

    def rank(self):
        """This process's rank within the set, -1 when not included; None
        while not registered."""
        if self.process_set_id is None:
            return None
        me = _capi.lib.hvd_rank()
        return self.ranks.index(me) if me in self.ranks else -1

    def included(self):
        """Whether this process belongs to the set; None while not
        registered."""
        if self.process_set_id is None:
            return None
        return _capi.lib.hvd_rank() in self.ranks

    def __str__(self):
        return (f"ProcessSet(process_set_id={self.process_set_id}, "
                f"ranks={self.ranks}, mpi_comm={self.mpi_comm})")

    __repr__ = __str__

    def __eq__(self, other):
        return (isinstance(other, ProcessSet) and
                self.process_set_id == other.process_set_id and
                self.ranks == other.ranks)

    def __hash__(self):
        return hash((self.process_set_id, tuple(self.ranks or ())))


global_process_set = ProcessSet([])
global_process_set.process_set_id = 0

# id -> ProcessSet of the running runtime (the global set included).
_registered = {}
# id -> unnamed ops submitted on that set since init. Every rank of a set
# submits the same ops on it in the same order, so "allreduce.noname.<n>"
# names match across the set whatever else each rank does.
_unnamed = {}


def root_in_set(process_set, root_rank):
    """The rank within `process_set` of `root_rank`, which is a global rank
    as in Horovod's API (the core's hvd_op.root is a rank in the set).
    Raises ValueError, with Horovod's text, when it is not a member."""
    if isinstance(root_rank, bool) or not isinstance(root_rank, int):
        try:
            root_rank = int(root_rank)
        except (TypeError, ValueError):
            raise ValueError(f"root_rank must be an int, not "
                             f"{type(root_rank).__name__}") from None
    ranks = process_set.ranks or []
    if root_rank not in ranks:
        raise ValueError(f"broadcast received invalid root rank {root_rank} "
                         f"for provided process set (its ranks: {ranks})")
    return ranks.index(root_rank)


def next_unnamed(process_set_id):
    n = _unnamed.get(process_set_id, 0) + 1
    _unnamed[process_set_id] = n
    return n


def _setup(world_size, static_sets):
    """Called by init() once the runtime is up."""
    _registered.clear()
    _unnamed.clear()
    global_process_set.ranks = list(range(world_size))
    global_process_set.process_set_id = 0
    _registered[0] = global_process_set
    for i, ps in enumerate(static_sets):
        ps.process_set_id = i + 1
        _registered[i + 1] = ps


def _teardown():
    for ps in _registered.values():
        if ps is not global_process_set:
            ps._invalidate()
    _registered.clear()


def _wait_for_change(core, what):
    """The set id a started change (a _native.Handle) ends with. The wait
    is Ctrl-C's to interrupt: KeyboardInterrupt leaves the change in flight
    on this rank (it fails at shutdown, or when the stall check gives up on
    it), so the ranks' later changes no longer pair up; shut down then."""
    core.wait(what)
    return _capi.int32_output(core)


def add_process_set(process_set):
    """Registers a new process set (a ProcessSet or a list of ranks) with
    the runtime and returns it. Collective: every rank calls it, in the
    same order. Needs init(process_sets="dynamic")."""
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    if process_set.process_set_id is not None:
        raise ValueError(f"{process_set} is already registered")
    process_set._resolve_comm()
    size = _capi.lib.hvd_size()
    if size < 0:
        raise ValueError("Horovod has not been initialized; use hvd.init().")
    for ps in _registered.values():
        if ps.ranks == process_set.ranks:
            raise ValueError(
                f"a process set with ranks {process_set.ranks} exists "
                f"already (id {ps.process_set_id})")
    bad = [r for r in process_set.ranks if r < 0 or r >= size]
    if bad or not process_set.ranks:
        raise ValueError(f"{process_set}: ranks must be a non-empty subset "
                         f"of 0..{size - 1}")
    new_id = _wait_for_change(
        _capi.native.start_add_process_set(process_set.ranks),
        "add_process_set")
    process_set.process_set_id = new_id
    _registered[new_id] = process_set
    return process_set


def remove_process_set(process_set):
    """Removes a process set added with add_process_set(); returns whether
    it was registered. Collective, as add_process_set."""
    if process_set.process_set_id is None:
        return False
    if process_set.process_set_id == 0:
        raise ValueError("the global process set cannot be removed")
    _wait_for_change(
        _capi.native.start_remove_process_set(process_set.process_set_id),
        "remove_process_set")
    _registered.pop(process_set.process_set_id, None)
    process_set._invalidate()
    return True
