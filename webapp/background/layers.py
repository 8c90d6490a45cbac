"""An in-memory channel layer that other threads may send to.

Channels' `InMemoryChannelLayer` keeps asyncio queues that belong to the server's event
loop. The embedded Celery worker runs in a thread with its own loop (through
`async_to_sync`), and a put from there would not wake the server's loop. This layer
remembers the loop that receives and runs sends from any other loop on it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from channels.layers import InMemoryChannelLayer


class ThreadSafeInMemoryChannelLayer(InMemoryChannelLayer):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._home: asyncio.AbstractEventLoop | None = None

    async def receive(self, channel: str) -> Any:
        self._home = asyncio.get_running_loop()
        return await super().receive(channel)

    async def group_add(self, group: str, channel: str) -> None:
        self._home = asyncio.get_running_loop()
        await super().group_add(group, channel)

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        await self._on_home(super().send(channel, message))

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        await self._on_home(super().group_send(group, message))

    async def _on_home(self, call: Coroutine[Any, Any, None]) -> None:
        home = self._home
        if home is None or home is asyncio.get_running_loop() or home.is_closed():
            await call
            return
        if not home.is_running():
            await call  # no waiter to wake on a stopped loop; queue the message here
            return
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(call, home))
