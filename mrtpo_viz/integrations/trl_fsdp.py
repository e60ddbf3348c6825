"""MRTPOTrainer under sharded training: what FSDP2 needs from the replay, and FSDP2 on CPU processes.

- **Lockstep.** Under FSDP2 (``torch.distributed.fsdp.fully_shard``) every forward of the model all-gathers each
  layer's parameters from every rank, so every rank must run the *same number* of forwards, in the same order. The
  replay's forwards depend on the local rows (groups, shared prefixes, empty prefixes), so a rank can run fewer than
  another. :func:`lockstep` makes them agree: before each forward a rank says "one more" (an all-reduce of 1);
  once its own replay is done it keeps answering 0 and running a one-token dummy forward while any rank still says
  1. The dummy's outputs are discarded; it only takes part in the all-gathers. It also drains after an exception
  raised between forwards (a refused prompt, a verifier's error), so that one rank's error does not leave the others
  waiting on a collective (the error is raised after the drain); an error inside a forward, between its
  all-gathers, cannot be recovered this way.
- **FSDP on CPU.** accelerate 1.15 turns FSDP on only for GPU-like distributed types (``AcceleratorState`` sets
  ``DistributedType.FSDP`` inside a branch for ``MULTI_GPU``, ``MULTI_XPU``, ...); a ``MULTI_CPU`` run (gloo)
  silently trains with DDP. :func:`allow_cpu_fsdp` wraps ``AcceleratorState.__init__`` so that a ``MULTI_CPU`` run
  given an FSDP plugin (or ``ACCELERATE_USE_FSDP=true``) becomes an FSDP run, exactly as the GPU branch does. It is
  for tests and CPU benchmarks of the sharded path; on GPUs it changes nothing.
"""

from __future__ import annotations

import contextlib
import os

import torch

__all__ = ["allow_cpu_fsdp", "lockstep", "is_fsdp2"]


def is_fsdp2(model) -> bool:
    """Whether ``model`` (or a module inside it) is managed by FSDP2's ``fully_shard``."""
    try:
        from torch.distributed.fsdp import FSDPModule
    except ImportError:  # a torch without FSDP2
        return False
    return any(isinstance(m, FSDPModule) for m in model.modules())


def _world() -> int:
    dist = torch.distributed
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def _vote(flag: int, device) -> int:
    """Sum over ranks of ``flag`` (0 or 1): how many ranks are about to run a real forward."""
    t = torch.tensor([flag], dtype=torch.int64, device=device)
    torch.distributed.all_reduce(t)
    return int(t.item())


@contextlib.contextmanager
def lockstep(model, device, dummy_id: int = 0):
    """Run the body's forwards of ``model`` in step with the other ranks' (see the module docstring).

    Does nothing (no hook, no collective) in a single process or for a model that FSDP2 does not manage.

    Args:
        model: the root module whose ``forward`` the body calls (the FSDP2 root).
        device: where the vote's tensor lives (the process group's device: CPU for gloo).
        dummy_id: the token id of the dummy forward.
    """
    if _world() == 1 or not is_fsdp2(model):
        yield
        return
    state = {"dummy": False}

    def before_forward(module, args, kwargs):
        if not state["dummy"]:
            _vote(1, device)

    handle = model.register_forward_pre_hook(before_forward, with_kwargs=True)
    error = None
    try:
        yield
    except BaseException as e:  # noqa: BLE001 -- drained first, raised below
        error = e
    finally:
        handle.remove()
        state["dummy"] = True
        ids = torch.tensor([[dummy_id]], device=device)
        with torch.no_grad():
            while _vote(0, device) > 0:  # another rank runs a real forward: take part in its all-gathers
                model(input_ids=ids, use_cache=False)
    if error is not None:
        raise error


_PATCHED = "_mrtpo_cpu_fsdp"


def allow_cpu_fsdp() -> None:
    """Let accelerate run FSDP on CPU processes (gloo). Idempotent; call it before the ``Accelerator`` (the trainer)
    is built. See the module docstring for what it changes and why."""
    from accelerate.state import AcceleratorState
    from accelerate.utils import DistributedType

    if getattr(AcceleratorState.__init__, _PATCHED, False):
        return
    original = AcceleratorState.__init__

    def __init__(self, *args, fsdp_plugin=None, **kwargs):
        original(self, *args, fsdp_plugin=fsdp_plugin, **kwargs)
        # every AcceleratorState() copies PartialState's distributed type back (MULTI_CPU): decide again each time
        plugin = getattr(self, "fsdp_plugin", None) or fsdp_plugin
        wanted = plugin is not None or os.environ.get("ACCELERATE_USE_FSDP", "false").lower() == "true"
        if wanted and self.distributed_type == DistributedType.MULTI_CPU:
            if plugin is None:
                from accelerate.utils import FullyShardedDataParallelPlugin

                plugin = FullyShardedDataParallelPlugin()  # reads the FSDP_* variables accelerate launch sets
            if getattr(self, "fsdp_plugin", None) is None and self._mixed_precision != "no":
                plugin.set_mixed_precision(self._mixed_precision)
            self.distributed_type = DistributedType.FSDP
            self.fsdp_plugin = plugin

    setattr(__init__, _PATCHED, True)
    AcceleratorState.__init__ = __init__
