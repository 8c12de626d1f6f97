"""The fuzz suite: wire input as an attacker would send it, into the codec and the sessions.

- :mod:`.seeds`: the seed corpus (valid messages of every revision, from the recorded
  transcripts, the benchmark corpus and the generated types) and the issue's fixed rows.
- :mod:`.mutators`: a seeded mutation engine (``random.Random(seed)``: the same seed
  gives the same inputs): byte edits, splices, truncation and structure-aware edits of
  the decoded JSON.
- :mod:`.states`: the session states inputs are fed to, and the probe that checks a
  session still works.
- :mod:`.driver`: one input through a target, with the invariants checked.
- :mod:`.engine`: a run of many inputs, with findings and the slowest input.
- :mod:`.strategies`: the same inputs as Hypothesis strategies.
- :mod:`.atheris_target`: the coverage-guided target; ``python -m tests.fuzzing`` is the
  long run behind ``nox -s fuzz``, which writes ``RESULTS.md``.
"""
