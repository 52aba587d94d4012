"""The one exception hierarchy of chatmem.

Core code raises these; only the CLI and the REPL turn them into a message
and an exit code::

    ChatmemError                      exit 1 unless a subclass says otherwise
    ├── UsageError                    exit 2: the user asked for something invalid
    │   ├── OverBudget                input + system prompt cannot fit the budget; not sent
    │   ├── ConfigError               bad config file, key, type or value
    │   ├── StrategyError             unknown strategy or bad parameter
    │   ├── TurnNotReplaceable        the last turn cannot be sent again (`why`)
    │   └── TranscriptError           a transcript line that cannot be read
    ├── StoreError                    the database cannot be used (its `kind`, its `location`)
    │   ├── DatabaseError             exit 1: a driver error the backend did not expect
    │   │   └── StoreConflict         a row breaks a constraint (a name taken meanwhile)
    │   ├── NotChatmemDatabase        not ours, or from a newer chatmem (`newer_schema`)
    │   ├── TurnNotCommittable        only a completed turn with a reply commits (`status`)
    │   └── HistoryLocked             exit 3: the file is encrypted and the key is missing or wrong
    │       └── KeyUnavailable        key_command was not found, failed or timed out
    ├── NotFound                      no such session, turn, fact or summary version
    ├── ProbesUnanswered              eval --answer: some probes got no answer (the rest scored)
    ├── MemoryBehind                  replay/eval: a strategy's memory updates failed (shown)
    ├── WrongParts                    assemble() given parts that are not Parts of Messages
    ├── ExtensionFailed               a plugin's code raised what chatmem does not know
    │   ├── StrategyFailed            … a strategy's build or update
    │   │   └── StateRefused          … its update stored what a state may not hold
    │   ├── EmbedderFailed            … an embedder
    │   └── ProviderFailed            … a provider (a ProviderError too: a failed turn)
    └── ProviderError                 the model could not answer
        ├── NoModelAvailable          the model chosen cannot be opened (no file, no name)
        │   └── NoModelAtAll          nothing chosen and nothing installed: the ways to get one
        ├── ProviderAuthError         401/403: the key is wrong or missing
        ├── ProviderNotFound          404: unknown model or wrong base URL
        ├── ProviderRateLimited       429 after retries
        ├── ProviderConnectionError   endpoint unreachable
        ├── ProviderTimeout           no answer within the timeout
        └── ProviderResponseError     5xx, a stream cut mid-way, malformed data
            └── ProviderQuotaExhausted    429 insufficient_quota: no credit left, waiting won't help

Messages are one line and say what to check. They never contain secrets.
"""

from __future__ import annotations

from enum import Enum, IntEnum
from typing import Any


class ExitCode(IntEnum):
    """Every exit code chatmem uses (RELIABILITY.md has the table with examples)."""

    OK = 0
    ERROR = 1
    """The model could not answer (ProviderError), no such session/turn/fact (NotFound),
    a damaged file, a piped script with a failed turn, or a replay or eval in which a
    strategy's memory updates failed (MemoryBehind: its figures are shown, without them)."""
    USAGE = 2
    """An invalid request (option, value, name, config, transcript) or a history file that
    cannot be used (not chatmem's, newer, read-only, busy, full): nothing was changed; a
    piped script in which a slash command was refused (its other lines still ran)."""
    KEY = 3
    """The history file is encrypted and the key is missing or wrong, or key_command could
    not give it (not found, failed, timed out); nothing was changed."""
    BELOW_THRESHOLD = 1
    """`eval --min-recall`: a strategy scored below the threshold."""
    HUNG_UP = 129
    """SIGHUP (a closed terminal, a dropped ssh session) stopped `replay --save-as` or
    `sessions import`, which undid what they wrote as on Ctrl-C (128 + 1); `serve` ends on
    it once the replies under way are stored, and exits as hung up."""
    INTERRUPTED = 130
    """Ctrl-C: a cancelled reply (`ask`, or a piped script, which then stops); `chatmem mcp`
    abandoning a call whose client has gone."""
    STDOUT_CLOSED = 141
    """Whatever read stdout left before the output was written (`| head`): quietly, as a
    command killed by SIGPIPE (128 + 13) such as git or cat, table and JSON alike; a chat
    reply so cut says in one line that its turn is stored (ReplyNotShown)."""
    TERMINATED = 143
    """SIGTERM (`kill`) stopped `replay --save-as` or `sessions import`, which undid what
    they wrote as on Ctrl-C (128 + 15)."""


