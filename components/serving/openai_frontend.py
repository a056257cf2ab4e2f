"""Triton's OpenAI-compatible frontend in an LLM version's pod: the port it listens on."""

OPENAI_FRONTEND_PORT = 9000
