"""Channel adapters: one per file, each turning platform events into ``Inbound``."""