class Listed(Enum):
    """A kind of name a front end can list, so an error about one not known says where
    to look (`chatmem sessions list`, `/sessions`)."""

    SESSIONS = "sessions"
    STRATEGIES = "strategies"


class ChatmemError(Exception):
    exit_code: ExitCode = ExitCode.ERROR
    listed: Listed | None = None
    """The kind of name the error is about when it is a name not known (no such session):
    a front end adds the command of its own that lists them."""

    def __init__(self, message: str, *, listed: Listed | None = None) -> None:
        super().__init__(message)
        self.message = message
        if listed is not None:
            self.listed = listed

    def __str__(self) -> str:
        return self.message


class UsageError(ChatmemError):
    exit_code = ExitCode.USAGE


class EmptyInput(UsageError):
    """A turn's input holds no text (empty, or spaces only): nothing is sent or stored."""

    def __init__(self) -> None:
        super().__init__("nothing to ask (empty input)")


class OverBudget(UsageError):
    """The input's fixed parts (system prompt, files, input) and the chat format alone exceed
    the budget, so nothing was sent; render/errors.py words it with the numbers, and the way
    to raise the budget: the strategy's `budget_params` (`max_tokens`), and the context_budget
    setting when it limits too (`context_budget_too`) or they are none."""

    def __init__(self, fixed: tuple[tuple[str, int], ...], priming: int, budget: int, *,
                 strategy: str = "", budget_params: tuple[str, ...] = (),
                 context_budget_too: bool = False,
                 files: tuple[tuple[str, int], ...] = ()) -> None:
        self.fixed = fixed
        self.files = files  # (name, tokens) of each attached file, largest first
        self.priming = priming
        self.budget = budget
        self.strategy = strategy
        self.budget_params = budget_params
        self.context_budget_too = context_budget_too
        super().__init__(f"not sent: {self.total:,} tokens before any history, over the "
                         f"context budget of {budget:,}")

    @property
    def total(self) -> int:
        return sum(tokens for _, tokens in self.fixed) + self.priming


class ConfigError(UsageError):
    pass


class WrongThread(UsageError):
    """A history used on a thread other than the one that opened it: a program embedding
    chatmem broke the rule its Workspace states (SQLite's connection refuses another thread;
    PostgreSQL's would interleave two threads' transactions)."""

    def __init__(self, location: str) -> None:
        super().__init__(
            f"{location}: used on a thread other than the one that opened it: a Workspace, "
            "its history and the conversations opened from it belong to one thread (open "
            "a Workspace on each thread; a ModelPool shares the models between them)")
        self.location = location


class RequestError(UsageError):
    """A request to `chatmem serve` chatmem cannot take as a turn; `param` names the field
    (OpenAI's error shape has one)."""

    def __init__(self, message: str, param: str | None = None, *,
                 listed: Listed | None = None, code: str | None = None) -> None:
        super().__init__(message, listed=listed)
        self.param = param
        self.code = code
        """OpenAI's error code for it, where OpenAI has one (`context_length_exceeded`):
        clients match on it."""


class StrategyError(UsageError):
    pass


class UndeclaredParam(TypeError):
    """A strategy's OPTIONS dataclass holds a field not declared with param(): found as the
    class is defined, so while its plugin imports, where it read as an import failure.
    A TypeError, not a ChatmemError: it is the plugin author's to mend, and the plugin
    registry words it as a refusal of what the plugin registers."""


class RepeatedStrategy(StrategyError):
    """A replay, an eval or a comparison was given the same strategy (name and parameters)
    twice; each front end names how strategies are given to it."""

    def __init__(self, label: str, first: str | None = None) -> None:
        self.label = label
        self.first = first if first != label else None
        """The label the same strategy was given first under (`window` for `window:k=5`)."""
        said = (f"{self.first} and {label} are the same strategy" if self.first
                else f"{label} is given twice")
        super().__init__(f"each strategy must differ: {said}")


class StrategyGone(StrategyError):
    """Session `session` keeps its memory with `strategy`, which no installed plugin provides
    now; each front end names how another strategy is chosen there."""

    def __init__(self, session: str, strategy: str) -> None:
        self.session = session
        self.strategy = strategy
        super().__init__(f"{self.cause}; install it again, or go on with another (-s NAME)",
                         listed=Listed.STRATEGIES)

    @property
    def cause(self) -> str:
        return (f"session {self.session!r} keeps its memory with strategy {self.strategy!r}, "
                "which no installed plugin provides now")


