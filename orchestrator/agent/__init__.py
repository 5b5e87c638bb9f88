"""The orchestrator as an agent, one concept per module: the frozen system prompt
(prompt.py), the conversation each model turn sees (history.py, compaction.py), the tool
executor (executor.py, cache.py, repostate.py), the owner's yes for tools that ask
(confirm.py), and the tools themselves (seed_tools.py, repo_tools.py). The loop that
drives them is orchestrator/planner.py."""
