"""What the MCP tools return: typed results (their JSON schemas are the tools' output
schemas) and the paging that caps each result in tokens."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from chatmem.memory.context import Context

PAGE_TOKENS = 4000
"""The most tokens one tool result holds; the rest is on the next page."""
ITEM_TOKENS = 3000
"""The most tokens the items of one page (messages, hits, facts) hold together: the rest of
the page is for the result's own fields (ids, labels, the parts' reasons, previews)."""
PREVIEW_TOKENS = 200
"""A text shown beside a page's items (a turn's input and reply, the input asked about):
at most this much of it, so every page stays within PAGE_TOKENS whatever was pasted."""
CUT_TOKENS = ITEM_TOKENS - 200
"""The most tokens of text one item shows: an item larger than a page is cut (its fields
and the note saying where the whole is take the rest)."""

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

ConversationId = Annotated[str, Field(
    description="The conversation handle start_conversation returned (a session's exact name).")]
Page = Annotated[int, Field(ge=1, description="Page of a long result, from 1; a result says "
                                                "its next_page, or null on the last.")]


class Started(BaseModel):
    conversation_id: str = Field(description="Pass this to the other tools.")
    created: bool = Field(description="True when the conversation is new.")
    turns: int
    strategy: str = Field(description="The memory strategy building its contexts.")
    notices: list[str] = Field(description="What opening the conversation changed or left "
                                           "out, one line each.")


class Recorded(BaseModel):
    conversation_id: str
    turn: int = Field(description="The number of the turn just stored.")
    context_tokens: int = Field(description="Tokens of the context the strategy would have "
                                            "sent for the user message.")
    notices: list[str] = Field(description="What opening the conversation left out, if "
                                           "this call opened it, and what memory did after "
                                           "the turn (summaries, facts), one line each.")


class ContextMessage(BaseModel):
    role: str
    content: str
    tokens: int
    turn: int | None = None
    said_on: str | None = Field(default=None, description=(
        "A recalled message that opens a run said on another day than the input (said when "
        "it was asked): that day (ISO), sent to the model on a line above `content` ('[2026-05-04 "
        "Monday]'); `tokens` count it."))


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
    warnings: list[str] = Field(description="What is wrong with the context, one line each "
                                            "(over the budget, a summary behind), as "
                                            "`inspect --json` says it.")
    parts: list[ContextPart]
    page: int
    next_page: int | None
    notices: list[str] = Field(description="What opening the conversation left out, if "
                                           "this call opened it, one line each.")


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
    access: Literal["own", "write", "read"] = Field(description=(
        "own: the user's; write or read: another user shared it (named OWNER/NAME) for "
        "writing, or read-only (record_turn is refused)."))


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
    speaker: str | None = Field(
        default=None, description="Who stated it in the conversation: a group chat's member "
                                  "or a role it is shared with; null: its owner.")


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
    still_named: list[str] = Field(default_factory=list, description=(
        "After a purge (confirm=true): the conversations whose name still holds the erased "
        "value; a purge leaves names as they are (`chatmem sessions rename` changes one; "
        "one named chat- and a digest of its first message only once its client deleted the "
        "chat: renamed before, its next message stores its copy, the value with it, anew)."))
    changes: dict[str, int] = Field(default_factory=dict, description=(
        "With purge: the stored rows whose text the purge changes (or changed, when done), "
        "by place (messages, turns, summaries, anchors, strategy_state, system_prompts, "
        "probes, facts, fact_history, facts_deleted, vectors); a dry run counts what the "
        "purge then does."))
    deleted_facts: list[str] = Field(default_factory=list, description=(
        "With purge: keys of other facts deleted (or to be) because nothing but the erased "
        "value was left in them."))
    dropped_pins: list[str] = Field(default_factory=list, description=(
        "With purge: ids of drift-guard pins (p3) dropped (or to be) because nothing but the "
        "erased value was left in them."))
    distinct_keys: list[str] = Field(default_factory=list, description=(
        "With purge: keys other facts get (or would get) when the rewritten key was another "
        "live fact's ('[forgotten] birthday (2)'): one key holds one fact."))


class StrategyScore(BaseModel):
    strategy: str
    turns: int
    mean_tokens: float | None = Field(description="Mean prompt tokens per turn.")
    max_tokens: int | None
    model_calls: int = Field(description="Calls the strategy itself made (summaries, facts).")
    id_recall: float | None = Field(description="Share of the probes' expected messages in "
                                                "the context; null without probes.")
    text_recall: float | None


class FailedStrategy(BaseModel):
    strategy: str
    error: str = Field(description="Why, in one line (a plugin's failure names the plugin).")


class Comparison(BaseModel):
    conversation_id: str
    probes: int
    strategies: list[StrategyScore]
    failed: list[FailedStrategy] = Field(
        default_factory=list, description="Strategies whose own code failed partway: not "
                                          "scored; the others' scores stand.")


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
    warnings: list[str] = Field(description="What was wrong with the context sent, one line "
                                            "each, as `inspect --json` says it.")
    parts: list[ContextPart]
    page: int
    next_page: int | None


@dataclass(frozen=True)
class Shown:
    """A text as a result shows it, and the tokens of its JSON string."""
    text: str
    tokens: int


def shown(text: str, whole_in: str, tokens: int = CUT_TOKENS) -> Shown:
    """`text`, or as much of its start as `tokens` tokens hold (counted as its JSON, as a
    result is), how many characters follow and where the whole of it is."""
    if (whole := _json_tokens(text)) <= tokens:
        return Shown(text, whole)
    note = f"… [{len(text):,} more characters: {whole_in}]"
    room = max(tokens - _json_tokens(note), 0)
    keep = min(len(text), room)
    spent = 0
    while keep and (spent := _json_tokens(text[:keep])) > room:
        # A character is a token or more, but some scripts take several: shrink in step.
        keep = min(keep - 1, keep * room // spent)
    note = f"… [{len(text) - keep:,} more characters: {whole_in}]"
    # The start and the note counted apart: at least what they take together.
    return Shown(text[:keep] + note, (spent if keep else 0) + _json_tokens(note))


def cut(text: str, whole_in: str, tokens: int = CUT_TOKENS) -> str:
    return shown(text, whole_in, tokens).text


def preview(text: str | None, whole_in: str) -> str | None:
    """`text`, or its start within PREVIEW_TOKENS and where the whole of it is."""
    return None if text is None else cut(text, whole_in, PREVIEW_TOKENS)


def transcript_of(conversation_id: str, turn: int | None = None) -> str:
    """Where a stored message is read whole: the conversation's transcript resource."""
    at = "" if turn is None else f" (turn {turn})"
    return f"chatmem://conversations/{in_uri(conversation_id)}/transcript{at}"


