"""Random numbers: dropout's mask (``bernoulli_``), ``rand``/``randn``/``normal_`` … Their time
is the generator's arithmetic per element (a Philox or MT step each), not bandwidth: a cause
of its own (``rng``), fixed by drawing them inside a fused kernel (sdpa's ``dropout_p``,
``torch.compile``), not by a faster memory pass. Bytes are one pass (the output written).

``aten::dropout`` (and ``feature_dropout``/``alpha_dropout``) in eval mode returns its input:
it is no cost, class copy/layout (``is_noop``)."""

from __future__ import annotations

from typing import Any

from .cost import RNG, Work
from .passes import one_pass
from .tensors import concrete, flag

NAMES = frozenset(
    [
        "bernoulli",
        "uniform",
        "normal",
        "exponential",
        "random",
        "geometric",
        "cauchy",
        "log_normal",
        "rand",
        "randn",
        "randint",
        "rand_like",
        "randn_like",
        "randint_like",
        "randperm",
        "multinomial",
        "native_dropout",
        "dropout",
        "feature_dropout",
        "alpha_dropout",
        "feature_alpha_dropout",
    ]
)
DROPOUTS = frozenset({"dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout"})


def is_noop(base: str, args: Any) -> bool:
    """A dropout called with ``train=False``: it returns its input."""
    c = concrete(args)
    return base in DROPOUTS and len(c) >= 3 and flag(c[2]) is False


def cost(name: str, args: Any) -> Work | None:
    return one_pass(name, args, RNG)
