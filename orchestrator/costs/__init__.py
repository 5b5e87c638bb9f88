"""What Fetch's model calls cost: the price table (``prices.py``), the ledger that
prices and records every call and keeps the budgets (``ledger.py``), and the /cost
report (``report.py``). The rows live in the ``usage`` table (store/usage.py)."""
