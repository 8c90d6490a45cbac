"""The RL page's live curve rides the work websocket: a viewer receives the rows of each
update batch as the training reports them; an outsider is refused (4404, as for a missing
record)."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from webapp.asgi import application
from webapp.background.services import run_work
from webapp.planning.services import start_planning
from webapp.rltraining import services

pytestmark = pytest.mark.django_db(transaction=True)


async def _socket(client: Any, user: Any, work_id: int) -> WebsocketCommunicator:
    await client.aforce_login(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    return WebsocketCommunicator(application, f"/ws/work/{work_id}/",
                                 headers=[(b"cookie", cookie), (b"origin", b"http://localhost")])


async def test_curve_rows_stream_to_viewers_and_outsiders_are_refused(
    client: Any, personas: Any, profiled: Any, cluster: Any
) -> None:
    def start() -> Any:
        planning = start_planning(personas.member, profiled.model, cluster, 50_000, ["exact"])
        return services.start_training(personas.member, planning, budget_s=3, max_updates=6,
                                       samples=8)

    run = await database_sync_to_async(start)()
    work_id = run.work_id
    outsider = await _socket(client, personas.outsider, work_id)
    assert await outsider.connect() == (False, 4404)
    await outsider.disconnect()

    socket = await _socket(client, personas.viewer, work_id)
    assert (await socket.connect())[0]
    assert (await socket.receive_json_from(timeout=5))["work"]["status"] == "queued"
    # The task body: progress goes through report_progress, published after each commit.
    await database_sync_to_async(run_work)(work_id)
    seen: list[dict[str, Any]] = []
    while True:
        work = (await socket.receive_json_from(timeout=5))["work"]
        seen.extend(work["metrics"].get("rows", []))
        if work["finished"]:
            break
    await socket.disconnect()
    assert work["status"] == "succeeded"
    # Events may repeat rows (the final state carries the last batch again); none is missing.
    assert sorted({row["update"] for row in seen}) == list(range(1, 7))
