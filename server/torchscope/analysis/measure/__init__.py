"""Stage 2, the numbers: per-step metrics, the op and kernel tables, launches, lines, callees,
memory, work and efficiency against this machine's (or the spec sheet's) peaks. Its output is
``stages.Metrics``."""
