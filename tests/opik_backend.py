"""Opik's backend stood in by what the opik wheel ships: its local emulator message processor.

As Opik's own SDK tests do, the online streamer is built around an in-memory processor, so
traces, spans and feedback scores are recorded locally and nothing reaches the network.
"""
from __future__ import annotations

import contextlib
from typing import Iterator
from unittest import mock

import opik
from opik.api_objects import opik_client
from opik.message_processing import streamer_constructors
from opik.message_processing.emulation.local_emulator_message_processor import (
    LocalEmulatorMessageProcessor,
)
from opik.message_processing.processors import message_processors


@contextlib.contextmanager
def emulated_backend() -> Iterator[LocalEmulatorMessageProcessor]:
    """Patch Opik so every message lands in the returned emulator instead of a server."""
    emulator = LocalEmulatorMessageProcessor(active=True)
    original = streamer_constructors.construct_online_streamer

    def construct(**kwargs):
        kwargs["message_processor"] = message_processors.ChainedMessageProcessor([emulator])
        return original(**kwargs)

    opik_client.reset_global_client()
    with mock.patch.object(streamer_constructors, "construct_online_streamer", construct):
        try:
            yield emulator
        finally:
            opik.flush_tracker()
            opik_client.reset_global_client()
