"""The band calculator: pure numpy functions over whole arrays, with array and dataclass results.

One module per part of the definitions in ``docs/bands.md`` (FRAMEWORK: band
calculator definitions):

- :mod:`~policylint.calc.settings` - :class:`BandSettings`, the 90-day window, W = ceil(cold start / step)
- :mod:`~policylint.calc.rolling` - rolling minimum and the sustained series s(t)
- :mod:`~policylint.calc.select` - inverted-CDF percentiles by (sampled) selection, wait percentiles
- :mod:`~policylint.calc.spikes` - runs above the baseline: height, width, volume, noise
- :mod:`~policylint.calc.queue` - fluid queue (Lindley), capacity for a tolerance, bounded queue
- :mod:`~policylint.calc.core` - the one analysis path for 2-D rows, and ``summarise``
- :mod:`~policylint.calc.cleaning` - outlier days and flat days
- :mod:`~policylint.calc.gpus` - GPUs from concurrency, VRAM residency ratio
- :mod:`~policylint.calc.jobs` - job duration percentiles and tail ratio
- :mod:`~policylint.calc.erlang` - Erlang B and C
- :mod:`~policylint.calc.scratch` - work buffers and row batches the array passes share

Functions that pay off on many workloads at once accept 2-D input shaped
``(series, samples)``; none loops over samples in Python. The package imports
nothing from policylint but :mod:`policylint.errors` (tests/test_architecture.py
keeps it so): it knows nothing about readers, rules, files or terminals. The
bands of one reader's series (``analyse`` and its ``BandReport``) are in
:mod:`policylint.analysis`, one layer up.
"""
