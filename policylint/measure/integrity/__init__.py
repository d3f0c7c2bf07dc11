"""The integrity stage: is a measurement the evidence it claims to be?

The measuring step reads a trace and computes its bands; this stage sits between
the two and asks how the evidence could have been faked, as an auditor would.
The checks are grouped by the trick they expose, one module each:

* **identity** - the same evidence counted twice. :mod:`~policylint.measure.integrity.copies`:
  a fingerprint of the series as read (grid times and values), so a byte-identical copy
  under another name, or the same samples re-encoded in another format, is recognised as
  the same demand; and near copies between traces (a run sketch per trace, compared across
  the model). :mod:`~policylint.measure.integrity.days`: days of one trace that repeat an
  earlier day, exactly or nearly.
* **time** - evidence not from the period it claims
  (:mod:`~policylint.measure.integrity.timing`): the first and last sample, so a view can
  tell samples that lie after ``now``; and whether a pulled trace still is what its pull
  recorded.
* **resolution** - evidence coarser or smoother than it looks
  (:mod:`~policylint.measure.integrity.resolution`): the real step of a series whose values
  only change every k samples (a coarse series forward-filled onto a fine grid), and how
  rough the series is (a fabricated or smoothed curve has almost no sample-to-sample noise).
* **shaping** - evidence with the inconvenient parts removed
  (:mod:`~policylint.measure.integrity.shaping`): how much of the window the declared
  exclusions take, how many of them recur at one time of day, and whether they fall where
  demand is highest.
* **plausibility** - values a counting trace cannot hold (negative, fractional), and what a
  pool declares against itself (:mod:`~policylint.measure.integrity.plausibility`: its GPU
  model's memory, its scheduler queue, the gangs it must admit).

Every function of those modules is pure: arrays and plain metadata in, a dict of plain
facts (:data:`~policylint.measure.integrity.values.Fact`) out, computed with numpy over whole
arrays. :mod:`~policylint.measure.integrity.workload` gathers them into one workload's
facts: the trace facts, stored with the workload's facts (and cached with them), and at
``now`` the typed :class:`~policylint.measure.integrity_facts.IntegrityWorkloadFacts` the
engine puts into each workload's fact sheet;
:func:`~policylint.measure.integrity.plausibility.pool_integrity_facts` builds a pool's
:class:`~policylint.measure.integrity_facts.IntegrityPoolFacts`. The facts are declared in
:mod:`policylint.measure.integrity_facts`. :mod:`~policylint.measure.integrity.checks` holds
the check functions of the integrity rules.
"""
