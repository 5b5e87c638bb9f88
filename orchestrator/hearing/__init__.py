"""Voice notes as typed text: transcription through OpenAI-compatible endpoints."""
