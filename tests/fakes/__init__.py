"""Hand-written fakes for the edges Fetch talks to (see CONVENTIONS.md §6).

``model_server``: a real HTTP server speaking Anthropic, OpenAI Chat/Responses and Gemini,
replaying a per-test script; ``cli_recipes.md``: how each coding CLI is pointed at it.
"""
