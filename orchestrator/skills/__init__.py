"""Skills in the application: a repository's committed skills read from git (never the
working tree), the book every chat asks (owner + shipped + the active repo's), the
``activate_skill`` tool, the messages a thread's activated skills become, and /skills."""
