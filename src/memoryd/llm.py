"""A small client for OpenAI-compatible chat endpoints (OpenAI, Ollama, vLLM, LM Studio, ...).

memoryd never needs a language model; where one can do better than the built-in heuristics
(extracting memories from a conversation, compressing a note, judging a screenshot), the
feature takes a :class:`ChatClient` and falls back when it is absent or fails.

>>> client = OpenAIChatClient("http://127.0.0.1:11434/v1", "llama3.2")
>>> client.complete([{"role": "user", "content": "Say hi"}])
'Hi!'
"""

from __future__ import annotations

import json
import re
from typing import Any, Protocol

from memoryd.errors import ChatError

Message = dict[str, Any]


class ChatClient(Protocol):
    """What memoryd asks of a chat model."""

    def complete(self, messages: list[Message], *, json_mode: bool = False,
                 max_tokens: int | None = None) -> str:
        """The assistant's reply to ``messages`` (OpenAI chat format; content may be a
        list of text and ``image_url`` parts)."""
        ...


class OpenAIChatClient:
    """``POST {base_url}/chat/completions`` with temperature 0."""

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None,
                 timeout: float = 30.0) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.timeout = timeout
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"

    def complete(self, messages: list[Message], *, json_mode: bool = False,
                 max_tokens: int | None = None) -> str:
        body: dict[str, Any] = {"model": self.model, "temperature": 0, "messages": messages}
        if json_mode:
            body["response_format"] = {"type": "json_object"}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        import httpx  # only when a model is configured: `import memoryd` stays light

        try:
            response = httpx.post(self.url, json=body, headers=self._headers,
                                  timeout=self.timeout)
            response.raise_for_status()
            text = response.json()["choices"][0]["message"]["content"]
        except (httpx.HTTPError, KeyError, IndexError, TypeError, ValueError) as exc:
            raise ChatError(f"{type(exc).__name__}: {exc}") from exc
        if not isinstance(text, str):
            raise ChatError("the reply has no text content")
        return text


def parse_json_reply(text: str) -> Any:
    """The JSON in a model's reply (tolerating a Markdown code fence around it)."""
    cleaned = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    try:
        return json.loads(cleaned)
    except ValueError as exc:
        raise ChatError(f"the reply is not JSON: {exc}") from exc


def client_from_settings(settings: Any) -> ChatClient | None:
    """The configured chat client (``MEMORYD_LLM_URL`` + ``MEMORYD_LLM_MODEL``), or None."""
    if not (settings.llm_url and settings.llm_model):
        return None
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
    return OpenAIChatClient(str(settings.llm_url), settings.llm_model, api_key=key,
                            timeout=settings.llm_timeout)
