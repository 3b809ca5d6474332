"""Continuous-batching limits of a serving replica (vLLM scheduler settings)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BatchLimits"]


@dataclass(frozen=True)
class BatchLimits:
    """Continuous-batching limits of each replica (vLLM scheduler settings).

    Attributes
    ----------
    max_num_seqs : int
        Sequences in a batch at most (vLLM ``max_num_seqs``, default 256).
    max_num_batched_tokens : int
        Tokens per step at most (vLLM ``max_num_batched_tokens``); with chunked prefill it is the step's token
        budget (decode tokens + prompt chunks).
    chunked_prefill : bool
        Mix prompt chunks into decode steps (Sarathi-Serve) instead of separate prefill steps.
    prefix_caching : bool
        Keep the KV blocks of prompt prefixes (identified by the request's ``prefix_block_ids``) after use and skip
        their prefill when a later prompt starts with them (vLLM automatic prefix caching; not with chunked
        prefill).
    prefix_block_tokens : int
        Tokens per prefix block id (Mooncake ``hash_ids``: 512); a multiple of the deployment's ``block_size``.
    """

    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    chunked_prefill: bool = False
    prefix_caching: bool = False
    prefix_block_tokens: int = 512

    def __post_init__(self) -> None:
        if self.max_num_seqs < 1 or self.max_num_batched_tokens < 1:
            raise ValueError(f"batch limits must be >= 1: max_num_seqs={self.max_num_seqs}, "
                             f"max_num_batched_tokens={self.max_num_batched_tokens}")
        if self.chunked_prefill and self.max_num_batched_tokens <= self.max_num_seqs:
            raise ValueError("with chunked prefill max_num_batched_tokens must exceed max_num_seqs")
        if self.prefix_caching and self.chunked_prefill:
            raise ValueError("prefix caching is not modelled with chunked prefill")
        if self.prefix_block_tokens < 1:
            raise ValueError(f"prefix_block_tokens must be >= 1, got {self.prefix_block_tokens}")
