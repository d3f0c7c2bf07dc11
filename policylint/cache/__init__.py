"""The cache store: one sealed entry format under every cache, outside the repository.

This package is the bottom of the caching: it knows entries, not what is in them.

- :mod:`~policylint.cache.store` - the cache folder (``POLICYLINT_CACHE_DIR``,
  else the user cache folder), its secret, the HMAC seals, size-limited reads,
  atomic writes, the binary entry format and the code fingerprint every key
  holds. It imports nothing of the pipeline;
- :mod:`~policylint.cache.digests` - the digests of traces, reused for files
  whose identity has not changed (a trace's bytes, nothing of the model);
- :mod:`~policylint.cache.exact` - exact texts of plain values: equal only for
  equal values of the same types, for keys and exact comparisons.

Each cached step keeps its own cache module in the package of that step, below
the code that uses it, so that no step reaches up into another's:

- :mod:`policylint.model.load.document_cache` - a YAML file's parsed documents and
  position index (used by the loader, :mod:`policylint.model.load.files`);
- :mod:`policylint.engine.rule_cache` - the rules as loaded and configured (used by
  :func:`policylint.engine.ruleset.load_rules_cached`);
- :mod:`policylint.measure.measurement_cache` - a workload's facts and GPU demand
  series, and a pool's pooled demand, their values encoded by
  :mod:`policylint.measure.cache_encoding` (a closed table of types);
- :mod:`policylint.measure.pooled_cache` - a pool's sum kept so that one changed
  member can be taken out of it and put back in;
- :mod:`policylint.engine.index_store` - the repository index of a narrowed run.

**A cache can make a run faster, never different.** The cache folder is input
policylint did not write in this run, so every entry is treated as untrusted:

- every entry carries an HMAC-SHA256 over its whole payload, keyed by a secret
  of the cache folder (a file of mode 0600 that must belong to the user running
  policylint) derived per kind of entry. An entry copied from elsewhere, edited,
  truncated or planted by someone who cannot read that file is a miss;
- entries are read through :func:`policylint.safeio.read_bytes`, like user
  files: a pipe, a device or a file over the entry size limit is refused unread;
- an entry holds plain data only (numbers, text, arrays of a fixed set of
  dtypes); dataclasses are rebuilt from a closed table of tags, never from a
  class name found in the entry, and the expanded size of compact arrays is
  bounded before anything is allocated;
- a trace is checked (regular file, within the size limit) before it is hashed,
  and rule files are read with the same checks as without the cache;
- anything doubtful - a bad checksum, a foreign key, an unknown tag, a
  mismatching field - is a miss: the value is computed afresh, exactly as with
  ``--no-cache``. The cache never makes a run fail.

The secret keeps out an attacker who can write into the cache folder but not
read the user's files (a shared or group-writable folder, entries copied in from
another machine). It cannot keep out one who runs code as the same user, nor a
cache folder restored whole (secret included) from a less trusted source, such
as a CI cache a pull request could write: see docs/performance.md, "Caches".

Nothing is pickled. Entries are written through :func:`policylint.writer.write_file`
(a unique temporary file, then an atomic rename), so concurrent runs and crashes
never leave half an entry; an entry that cannot be used is ignored and rewritten.
``check --no-cache`` turns every cache off.
"""
