"""/edit-last at the interactive prompt: what is typed there means what it means anywhere."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_repl_input import make_repl, shows, tty, typing  # noqa: F401  (the fixture)

KILL_LINE = "\x15"  # Ctrl-U: the line typed so far is cleared


def test_a_slash_command_typed_over_the_edit_runs_and_the_last_turn_stays(
    tmp_path: Path, tty: None, capsys: pytest.CaptureFixture[str]  # noqa: F811
) -> None:
    store, repl = make_repl(tmp_path / "e.db")
    with store:
        repl.turn("我们五月去杭州")
        capsys.readouterr()
        with typing(repl, "/edit-last\r", shows("我们五月去杭州"), KILL_LINE, shows(""),
                    "/strategy window k=2\r") as lines:
            assert next(lines) == "/edit-last"
            repl.command("/edit-last")
        # The command ran: the strategy changed, its line was printed…
        assert repl.engine.strategy.params == {"k": 2}
        assert "strategy: window k=2" in capsys.readouterr().err
        # …and nothing went to the model: the last turn is as it was, not replaced.
        session_id = repl.engine.session.id
        assert [(t.input, t.status, t.superseded_by) for t in store.turns.turns(session_id)] == [
            ("我们五月去杭州", "ok", None)]
        with typing(repl, "/edit-last\r", shows("我们五月去杭州"), KILL_LINE, shows(""),
                    "/nosuch\r") as lines:
            assert next(lines) == "/edit-last"
            with pytest.raises(Exception, match="unknown command /nosuch"):
                repl.command("/edit-last")
        assert len(store.turns.turns(session_id)) == 1


CTRL_C, CTRL_D = "\x03", "\x04"


@pytest.mark.parametrize("key", [CTRL_C, CTRL_D])
def test_ctrl_c_or_ctrl_d_in_the_edit_says_nothing_was_sent(
    tmp_path: Path, tty: None, capsys: pytest.CaptureFixture[str], key: str  # noqa: F811
) -> None:
    """Ctrl-C in /edit-last's line said only "(interrupted)"; Ctrl-D on the emptied line
    ended the chat with "aborted" and exit 1. Both say the edit is cancelled and the turn
    stands; Ctrl-D then leaves, as it does at the prompt."""
    from chatmem.repl.table import QuitRepl

    store, repl = make_repl(tmp_path / "e.db")
    with store:
        repl.turn("我们五月去杭州")
        capsys.readouterr()
        steps = [" 和苏州", shows("我们五月去杭州 和苏州")] if key == CTRL_C else [
            KILL_LINE, shows("")]
        with typing(repl, "/edit-last\r", shows("我们五月去杭州"), *steps, key) as lines:
            assert next(lines) == "/edit-last"
            if key == CTRL_D:
                with pytest.raises(QuitRepl):
                    repl.command("/edit-last")
            else:
                repl.command("/edit-last")
        said = capsys.readouterr().err
        assert "cancelled" in said and "turn 1" in said and "nothing was sent" in said
        session_id = repl.engine.session.id
        assert [(t.input, t.status, t.superseded_by) for t in store.turns.turns(session_id)] == [
            ("我们五月去杭州", "ok", None)]
