"""The host side of profiling, shared by the daemon and the CLI: start workers, run jobs,
store traces, analyse them. Never imports torch or pygls."""
