"""The rule engine: facts, checks, rules, evaluation, filtering, narrowing and the lint run."""
