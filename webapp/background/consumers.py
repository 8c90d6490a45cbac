"""Websocket: live state of one background-work record at /ws/work/<id>/.

Every message is a typed event (`background.events`): the current state on connect, then a
`work.status` event per change. Permission is checked on connect and again on every event,
so a member who is removed stops receiving updates at once. Anonymous users and outsiders
are refused alike (close code 4404), which tells an outsider nothing about whether the
record exists.
"""

from __future__ import annotations

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from webapp.background import events
from webapp.background.models import Work
from webapp.background.services import group_name, state
from webapp.projects.permissions import ROLE_ACTIONS, Action, AnyUser, can

CLOSE_NOT_FOUND = 4404


class WorkConsumer(AsyncJsonWebsocketConsumer):
    work_id: int

    async def connect(self) -> None:
        self.work_id = int(self.scope["url_route"]["kwargs"]["work_id"])
        # Join before reading the state: an event published in between is then
        # delivered, never lost (at worst a client sees one state twice).
        await self.channel_layer.group_add(group_name(self.work_id), self.channel_name)
        current = await self._visible_state()
        if current is None:
            await self.channel_layer.group_discard(group_name(self.work_id), self.channel_name)
            await self.close(code=CLOSE_NOT_FOUND)
            return
        await self.accept()
        # The current state first, so a reloaded page is right before the next event.
        await self.send_json(events.work_status(current))

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "work_id"):
            await self.channel_layer.group_discard(group_name(self.work_id), self.channel_name)

    async def work_status(self, event: events.WorkStatus) -> None:
        if not await self._allowed():
            await self.close(code=CLOSE_NOT_FOUND)
            return
        await self.send_json(event)

    @database_sync_to_async
    def _visible_state(self) -> events.WorkState | None:
        work = Work.objects.filter(pk=self.work_id).first()
        if work is None or not can(self._user(), work.project_id, Action.VIEW):
            return None
        return state(work)

    @database_sync_to_async
    def _allowed(self) -> bool:
        # One query per event and viewer (the record's project and the viewer's role in
        # it, joined): 100 viewers of records advancing every second made the two
        # separate lookups the server's main cost.
        user = self._user()
        if not user.is_authenticated:
            return False
        role = (Work.objects.filter(pk=self.work_id, project__memberships__user_id=user.pk)
                .values_list("project__memberships__role", flat=True).first())
        return role is not None and Action.VIEW in ROLE_ACTIONS[role]

    def _user(self) -> AnyUser:
        user: AnyUser = self.scope["user"]
        return user
