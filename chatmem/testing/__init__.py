"""The strategy contract, for a plugin author's own tests (and chatmem's: one copy).

    from chatmem.testing import check_strategy

    def test_notes_keeps_chatmem_s_contract():
        check_strategy("notes")

`check_strategy(name)` runs the installed strategy `name` through chatmem's engine over
generated English, Chinese and mixed conversations, alone and as `NAME+window`, and raises
AssertionError at the first rule broken (README: What a strategy is). For a finer grain,
`run_conversation(name, conversation, folder)` runs one conversation (a `Conversation`, a
typed dict), `conversations()` is
the Hypothesis strategy that generates them and `contract_settings(n)` the settings
chatmem draws them with. Needs Hypothesis: the `testing` extra
(`pip install -e '.[testing]'` in the chatmem checkout) brings it.
"""

from __future__ import annotations

from chatmem.testing.contract import Conversation, run_conversation
from chatmem.testing.conversations import (
    OPENED_BY_THE_ASSISTANT,
    check_strategy,
    contract_settings,
    conversations,
)

__all__ = ["OPENED_BY_THE_ASSISTANT", "Conversation", "check_strategy", "contract_settings",
           "conversations", "run_conversation"]
