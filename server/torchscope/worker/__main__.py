"""``python -m torchscope.worker``: start a worker that serves jobs over stdin/stdout."""

from torchscope.worker.main import main

if __name__ == "__main__":
    main()
