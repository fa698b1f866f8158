"""Token-exact traces of an agent program's LLM calls, captured by the proxy.

Each call records the prompt ids the model was fed, the completion ids it sampled and their
logprobs. Across the calls of one episode we keep a single growing token record when the agent
sends its history back unchanged: the next prompt must then *start with* the previous prompt plus
completion (prefix consistency), and only the new messages (tool results, user turns) are
tokenized, as env tokens. An agent that rewrites its history breaks the chain: the break is
recorded (``prefix_breaks``) and a new segment starts, so no row ever stitches together a
sequence the model never saw.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..rollout.records import EpisodeRecord
from ..rollout.tokens import EpisodeTokens
from .errors import TraceError as TraceError


@dataclass
class CapturedCall:
    """One model call as the proxy served it."""

    index: int
    endpoint: str  # "chat.completions" or "completions"
    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    finish_reason: str
    text: str
    prefix_consistent: bool  # the prompt extends the previous call's prompt + completion
    request: dict[str, Any] = field(default_factory=dict)
    response: dict[str, Any] = field(default_factory=dict)


@dataclass
class CaptureTrace:
    """Every call of one episode, plus the token record(s) they form."""

    episode_id: str
    calls: list[CapturedCall] = field(default_factory=list)
    segments: list[EpisodeTokens] = field(default_factory=list)
    prefix_breaks: int = 0
    request_errors: int = 0  # malformed requests answered with an error (the episode went on)

    @property
    def context(self) -> list[int] | None:
        """What the model saw last, prompt + completion (None before the first call)."""
        return self.segments[-1].context() if self.segments else None

    def record_call(
        self,
        *,
        endpoint: str,
        prompt_ids: list[int],
        completion_ids: list[int],
        logprobs: list[float],
        finish_reason: str,
        text: str,
        env_ids: list[int] | None,
        request: dict[str, Any] | None = None,
        response: dict[str, Any] | None = None,
    ) -> CapturedCall:
        """Append one call. ``env_ids``: the tokens added since the last completion when the
        caller has checked the prompt extends the previous context; None starts a new segment."""
        if len(completion_ids) != len(logprobs):
            raise TraceError(
                f"call {len(self.calls)}: {len(completion_ids)} completion ids but "
                f"{len(logprobs)} logprobs; the policy must return one logprob per token"
            )
        consistent = env_ids is not None and bool(self.segments)
        if consistent:
            seg = self.segments[-1]
            if seg.context() + list(env_ids or []) != prompt_ids:
                raise TraceError(
                    f"call {len(self.calls)}: prompt ids do not equal the previous context plus "
                    "the new env tokens (a proxy bug: the chain must be exact)"
                )
            seg.add_env(list(env_ids or []))
        else:
            if self.segments:
                self.prefix_breaks += 1
            seg = EpisodeTokens(prompt_ids=list(prompt_ids))
            self.segments.append(seg)
        seg.add_model(list(completion_ids), list(logprobs))
        call = CapturedCall(
            index=len(self.calls),
            endpoint=endpoint,
            prompt_ids=list(prompt_ids),
            completion_ids=list(completion_ids),
            logprobs=[float(x) for x in logprobs],
            finish_reason=finish_reason,
            text=text,
            prefix_consistent=consistent,
            request=request or {},
            response=response or {},
        )
        self.calls.append(call)
        return call

    # ---- conversions ----------------------------------------------------------------------

    def _single_segment(self) -> EpisodeTokens:
        if not self.segments:
            raise TraceError(
                f"episode {self.episode_id}: no model call was captured; point the harness's "
                "OpenAI base_url at this episode's proxy URL"
            )
        if len(self.segments) > 1:
            first_break = next(c.index for c in self.calls[1:] if not c.prefix_consistent)
            raise TraceError(
                f"episode {self.episode_id}: the agent rewrote its history at call {first_break} "
                f"({self.prefix_breaks} break(s)), so no single token sequence holds the episode; "
                "use to_trl_rows(per_call=True) or keep the agent's history append-only"
            )
        return self.segments[0]

    def to_episode_record(
        self,
        *,
        reward: float,
        row: int = 0,
        group: int = 0,
        prompt: Any = None,
        metrics: dict[str, Any] | None = None,
    ) -> EpisodeRecord:
        """The whole episode as one rollout record (model tokens masked 1, env tokens 0)."""
        seg = self._single_segment()
        return EpisodeRecord(
            row=row,
            group=group,
            prompt=prompt,
            prompt_ids=list(seg.prompt_ids),
            completion_ids=list(seg.completion_ids),
            logprobs=list(seg.logprobs),
            env_mask=list(seg.env_mask),
            reward=float(reward),
            num_turns=len(self.calls),
            metrics={
                "model_calls": len(self.calls),
                "prefix_breaks": self.prefix_breaks,
                "request_errors": self.request_errors,
                **(metrics or {}),
            },
        )

    def to_trl_rows(self, *, per_call: bool = False) -> list[dict[str, Any]]:
        """TRL ``rollout_func`` rows: one per episode, or one per call with ``per_call=True``."""
        if per_call:
            return [
                {
                    "prompt_ids": c.prompt_ids,
                    "completion_ids": c.completion_ids,
                    "logprobs": c.logprobs,
                    "env_mask": [1] * len(c.completion_ids),
                }
                for c in self.calls
                if c.completion_ids
            ]
        seg = self._single_segment()
        return [
            {
                "prompt_ids": list(seg.prompt_ids),
                "completion_ids": list(seg.completion_ids),
                "logprobs": list(seg.logprobs),
                "env_mask": list(seg.env_mask),
            }
        ]

    def to_training_trace(self) -> dict[str, Any]:
        """OpenEnv 0.10's ``TrainingTrace`` shape: one turn per call, the loss mask covering
        prompt (0) plus completion (1). Validate with ``TrainingTrace.model_validate``."""
        return {
            "schema_version": 1,
            "turns": [
                {
                    "node_id": f"{self.episode_id}:{c.index}",
                    "prompt_token_ids": [int(t) for t in c.prompt_ids],
                    "completion_token_ids": [int(t) for t in c.completion_ids],
                    "per_token_logps": [float(x) for x in c.logprobs],
                    "loss_mask": [0] * len(c.prompt_ids) + [1] * len(c.completion_ids),
                    "request": c.request,
                    "response": c.response,
                    "metadata": {
                        "endpoint": c.endpoint,
                        "finish_reason": c.finish_reason,
                        "prefix_consistent": c.prefix_consistent,
                    },
                }
                for c in self.calls
            ],
        }
