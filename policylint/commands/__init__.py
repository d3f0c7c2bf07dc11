"""Subcommands. Each module defines NAME, HELP, configure(parser) and run(args).

Modules here must be cheap to import: heavy imports go inside ``run``.
"""
