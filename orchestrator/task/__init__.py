"""The task pipeline: a run in the kennel (``runner``), the repository's tests there
(``testrun``), progress on the phone (``progress``), the result through the boundary, the
card (``diffview``), approvals and autonomy, a waiting diff after a restart (``waiting``),
and the git journal settled at start (``recovery``, ``crashpoint``)."""
