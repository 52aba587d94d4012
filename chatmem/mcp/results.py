"""What the MCP tools return: typed results (their JSON schemas are the tools' output
schemas) and the paging that caps each result in tokens."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, Field

PAGE_TOKENS = 4000
"""The most tokens one tool result holds; the rest is on the next page."""

T = TypeVar("T")

ConversationId = Annotated[str, Field(
    description="The conversation handle start_conversation returned (a session's exact name).")]
Page = Annotated[int, Field(ge=1, description="Page of a long result, from 1; a result says "
                                                "its next_page, or null on the last.")]


class Started(BaseModel):
    conversation_id: str = Field(description="Pass this to the other tools.")
    created: bool = Field(description="True when the conversation is new.")
    turns: int
    strategy: str = Field(description="The memory strategy building its contexts.")


class Recorded(BaseModel):
    conversation_id: str
    turn: int = Field(description="The number of the turn just stored.")
    context_tokens: int = Field(description="Tokens of the context the strategy would have "
                                            "sent for the user message.")
    notices: list[str] = Field(description="What memory did after the turn (summaries, "
                                           "facts), one line each.")


class ContextMessage(BaseModel):
    role: str
    content: str
    tokens: int
    turn: int | None = None


class ContextPart(BaseModel):
    kind: str = Field(description="system, summary, facts, recalled, history, files or input.")
    reason: str = Field(description="Why this part is in the context.")
    tokens: int
    messages: list[ContextMessage]


class ContextView(BaseModel):
    conversation_id: str
    strategy: str
    input: str
    tokens: int = Field(description="The whole context, chat format included.")
    budget: int | None
    dropped: str | None = Field(description="What the strategy left out, if anything.")
    parts: list[ContextPart]
    page: int
    next_page: int | None


class Hit(BaseModel):
    conversation_id: str
    turn: int | None
    role: str
    content: str
    words: float | None = Field(description="Word score, 0–1.")
    meaning: float | None = Field(description="Cosine by meaning; null without an embedder.")
    fused: float | None = Field(description="The score recall ranks by.")
    bm25: float | None


class SearchResult(BaseModel):
    hits: list[Hit]
    page: int
    next_page: int | None


class Conversation(BaseModel):
    conversation_id: str
    strategy: str
    turns: int
    messages: int
    updated_at: str | None


class ConversationList(BaseModel):
    conversations: list[Conversation]
    page: int
    next_page: int | None


class Fact(BaseModel):
    id: int = Field(description="The fact's exact id (forget takes it).")
    key: str
    value: str
    scope: str = Field(description="session (this conversation) or user (every conversation "
                                   "of the user profile).")
    owner: str
    expires_at: str | None


class FactList(BaseModel):
    facts: list[Fact]
    page: int
    next_page: int | None


class Forgotten(BaseModel):
    done: bool = Field(description="False: a dry run, nothing changed (confirm=true does it).")
    fact: Fact
    purge: bool
    mentions: int = Field(description="With purge: mentions of its value in stored messages, "
                                      "replaced by [forgotten] when done.")


class StrategyScore(BaseModel):
    strategy: str
    turns: int
    mean_tokens: float | None = Field(description="Mean prompt tokens per turn.")
    max_tokens: int | None
    model_calls: int = Field(description="Calls the strategy itself made (summaries, facts).")
    id_recall: float | None = Field(description="Share of the probes' expected messages in "
                                                "the context; null without probes.")
    text_recall: float | None


class Comparison(BaseModel):
    conversation_id: str
    probes: int
    strategies: list[StrategyScore]


class TurnExplanation(BaseModel):
    conversation_id: str
    turn: int
    status: str
    input: str
    reply: str | None
    strategy: str
    tokens: int
    budget: int | None
    dropped: str | None
    parts: list[ContextPart]
    page: int
    next_page: int | None


PREVIEW_CHARACTERS = 1_000
"""A turn's input and reply in explain_turn, beside the paged parts: at most this much of
each, so every page stays within PAGE_TOKENS whatever was pasted."""


def preview(text: str | None, whole_in: str) -> str | None:
    """`text`, or its first PREVIEW_CHARACTERS and where the whole of it is."""
    if text is None or len(text) <= PREVIEW_CHARACTERS:
        return text
    return (f"{text[:PREVIEW_CHARACTERS]}… [{len(text) - PREVIEW_CHARACTERS:,} more "
            f"characters: {whole_in}]")


def fact_result(fact: Any, owner: str) -> Fact:
    return Fact(id=fact.id, key=fact.key, value=fact.value, scope=str(fact.scope), owner=owner,
                expires_at=fact.expires_at)


def tokens_of(item: BaseModel) -> int:
    from chatmem.tokens import counter_for_model

    return counter_for_model(None).count_text(item.model_dump_json())


def paged(items: Sequence[T], page: int, cost: Callable[[T], int] = tokens_of,  # type: ignore[assignment]
          cap: int = PAGE_TOKENS) -> tuple[list[T], int | None]:
    """Page `page` of `items` cut at `cap` tokens a page (an item larger than a page is a
    page of its own), and the next page's number or None; `cost` counts an item (default:
    the tokens of its JSON)."""
    pages: list[list[T]] = [[]]
    used = 0
    for item in items:
        size = cost(item)
        if pages[-1] and used + size > cap:
            pages.append([])
            used = 0
        pages[-1].append(item)
        used += size
    chosen = pages[page - 1] if page <= len(pages) else []
    return chosen, page + 1 if page < len(pages) else None


def paged_parts(parts: list[dict[str, Any]], page: int) -> tuple[list[ContextPart], int | None]:
    """A context's parts, its messages paged by tokens (a long history spans pages)."""
    rows = [(part, message) for part in parts for message in part["messages"]]
    chosen, next_page = paged(rows, page, cost=lambda row: int(row[1]["tokens"]) + 8)
    shown: dict[int, ContextPart] = {}
    for part, message in chosen:
        at = id(part)
        if at not in shown:
            shown[at] = ContextPart(kind=part["kind"], reason=part["reason"],
                                    tokens=part["tokens"], messages=[])
        shown[at].messages.append(ContextMessage(role=message["role"],
                                                 content=message["content"],
                                                 tokens=message["tokens"],
                                                 turn=message.get("turn")))
    return list(shown.values()), next_page
