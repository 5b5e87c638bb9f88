"""The kernel: the vocabulary every layer shares (errors, events, state, clock,
validation, the settings base, text splitting). It imports nothing of Fetch's own."""
