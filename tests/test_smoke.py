from chatmem.engine import Engine


def test_two_turns_commit_four_messages(make_engine) -> None:
    engine: Engine = make_engine("window", k=1)
    engine.run_turn("my order is ORD-7731")
    result = engine.run_turn("what is my order?")
    assert result.status == "ok"
    messages = engine.store.history.messages(engine.session.id)
    assert [m.role for m in messages] == ["user", "assistant", "user", "assistant"]
    assert result.context.messages()[-1] == {"role": "user", "content": "what is my order?"}
