"""Step 4 of the pipeline: read every referenced measurement once and compute its facts.

The package, module by module:

* :mod:`~policylint.measure.run` - :func:`~policylint.measure.run.measure`, every
  workload of a model once per run: from the cache, in this process or in workers;
* :mod:`~policylint.measure.parallel` - the worker processes of ``--jobs``;
* :mod:`~policylint.measure.workload` - one workload: its concurrency trace, job list
  and VRAM trace (:mod:`~policylint.measure.vram`) turned into facts;
* :mod:`~policylint.measure.reading` - a measurement block's options as a reader's arguments;
* :mod:`~policylint.measure.cold_start` and :mod:`~policylint.measure.conversion` - the
  effective cold start and the GPU conversion, the one definition of each;
* :mod:`~policylint.measure.pools` - every pool's pooled demand, summed, updated or
  taken from the cache; :mod:`~policylint.measure.pooled` - the pooling arithmetic;
* :mod:`~policylint.measure.integrity` - the integrity facts of the evidence, a package
  with one module per trick it exposes (copies, days, resolution, timing, shaping,
  plausibility), the facts of a workload (``workload``) and the integrity rules' checks
  (``checks``); declared in :mod:`~policylint.measure.integrity_facts`;
* :mod:`~policylint.measure.sources` - pulling traces (``policylint pull``).

* :mod:`~policylint.measure.facts` - what the step hands on: one
  :class:`~policylint.measure.facts.WorkloadFacts` per workload and one
  :class:`~policylint.measure.facts.PoolFacts` per pool (below the cache that keeps them).
"""
