"""How horovod.torch hands a tensor to the core: as it is, staged through
host memory, or on the device route (_device_path), and how staged results
come back to the caller's tensors."""

from horovod.torch import _device_path
from horovod.torch import _tensors


def host(tensor):
    """The contiguous tensor the core reads: `tensor` itself when it is
    one. CUDA tensors go to the core as they are when it accepts them
    (ordered by the op's stream, _device_path), else they are staged
    through host memory here."""
    _tensors.check_dtype(tensor)
    t = tensor.detach() if tensor.requires_grad else tensor
    if _device_path.route(t) == _device_path.STAGE:
        t = t.to("cpu")
    if not t.is_contiguous():
        t = t.contiguous()
    return t


def back_to(like, tensor):
    """`tensor` on the device of `like`."""
    return tensor if like.is_cpu else tensor.to(like.device)


def writer(targets, hosts):
    """Copies staged results back into the caller's tensors (in-place ops
    on GPU or non-contiguous tensors)."""

    def write():
        for target, staged in zip(targets, hosts):
            if staged is not target and (
                    staged.data_ptr() != target.data_ptr() or
                    staged.device != target.device):
                target.data.copy_(staged)
        return tuple(targets)

    return write


def check_all(tensors):
    """Raises ValueError unless every one of `tensors` is a torch tensor of
    a dtype the core carries."""
    for t in tensors:
        _tensors.check_dtype(t)
