"""The user's source, read and rewritten without running it: ``targets`` finds functions, their
parameters and ``# torchscope:`` directives; ``fixes`` rewrites a function's source with
``ast`` for a measured fix. One walker finds functions for both (``targets.walk_functions``).
Never imports torch; of the analysis, only its result types and the diff's interval (what a
fix's offer and trial report)."""