class TranscriptError(UsageError):
    pass


class ProfileFactClash(UsageError):
    """A live profile fact an import or a copy brings (`given`) whose key `user`'s profile
    holds live with another value (`held`): nothing is written. The way on, a command, is
    worded where commands are (render.errors)."""

    def __init__(self, user: str, key: str, held: str, given: str, *, source: str,
                 here: str, copying: bool) -> None:
        self.user, self.key, self.held, self.given = user, key, held, given
        self.source, self.here = source, here
        self.verb = "copy" if copying else "import"
        super().__init__(f"user {user}'s profile {here} has {key!r} already ({held!r}),"
                         f" {source} {given!r}; forget one and {self.verb} again")


class ReplaceRefusal(Enum):
    """Why a turn cannot be sent again (only the last completed turn nothing was built on)."""

    NOT_COMPLETED = "not completed"
    """It failed, was cancelled or was already replaced."""
    NOT_LAST = "not last"
    """Messages were added to the history after it."""
    SUMMARIZED = "summarized"
    """A summary covers it."""
    FACTS = "facts"
    """Facts were stated or changed in it or since: they may come from its reply."""
    STATE = "state"
    """A strategy's stored state was brought up to it (chatmem.store.state_coverage)."""
    NOT_YOURS = "not yours"
    """Another chat added it since the turn the caller meant (its own last)."""


class TurnNotReplaceable(UsageError):
    def __init__(self, message: str, *, turn: int, why: ReplaceRefusal) -> None:
        super().__init__(message)
        self.turn = turn
        self.why = why

    # Each names the turn as logs, inspect and `sessions show` number it (TurnRecord.turn):
    # a request's number is another after a cancelled reply or a /retry.
    @classmethod
    def not_yours(cls, turn: int) -> TurnNotReplaceable:
        """Turn `turn` is another chat's, added since the caller's own last turn."""
        return cls(f"turn {turn} was added by another chat since your last turn, and only"
                   " your own last turn is replaced; send your input again instead",
                   turn=turn, why=ReplaceRefusal.NOT_YOURS)

    @classmethod
    def not_completed(cls, turn: int, status: str) -> TurnNotReplaceable:
        """Turn `turn` failed, was cancelled (`status`) or was replaced already."""
        return cls(f"turn {turn} is not a completed turn in history ({status}): only one can"
                   " be sent again", turn=turn, why=ReplaceRefusal.NOT_COMPLETED)

    @classmethod
    def not_last(cls, turn: int) -> TurnNotReplaceable:
        """Messages were added to the history after turn `turn`."""
        return cls(f"turn {turn} is not the last turn in history (messages were added after"
                   " it): only that one can be replaced", turn=turn, why=ReplaceRefusal.NOT_LAST)

    @classmethod
    def in_memory(cls, turn: int, why: ReplaceRefusal, held: str) -> TurnNotReplaceable:
        """Memory holds turn `turn` (`held` says how): a fork before it asks again."""
        return cls(f"turn {turn} is already in memory ({held}); /fork SESSION --at-turn"
                   f" {turn - 1} asks again on a branch", turn=turn, why=why)


class StoreFailure(Enum):
    """What went wrong in the database, whichever driver said it (SQLite's result code,
    PostgreSQL's SQLSTATE class): a caller decides on this, never on the wording."""

    OTHER = "other"
    BUSY = "busy"
    """Another process held the write lock past the wait."""
    READ_ONLY = "read-only"
    REPLACED = "replaced"
    """The file was replaced while open: an encrypt, decrypt or new key finished meanwhile."""
    DISK = "disk"
    """The disk is full or failing."""
    CANNOT_OPEN = "cannot-open"
    CONNECTION_LOST = "connection-lost"
    TIMED_OUT = "timed-out"
    """The server cancelled a statement that ran past its statement_timeout (PostgreSQL):
    trying again meets the same limit."""
    NOT_PERMITTED = "not-permitted"
    """The database role may not do that (PostgreSQL)."""
    NO_TABLES = "no-tables"
    """The database has no chatmem tables yet and this role may not create them
    (PostgreSQL): a reading command shows an empty history."""
    NEEDS_UPGRADE = "needs-upgrade"
    """The database's tables need a migration this role may not run, not being their owner
    (PostgreSQL): the administrator who set it up opens it once with this chatmem."""
    NOT_A_DATABASE = "not-a-database"
    DAMAGED = "damaged"
    """The file is corrupt, holds text that is not UTF-8, or a row a value chatmem cannot read."""
    CONFLICT = "conflict"
    """A row breaks a constraint."""
    ERASED_MEANWHILE = "erased-meanwhile"
    """Text left the session's memory (a purge, a turn replaced) while a turn was answered:
    what that turn was sent may hold it, so it is not stored; sending it again works."""
    DRIVER = "driver"
    """Anything else the driver raised (a statement it refused)."""


