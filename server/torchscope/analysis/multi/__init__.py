"""The analyses over several traces: eager vs ``torch.compile`` (``compare``, ``comparison``,
``inventory``), before vs after an edit (``diff``), the ranks of one multi-process run
(``ranks``, ``rank_model``, ``rank_stats``) and one function across input sizes (``sweep``).

Each builds on the single-trace stages of ``analysis`` (one :class:`~..results.Report` per
trace) and returns its own result type; the words and charts for them are in
``torchscope.report``. Import the submodules themselves: this package imports nothing, so a
face that needs one analysis does not pay for the others (``ranks`` brings a process pool).
"""
