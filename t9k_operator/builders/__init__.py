"""Pure functions from a job spec to its desired child objects (plain dicts). No I/O, no clock."""
