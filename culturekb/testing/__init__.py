"""Test helpers that ship with the package: a scripted OpenAI-compatible server for offline tests."""

from culturekb.testing.openai_server import DEFAULT_REPLY, ScriptedOpenAIServer, ScriptedReply, hash_embedding

__all__ = ["ScriptedOpenAIServer", "ScriptedReply", "DEFAULT_REPLY", "hash_embedding"]