HISTORY_FAULTS = frozenset({StoreFailure.DISK, StoreFailure.READ_ONLY, StoreFailure.CANNOT_OPEN,
                            StoreFailure.DAMAGED, StoreFailure.NOT_A_DATABASE})
"""A history's failures only a server's owner can mend: serve and mcp log them as well as
telling the client (who is not told where the history is)."""


class StoreError(ChatmemError):
    exit_code = ExitCode.USAGE
    default_kind = StoreFailure.OTHER

    def __init__(self, message: str, *, kind: StoreFailure | None = None,
                 location: str | None = None, reason: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind or self.default_kind
        self.location = location
        """The file's path or the database URL with its password masked (None: not known)."""
        self.reason = message if reason is None else reason
        """What the database said, without the location: what a wrapping message quotes."""

    @property
    def only_owner_mends(self) -> bool:
        """Whether only the history's owner can mend this (HISTORY_FAULTS): a server logs it."""
        return self.kind in HISTORY_FAULTS


class TurnPart(Enum):
    """What of a recorded turn is stored by reference to the session's messages."""

    CONTEXT = "context"
    RENDERED_PROMPT = "rendered prompt"


class StoredTurnNotShown(StoreError):
    """A recorded turn whose `part` showing it would not expand (store.shown_turns): not as
    chatmem stores it, or (`oversized`) naming more of the history than chatmem ever sends.
    Only showing a turn checks; running, replay and export read it as stored."""

    default_kind = StoreFailure.DAMAGED

    def __init__(self, session: str, request: int, turn: int, part: TurnPart, *,
                 oversized: bool = False) -> None:
        self.session = session
        self.request = request
        self.turn = turn
        self.part = part
        self.oversized = oversized
        why = ("names more of the history than chatmem ever sends" if oversized
               else "is not stored as chatmem stores it")
        super().__init__(f"session {session!r}, request {request:,} (turn {turn:,}): its"
                         f" {part.value} {why} (edited by hand, or by another role's SQL?),"
                         " so it is not shown; `chatmem sessions export` still reads the"
                         " messages")


class DatabaseError(StoreError):
    """A driver error the backend did not expect, as its first line: exit 1 (a bug or a
    damaged database), unlike the expected ones (busy, read-only) that exit 2."""

    exit_code = ExitCode.ERROR
    default_kind = StoreFailure.DRIVER


class StoreConflict(DatabaseError):
    """A statement broke a constraint; the store catches it where a conflict is expected."""

    default_kind = StoreFailure.CONFLICT


class NotChatmemDatabase(StoreError):
    default_kind = StoreFailure.NOT_A_DATABASE

    def __init__(self, message: str, *, newer_schema: str | None = None, **store: Any) -> None:
        super().__init__(message, **store)
        self.newer_schema = newer_schema
        """The newest migration this chatmem does not know, when a newer chatmem wrote it."""


class ReadOnlyShare(StoreError):
    """A change to a session another role shares with the user read-only. Its values, not
    only its sentence: a client (MCP, serve) is told without the CLI's way on (`sessions
    fork`), which it cannot take."""

    default_kind = StoreFailure.NOT_PERMITTED

    def __init__(self, address: str, owner: str, *, location: str | None = None,
                 nothing_sent: bool = False) -> None:
        super().__init__(f"{'nothing was sent: ' if nothing_sent else ''}session {address!r}"
                         f" is shared with you read-only by {owner}: it cannot be changed",
                         location=location)
        self.address = address
        """`OWNER/NAME`: what names it to the user (their own session may have its name)."""
        self.owner = owner


class TurnNotCommittable(StoreError):
    """A failed or cancelled turn (or one without a reply) offered to commit_turn."""

    def __init__(self, message: str, *, status: str) -> None:
        super().__init__(message)
        self.status = status


class HistoryLocked(StoreError):
    exit_code = ExitCode.KEY

    def __init__(self, message: str, *, missing: bool) -> None:
        super().__init__(message)
        self.missing = missing
        """True when no key was given (the REPL can ask for one), False when it was wrong."""


class KeyUnavailable(HistoryLocked):
    """key_command gave no key: exit 3 like any missing key, and no prompt instead
    (the config chose where the key comes from)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, missing=False)


class ConversationBusy(ChatmemError):
    """Too many calls already wait for this conversation (a server's; call again later)."""


class NotFound(ChatmemError):
    pass


class TurnNotRecorded(NotFound):
    """The session's history has turn `turn` but no context was recorded for it (it came
    in by import or fork): what another strategy would send at it can still be shown."""

    def __init__(self, session: str, turn: int) -> None:
        self.session = session
        self.turn = turn
        super().__init__(f"turn {turn} of session {session!r} was imported or forked:"
                         " no context was recorded for it")


class NoSuchTurn(NotFound):
    """The session's history has no turn `number` (`inspect --turn`, `sessions show
    --turns`): it has `count`."""

    def __init__(self, session: str, number: int, count: int) -> None:
        self.session = session
        self.number = number
        self.count = count
        super().__init__(f"session {session!r} has no turn {number}: it has {count}")


class NoSuchRequest(NotFound):
    """The session has no request `number` (`inspect --request`, logs' numbering): it has
    `count`, the last numbered `last`; render/errors.py words it with them."""

    def __init__(self, session: str, number: int, count: int, last: int) -> None:
        self.session = session
        self.number = number
        self.count = count
        self.last = last
        super().__init__(f"session {session!r} has no request {number}")


class SessionGone(NotFound):
    """The session was deleted (or stopped being shared with this role) while in use:
    `consequence` says what became of the turn. The store, which no longer finds its name,
    raises it unnamed; the engine names it (`named`)."""

    def __init__(self, name: str | None, consequence: str) -> None:
        self.name = name
        self.consequence = consequence
        session = "the session" if name is None else f"session {name!r}"
        super().__init__(f"{session} was deleted meanwhile (or is no longer shared with you):"
                         f" {consequence}")

    def named(self, name: str) -> SessionGone:
        return SessionGone(name, self.consequence)


class OutputFailed(ChatmemError):
    """Standard output cannot be written (a full disk, a closed descriptor, an I/O error):
    what was to be shown there is lost, what was stored stays. `reason`: the system's words;
    `closed`: whatever read it has gone (a broken pipe), which exits as SIGPIPE would."""

    def __init__(self, reason: str, *, closed: bool = False, message: str | None = None) -> None:
        super().__init__(message or f"cannot write to standard output ({reason})")
        self.reason = reason
        self.closed = closed
        if closed:
            self.exit_code = ExitCode.STDOUT_CLOSED


class ReplyNotShown(OutputFailed):
    """A reply that could not be written whole; its turn is recorded all the same (ok: the
    reply is complete and paid for), as turn `turn` of the session at `address` (None: a
    one-off question, kept nowhere). A chat stops here: its next replies would be lost too.
    Worded by chatmem.render.errors."""

    def __init__(self, reason: str, *, closed: bool, address: str | None,
                 turn: int | None) -> None:
        self.address = address
        self.turn = turn
        super().__init__(reason, closed=closed,
                         message=f"the reply could not be written to standard output ({reason})")


class ExtensionFailed(ChatmemError):
    """Code a strategy, a provider or an embedder runs raised an exception chatmem does not
    know (a plugin's, most likely), or returned what its contract does not allow: one line
    naming it and the exception (or the wrong value), never a traceback.
    A front end adds which plugin registered it (`chatmem.plugins.Registries.origin`)."""

    kind = "strategy"

    def __init__(self, name: str, error: BaseException | str, doing: str = "failed", *,
                 where: str | None = None) -> None:
        self.name = name
        self.cause = error if isinstance(error, str) else one_line(error)
        """The exception as one line, or what was wrong with a value it returned."""
        self.doing = doing
        said = f"{self.kind} {name!r} {doing}: {self.cause}"
        super().__init__(said if where is None else f"{where}: {said}")

    def at(self, where: str) -> ExtensionFailed:
        """The same failure said to come from `where` (a config file's key), which the
        front end still follows with the plugin to tell."""
        return type(self)(self.name, self.cause, self.doing, where=where)


class StrategyFailed(ExtensionFailed):
    kind = "strategy"
    held_in: str | None = None
    """The session holding a state stored under this name, which its owner may drop (`sessions
    reset-state`): a plugin upgraded under a session may fail on what its earlier version
    stored. None: no state held, or not the user's to drop."""


class StateRefused(StrategyFailed):
    """A strategy's `env.state.set` refused, nothing of it stored: it named another strategy's
    state (a strategy writes only its own), or a value JSON cannot store (NaN, Infinity, a
    set). The plugin's own doing, never a state an earlier version left: no `held_in`."""


class WrongParts(ChatmemError):
    """`assemble()` was given what is not a `Part` of chatmem `Message` values (a plugin's
    build, dicts as a chat API takes them): checked there, where they are first used, not as
    an AttributeError from deep inside; `build_guarded` says it as StrategyFailed naming the
    strategy. `wrong`: what was given, as `wrong_context` words a returned value."""

    def __init__(self, wrong: str, *, parts: bool = True) -> None:
        self.wrong = wrong
        self.parts = parts  # False: not a part but another argument (the budget)
        super().__init__(f"assemble() was given {wrong}")


class EmbedderFailed(ExtensionFailed):
    kind = "embedder"


def one_line(error: BaseException) -> str:
    """`KeyError: 'boom'`: an exception's type and its message, on one line."""
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class ProviderError(ChatmemError):
    status: int | None = None
    """The HTTP status the model's server answered with, when it answered with one (a
    front end that relays the model says it without the server's own words)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        if status is not None:
            self.status = status


class NoModelAvailable(ProviderError):
    pass


class NoModelAtAll(NoModelAvailable):
    """Nothing names a model and none is installed: the front end lists the ways to get one."""


class ProviderAuthError(ProviderError):
    pass


class ModelFrom(Enum):
    """Where the model a turn ran on came from, as a front end words a failure of it."""

    NAMED = "named"
    """Chosen for this run: --model, -m, CHATMEM_MODEL, a template, /model, a request's."""
    SESSION = "session"
    """The session resumed: the model its latest turn ran on."""
    CONFIGURED = "configured"
    """The config file's, or the default."""


class ProviderNotFound(ProviderError):
    """The model's server has no such model (404)."""

    model_from: ModelFrom | None = None
    """Where the model came from, when the engine that ran it knows: a session's latest model
    no longer offered is told apart from one the user named."""
    session: str | None = None
    """The session whose latest model it is (`model_from` SESSION)."""
    served: tuple[str, ...] | None = None
    """The models the server lists (`GET /models`), when it listed them at once (None: not)."""


class ProviderRateLimited(ProviderError):
    retry_after: float | None = None
    """Seconds the model's server asked to wait (its Retry-After), when it said: `serve`
    passes it on, so its client waits as long rather than ask (and fail) again at once."""

    def __init__(self, message: str, *, status: int | None = None,
                 retry_after: float | None = None) -> None:
        super().__init__(message, status=status)
        self.retry_after = retry_after


class ProviderConnectionError(ProviderError):
    pass


class ProbesUnanswered(ChatmemError):
    """`eval --answer`: the model gave no answer to some probes (the report, printed, scores
    the others and says each error)."""


class MemoryBehind(ChatmemError):
    """`replay` or `eval`: a strategy's memory updates (its summary, facts or state) failed,
    so its figures, printed, are of a memory that did not keep up (each notice says why)."""


class ProviderTimeout(ProviderError):
    pass


class ProviderResponseError(ProviderError):
    pass


class ProviderQuotaExhausted(ProviderResponseError):
    """429 `insufficient_quota`: the account behind the model's key has no credit left.
    No rate limit (waiting does not end it); `serve` answers its client as OpenAI would."""


class ProviderRefusedRequest(ProviderResponseError):
    """The model's server refused the request itself (400): a field it does not take, a
    value out of range. A client of `chatmem serve` who sent that field is told the server's
    own words (`detail`, credentials masked) and the field it names (`param`)."""

    def __init__(self, message: str, *, detail: str, param: str | None = None) -> None:
        super().__init__(message, status=400)
        self.detail = detail
        self.param = param


class ProviderFailed(ExtensionFailed, ProviderError):
    """A provider raised an exception other than a ProviderError: the turn is recorded as
    failed, as for any model error."""

    kind = "provider"
