"""Token bookkeeping: the ids each episode's model sees are built incrementally and recorded as-is.

``TokenCodec`` turns prompt text and env text into ids, with or without the tokenizer's chat
template. With a template, the env text appended after a model turn is the *delta* the template
adds after the assistant's end-of-turn token (which the model generated itself), so a whole episode
is ``template(conversation)`` split into model and env pieces. ``EpisodeTokens`` accumulates the
pieces: what the model is fed next is by construction the concatenation of what was recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Message = dict[str, Any]

_PROBE_USER = "\x00probe-user\x00"
_PROBE_ASSISTANT = "\x00probe-assistant\x00"


class TokenCodec:
    """Encodes prompts and env turns for one tokenizer; caches repeated texts (BlackJack repeats a lot).

    ``chat_template=None`` uses the tokenizer's template when it has one. Without a template,
    messages are joined with ``turn_separator`` (also put before every env turn), so specs return
    bare text either way.
    """

    def __init__(
        self,
        tokenizer: Any,
        *,
        chat_template: bool | None = None,
        add_special_tokens: bool = False,
        turn_separator: str = " ",
        cache_size: int = 65536,
    ) -> None:
        self.tokenizer = tokenizer
        has_template = bool(getattr(tokenizer, "chat_template", None))
        if chat_template and not has_template:
            raise ValueError(
                "chat_template=True but the tokenizer has no chat_template; set "
                "tokenizer.chat_template or pass chat_template=False"
            )
        self.use_template = has_template if chat_template is None else chat_template
        self.add_special_tokens = add_special_tokens
        self.turn_separator = turn_separator
        self._cache: dict[tuple[Any, ...], list[int]] = {}
        self._cache_size = cache_size
        eos = getattr(tokenizer, "eos_token", None)
        self._eos_text: str | None = eos if isinstance(eos, str) and eos else None

    # -- public ---------------------------------------------------------------------------

    def encode_text(self, text: str) -> list[int]:
        """Plain encoding (no template, no added special tokens)."""
        key = ("text", text)
        ids = self._cache.get(key)
        if ids is None:
            ids = list(self.tokenizer.encode(text, add_special_tokens=False))
            self._remember(key, ids)
        return list(ids)

    def prompt_ids(
        self, messages: list[Message], tools: list[dict[str, Any]] | None = None
    ) -> list[int]:
        """Ids of the first model context: the messages plus the generation prompt.

        ``tools`` (JSON-schema function specs) go to the chat template, which renders them.
        """
        if not messages:
            raise ValueError("messages: empty; a prompt needs at least one message")
        key: tuple[Any, ...] | None = None
        if (
            tools is None
        ):  # tool manifests are rarely repeated verbatim; plain prompts are (BlackJack)
            key = (
                "prompt",
                tuple((m.get("role"), m.get("name"), str(m.get("content"))) for m in messages),
            )
            ids = self._cache.get(key)
            if ids is not None:
                return list(ids)
        if self.use_template:
            text = self._render(messages, add_generation_prompt=True, tools=tools)
            ids = list(self.tokenizer.encode(text, add_special_tokens=False))
        else:
            text = self.turn_separator.join(str(m.get("content", "")) for m in messages)
            ids = list(self.tokenizer.encode(text, add_special_tokens=self.add_special_tokens))
        if key is not None:
            self._remember(key, ids)
        return list(ids)

    def turn_ids(self, messages: list[Message]) -> list[int]:
        """Ids appended after a model turn for ``messages`` (env/tool turns), generation prompt included.

        With a template this is what the template renders after the assistant's end-of-turn token;
        without one it is ``turn_separator`` + the contents joined by it.
        """
        if not messages:
            return []
        key = (
            "turn",
            tuple((m.get("role"), m.get("name"), str(m.get("content"))) for m in messages),
        )
        ids = self._cache.get(key)
        if ids is None:
            if self.use_template:
                ids = list(
                    self.tokenizer.encode(self._delta_text(messages), add_special_tokens=False)
                )
            else:
                sep = self.turn_separator
                text = sep + sep.join(str(m.get("content", "")) for m in messages)
                ids = list(self.tokenizer.encode(text, add_special_tokens=False))
            self._remember(key, ids)
        return list(ids)

    # -- internals ------------------------------------------------------------------------

    def _remember(self, key: tuple[Any, ...], ids: list[int]) -> None:
        if len(self._cache) >= self._cache_size:
            self._cache.clear()
        self._cache[key] = ids

    def _render(
        self,
        messages: list[Message],
        *,
        add_generation_prompt: bool,
        tools: list[dict[str, Any]] | None = None,
    ) -> str:
        kwargs: dict[str, Any] = {"tools": tools} if tools else {}
        return self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=add_generation_prompt, **kwargs
        )

    def _delta_text(self, messages: list[Message]) -> str:
        """What the template renders after a (probe) assistant turn's EOS for ``messages``.

        Cut from one render of the whole conversation, so templates that render the last
        assistant turn differently from earlier ones (Qwen3 adds an empty ``<think>`` block to the
        last one only) still give the delta; the model's own earlier tokens stay as sampled."""
        base: list[Message] = [
            {"role": "user", "content": _PROBE_USER},
            {"role": "assistant", "content": _PROBE_ASSISTANT},
        ]
        full = self._render(base + list(messages), add_generation_prompt=True)
        anchor = full.rfind(_PROBE_ASSISTANT)
        if anchor < 0:
            raise ValueError(
                "the chat template does not render an assistant turn's content as given; "
                "pass chat_template=False and format turns in the TextEnvSpec instead"
            )
        cut = anchor + len(_PROBE_ASSISTANT)
        # The model ends its turn with EOS itself: the env delta starts right after it.
        if self._eos_text and full.find(self._eos_text, cut) >= 0:
            cut = full.find(self._eos_text, cut) + len(self._eos_text)
        return full[cut:]


@dataclass
class EpisodeTokens:
    """The growing token record of one episode (prompt, then model and env pieces in order)."""

    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    model_tokens: int = 0
    env_tokens: int = 0
    #: the text each model turn handed to the env side (``Generation.text``: special tokens
    #: skipped), kept so a trajectory stores what the env received, not a re-decoding
    model_texts: list[str] = field(default_factory=list)

    def context(self) -> list[int]:
        """Exactly what the model is fed for its next turn."""
        return self.prompt_ids + self.completion_ids

    def add_model(self, ids: list[int], logprobs: list[float], text: str | None = None) -> None:
        """Append a model turn; ``text`` is what the env side was given for it."""
        if len(logprobs) != len(ids):
            raise ValueError(
                f"policy returned {len(ids)} token ids but {len(logprobs)} logprobs; a Policy must "
                "return one logprob per generated id"
            )
        self.completion_ids.extend(ids)
        self.logprobs.extend(float(x) for x in logprobs)
        self.env_mask.extend([1] * len(ids))
        self.model_tokens += len(ids)
        if text is not None:
            self.model_texts.append(text)

    def add_env(self, ids: list[int]) -> None:
        self.completion_ids.extend(ids)
        self.logprobs.extend([0.0] * len(ids))
        self.env_mask.extend([0] * len(ids))
        self.env_tokens += len(ids)
