"""``python -m torchscope``: the same entry point as the ``torchscope`` command."""

from torchscope.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
