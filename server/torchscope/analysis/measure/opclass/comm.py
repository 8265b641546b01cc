"""Communication: collectives and point-to-point ops (``c10d::``, NCCL, Gloo, the functional
collectives, ``record_param_comms``). Their time is the network's and the other ranks'; no
FLOP or byte model (the cross-rank findings measure them)."""

from __future__ import annotations

PREFIXES = ("c10d::", "nccl:", "gloo:", "_c10d_functional::", "c10d_functional::", "mpi:")
NAMES = frozenset({"record_param_comms"})


def is_comm(name: str) -> bool:
    return name in NAMES or name.startswith(PREFIXES)
