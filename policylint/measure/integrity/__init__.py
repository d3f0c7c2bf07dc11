"""Integrity: is a measurement the evidence it claims to be?

The measuring step reads a trace and computes its bands; this stage sits between
the two and asks how the evidence could have been faked, as an auditor would.
Its modules are named after the trick they expose:

* :mod:`~policylint.measure.integrity.copies` and :mod:`~policylint.measure.integrity.days`
  - **identity**, the same evidence counted twice: fingerprints of the series as
  read (a byte-identical copy under another name, the same samples re-encoded in
  another format), run sketches that find a copy with a few samples edited in
  another file, and days of one trace pasted again, exactly or nearly;
* :mod:`~policylint.measure.integrity.timing` - **time**, evidence not from the
  period it claims: samples after ``now``, a pulled trace extended or edited
  after its pull;
* :mod:`~policylint.measure.integrity.resolution` - **resolution**, evidence
  coarser or smoother than it looks: the real step of a series whose values only
  change every k samples, and how rough the series is;
* :mod:`~policylint.measure.integrity.shaping` - **shaping**, evidence with the
  inconvenient parts removed: how much of the window the declared exclusions
  take, how many recur at one time of day, whether they fall where demand is highest;
* :mod:`~policylint.measure.integrity.plausibility` - **plausibility**, values the
  evidence cannot hold: GPUs per job, a pool's GPU model against its memory, a
  scheduler queue against itself.

:mod:`~policylint.measure.integrity.facts` puts one trace's facts together
(:func:`~policylint.measure.integrity.facts.trace_facts`), computed with numpy over
whole arrays: arrays and plain metadata in, a dict of plain facts out. The dict is
stored with the workload's facts (and cached with them), and the views turn it into
the facts rules read, declared in :mod:`~policylint.measure.integrity.catalogue`.
:mod:`~policylint.measure.integrity.checks` holds the integrity rules' check
functions.
"""
