"""The names of the GPUs this worker sees, read without initialising CUDA.

``torch.cuda.get_device_name`` runs torch's CUDA lazy initialisation
(``torch.cuda.is_initialized()`` turns true), which a worker must not do before a job asks
for CUDA. The handshake names the GPUs through NVML instead: the library ``nvidia-smi`` reads,
loaded with ``ctypes`` as ``torch.cuda``'s own NVML helpers load it (torch ships no Python
binding for it, and ``nvidia-ml-py`` would be one more dependency in the user's interpreter
for one call), in the order ``CUDA_VISIBLE_DEVICES`` lists them. Where NVML is missing, or the
variable names GPUs by UUID or MIG instance and their models differ, a GPU is
``CUDA device N``; the report names the device a job ran on from the job itself.
"""

from __future__ import annotations

import ctypes
import os
from typing import Optional

NAME_BYTES = 96  # NVML_DEVICE_NAME_V2_BUFFER_SIZE


def _nvml_names() -> Optional[list[str]]:
    """Every GPU's name in NVML's order (PCI bus), or None where NVML cannot say."""
    try:
        lib = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return None
    if lib.nvmlInit_v2() != 0:
        return None
    try:
        count = ctypes.c_uint()
        if lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
            return None
        names = []
        for index in range(count.value):
            handle = ctypes.c_void_p()
            if lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle)) != 0:
                return None
            buffer = ctypes.create_string_buffer(NAME_BYTES)
            if lib.nvmlDeviceGetName(handle, buffer, NAME_BYTES) != 0:
                return None
            names.append(buffer.value.decode(errors="replace"))
        return names
    finally:
        lib.nvmlShutdown()


def visible_names(all_names: list[str], visible: Optional[str], count: int) -> list[str]:
    """The names of the ``count`` GPUs CUDA shows, given NVML's ``all_names`` and
    ``CUDA_VISIBLE_DEVICES`` (None: unset)."""
    generic = [f"CUDA device {i}" for i in range(count)]
    if visible is None:
        chosen = all_names[:count]
    else:
        words = [w.strip() for w in visible.split(",") if w.strip()]
        if all(w.isdigit() for w in words):
            chosen = [all_names[int(w)] for w in words if int(w) < len(all_names)][:count]
        elif len(set(all_names)) == 1:  # UUIDs or MIG instances of one model
            chosen = all_names[:1] * count
        else:
            return generic
    return chosen if len(chosen) == count else generic


def gpu_names() -> list[str]:
    """The visible GPUs' names, in CUDA's numbering, without a CUDA context."""
    import torch

    count = torch.cuda.device_count()  # the driver's count: no lazy initialisation
    try:
        names = _nvml_names()
    except Exception:  # an odd driver: the names are a courtesy
        names = None
    if not names:
        return [f"CUDA device {i}" for i in range(count)]
    return visible_names(names, os.environ.get("CUDA_VISIBLE_DEVICES"), count)
