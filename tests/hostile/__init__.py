"""Hostile input and faults: each test reproduces one probe a demanding user or an attacker ran
against the workflow (crafted data files, configs that write outside ``results/``, config typos,
tampered or truncated result files, a full disk) and checks the clear error that replaced the
traceback, the silent change or the damage.  Two CLI misuse probes stay beside the command they
exercise, in tests/unit/stats/test_stats.py: ``rank --output`` equal to ``--input``, ``summary`` of a missing
results folder."""
