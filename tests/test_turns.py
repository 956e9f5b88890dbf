"""Fetching turns: a limit that holds while workers come and go, and that may change under them."""

from __future__ import annotations

import asyncio

import pytest

from archiver.turns import Turn, Turns


async def test_a_lowered_limit_holds_once_the_turns_beyond_it_end() -> None:
    turns = Turns(3)
    for _ in range(3):
        await turns.take()
    waiting = asyncio.create_task(turns.take())
    turns.set_limit(1)
    turns.give_back()
    turns.give_back()
    await asyncio.sleep(0)
    assert not waiting.done() and turns.held == 1
    turns.give_back()
    await asyncio.wait_for(waiting, 1)
    assert turns.held == 1
    turns.set_limit(2)
    await asyncio.wait_for(turns.take(), 1)
    assert turns.held == 2


async def test_a_waiter_cancelled_takes_no_turn_with_it() -> None:
    turns = Turns(1)
    await turns.take()
    first = asyncio.create_task(turns.take())
    second = asyncio.create_task(turns.take())
    await asyncio.sleep(0)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    turns.give_back()
    await asyncio.wait_for(second, 1)
    assert turns.held == 1


async def test_a_turn_ends_once() -> None:
    turns = Turns(2)
    await turns.take()
    turn = Turn(turns)
    turn.end()
    turn.end()
    assert turns.held == 0
