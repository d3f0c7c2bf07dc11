"""Writing scheduler manifests from a plan: the last step after judging.

- :mod:`~policylint.export.plans` - one pool's plan (its reserved and elastic GPUs
  and the workloads behind them) built from the judged views;
- :mod:`~policylint.export.kueue` and :mod:`~policylint.export.volcano` - those plans
  written as Kueue ClusterQueues and Volcano Queues;
- :mod:`~policylint.export.update` - an existing manifest's quotas rewritten in place
  (``export --update``), its comments and layout kept.

Reading the same manifests into the model is :mod:`policylint.model.schedulers`.
"""
