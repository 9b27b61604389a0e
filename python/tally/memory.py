"""tally.memory: say what PyTorch's memory blocks hold, for `tally memory`.

PyTorch's allocators report every allocation and free (tally.profile(profile_memory=True)), but
not what a block holds. categorize(model, optimizer) labels the blocks of the parameters, their
gradients and the optimizer's state, with dotted names ("0.weight", "0.weight.exp_avg"), so that
`tally memory` splits the peak by category and builds a layout tree of the names. torch is
imported by the caller, never here.
"""

from . import _tally

__all__ = ["categorize"]

_PARAMETER = _tally.MEM_PARAMETER
_GRADIENT = _tally.MEM_GRADIENT
_OPTIMIZER_STATE = _tally.MEM_OPTIMIZER_STATE


_storage = None  # the tensor method giving its untyped storage, found at the first call


def _storage_method(t):
    global _storage
    cls = type(t)
    # torch >= 2.0: untyped_storage(); 1.13: _storage() (storage() wraps it in a TypedStorage,
    # which costs a microsecond more)
    _storage = (getattr(cls, "untyped_storage", None) or getattr(cls, "_storage", None)
                or cls.storage)
    return _storage


def _block(t):
    """(address, bytes, device) of the allocation holding tensor t (its storage's, where a view
    or a slice starts inside it), or None when t holds no memory (empty, meta, sparse)."""
    if t.is_meta:
        return None
    try:
        s = (_storage or _storage_method(t))(t)
        ptr = s.data_ptr()
        nbytes = s.nbytes()
    except (RuntimeError, NotImplementedError):  # sparse tensors have no storage
        return None
    if not ptr:
        return None
    return ptr, nbytes, t.get_device()  # -1 on the CPU, the index on a GPU


def _label(t, category, name):
    b = _block(t)
    if b is None:
        return 0
    _tally.label_memory(b[0], b[1], b[2], category, name)
    return 1


def categorize(model, optimizer=None):
    """Label the memory of model's parameters, their gradients and optimizer's state; returns
    how many blocks were labelled (0 outside a recording window, where it does nothing).

    Every parameter of model.named_parameters() is "parameter", named by its dotted path
    ("layers.0.weight"); its .grad, when it has one, "gradient" with the same name; every tensor
    in optimizer.state[p] (exp_avg, exp_avg_sq, step, momentum_buffer ...) "optimizer_state",
    named "<parameter's name>.<key>" ("param<i>.<key>" for a parameter model does not have, i
    its position in the optimizer's parameter groups). model may be None (optimizer state
    only). The block labelled is the allocation holding the tensor (its storage), with its size,
    on its device (-1: host memory).

    A label applies to the block alive at that address until that block is freed: a gradient
    that zero_grad(set_to_none=True) dropped is a new block at the next backward, and the state
    that the first optimizer.step() makes does not exist before it. So call it once per
    recorded step, after optimizer.step(); tally.profile(model=..., optimizer=...,
    profile_memory=True) calls it at start and at every step(). A block allocated before
    recording began counts in its category from the start (the label carries its size).

    In `tally memory`, once parameters, gradients or optimizer state are labelled, every block
    left unlabelled counts as activations (and temporaries), as InternLM counts what is
    allocated beyond the model's state.

    It never raises for want of a running profile: outside a recording window (no profile, or
    a schedule's wait and warmup steps) it returns 0 at once, having looked at no tensor.
    """
    if _tally.gate() != 1:  # 1: recording; outside a window no label of PyTorch's is kept
        return 0
    n = 0
    names = {}
    if model is not None:
        for name, p in model.named_parameters():
            names[id(p)] = name
            n += _label(p, _PARAMETER, name)
            if p.grad is not None:
                n += _label(p.grad, _GRADIENT, name)
    if optimizer is None:
        return n
    import torch  # the optimizer's: already imported

    tensor = torch.Tensor
    state = optimizer.state
    i = 0
    for group in optimizer.param_groups:
        for p in group["params"]:
            st = state.get(p)
            if st:
                base = names.get(id(p)) or f"param{i}"
                for key, v in st.items():
                    if isinstance(v, tensor):
                        n += _label(v, _OPTIMIZER_STATE, f"{base}.{key}")
            i += 1
    return n
