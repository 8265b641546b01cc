"""The language server (the daemon): plain LSP over stdio, built on pygls.

It never imports torch — it starts fast and survives anything the user's code does, because
that code only ever runs in the worker subprocess.
"""