def context_resource(conversation_id: str, strategy: str | None) -> str:
    """The resource holding a context whole, for `strategy` (None: the conversation's own)."""
    return f"chatmem://conversations/{in_uri(conversation_id)}/context/{strategy or 'current'}"


def in_uri(conversation_id: str) -> str:
    """A conversation id as one segment of a resource's URI: a shared session's `ann/trip`
    with its slash escaped, which the template decodes back (a bare slash matches none)."""
    return conversation_id.replace("/", "%2F")


FACTS_WHOLE = "chatmem facts list --json"
"""Where a fact's value is read whole."""


def fact_result(fact: Any, owner: str) -> Fact:
    return Fact(id=fact.id, key=fact.key, value=cut(fact.value, FACTS_WHOLE),
                scope=str(fact.scope), owner=owner, expires_at=fact.expires_at,
                speaker=fact.speaker)


def listed_fact(listed: Any, value: str, speaker: str | None = None) -> Fact:
    """list_facts' item for an app.facts.ListedFact, showing `value` of its fact's value;
    `speaker` who stated it (app.facts.FactListing.speakers)."""
    return Fact(id=listed.fact.id, key=listed.fact.key, value=value,
                scope=str(listed.fact.scope), owner=listed.owner.name if listed.owner else "",
                expires_at=listed.expires_at, speaker=speaker)


def hit(found: Any, content: str) -> Hit:
    """search_memory's item for an app.search hit, showing `content` of its message."""
    return Hit(conversation_id=found.session, turn=found.turn, role=found.role,
               content=content, words=found.words, meaning=found.dense, fused=found.fused,
               bm25=found.bm25)


def tokens_of(item: BaseModel) -> int:
    return _count(item.model_dump_json())


def _json_tokens(text: str) -> int:
    import json

    return _count(json.dumps(text, ensure_ascii=False))


def _count(text: str) -> int:
    from chatmem.tokens import counter_for_model

    return counter_for_model(None).count_text(text)


def paged(items: Sequence[T], page: int, cost: Callable[[T], int] = tokens_of,  # type: ignore[assignment]
          cap: int = ITEM_TOKENS) -> tuple[list[T], int | None]:
    """Page `page` of `items` cut at `cap` tokens a page (an item larger than a page, if
    one was not cut, is a page of its own), and the next page's number or None; `cost`
    counts an item (default: the tokens of its JSON)."""
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


def with_text(make: Callable[[str], M], text: str, whole_in: str) -> tuple[M, int]:
    """The item `make` builds around `text` (cut when larger than a page), and its tokens:
    the text is counted once, as it is shown, and only the item's other fields besides
    (the whole item's JSON counted again would tokenize every message twice)."""
    seen = shown(text, whole_in)
    return make(seen.text), tokens_of(make("")) + seen.tokens


def paged_priced(priced: Sequence[tuple[T, int]], page: int) -> tuple[list[T], int | None]:
    """`paged` over items whose tokens `with_text` counted already."""
    chosen, next_page = paged(priced, page, cost=lambda item: item[1])
    return [item for item, _ in chosen], next_page


def context_parts(context: Context) -> list[ContextPart]:
    """A context's parts as the tools show them, each message whole: its reason worded as
    `inspect` words it."""
    from chatmem.render.reasons import reason_text

    return [ContextPart(kind=part.kind, reason=reason_text(part.reason), tokens=part.tokens,
                        messages=[ContextMessage(role=m.role, content=m.content,
                                                 tokens=m.tokens, turn=m.turn,
                                                 said_on=None if m.said_on is None
                                                 else m.said_on.isoformat())
                                  for m in part.messages])
            for part in context.parts]


def paged_parts(parts: Iterable[ContextPart | Mapping[str, Any]], page: int,
                whole_in: Callable[[ContextPart, ContextMessage], str]
                ) -> tuple[list[ContextPart], int | None]:
    """A context's parts (`context_parts`, or their JSON), its messages paged by tokens (a
    long history spans pages); a message larger than a page is cut, saying where it is
    whole (`whole_in(part, message)`)."""
    rows: list[tuple[tuple[ContextPart, ContextMessage], int]] = []
    for part in map(ContextPart.model_validate, parts):
        for message in part.messages:
            shown_message, cost = with_text(partial(_with_content, message), message.content,
                                            whole_in(part, message))
            rows.append(((part, shown_message), cost))
    chosen, next_page = paged_priced(rows, page)
    by_part: dict[int, ContextPart] = {}
    for part, message in chosen:
        at = id(part)
        if at not in by_part:
            by_part[at] = part.model_copy(update={"messages": []})
        by_part[at].messages.append(message)
    return list(by_part.values()), next_page


def _with_content(message: ContextMessage, content: str) -> ContextMessage:
    return message.model_copy(update={"content": content})
