"""The worker: runs inside the user's interpreter, imports torch and the user's code.

It never imports pygls; it talks to the daemon (or the CLI) over msgpack frames on its
original stdin/stdout only (see ``channel``), so the user's prints cannot corrupt the pipe.
"""
