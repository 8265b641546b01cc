"""Stage 1, the indexes over one trace: linking device work to its launches, nesting, steps,
intervals, groups, the CPU index, columns, source lines, and the ``Context`` that holds them
(built once per trace; metrics, verdict and rules read it)."""
