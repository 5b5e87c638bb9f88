"""The kennel: where coding CLIs run, isolated from the host, and the model relay."""
