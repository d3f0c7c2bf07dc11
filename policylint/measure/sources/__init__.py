"""Where committed measurements come from: the Prometheus client behind ``policylint pull``.

Only ``policylint pull`` uses this package to reach the network. The lint reads
what ``pull`` committed, plus the provenance written beside it
(:mod:`policylint.measure.sources.provenance`), and never opens a connection.

- :mod:`policylint.measure.sources.templates` - named PromQL templates for common servers and exporters
- :mod:`policylint.measure.sources.declared` - the Prometheus sources declared in measurement blocks
- :mod:`policylint.measure.sources.prometheus` - the ``/api/v1/query_range`` client (chunks, retries, deadlines, TLS)
- :mod:`policylint.measure.sources.prometheus_answer` - an answer's strict checks
- :mod:`policylint.measure.sources.provenance` - the ``<trace>.provenance.json`` sidecar and the facts rules read
"""
