"""A project of traces on the REST stand-in, logged through the real SDK: captions with references,
some without one, some damaged (output not text, no output, a reference that is a number)."""
from __future__ import annotations

import pytest
from opik.api_objects import opik_client

from tests.opik_rest_server import OpikRestServer

PROJECT = "captions"
CAPTIONS = [("a cat sits on the mat", "a cat is sitting on the mat"),
            ("two dogs run in the park", "two dogs are running through a park"),
            ("a man rides a red bike", "a man riding a red bicycle"),
            ("a bowl of fruit on a table", "fruit in a bowl on the table"),
            ("children play football", "kids playing soccer on grass"),
            ("a plane in the blue sky", "an airplane flying in a clear sky")]


@pytest.fixture
def server(monkeypatch):
    with OpikRestServer() as srv:
        monkeypatch.setenv("OPIK_URL_OVERRIDE", srv.url)
        opik_client.reset_global_client()
        yield srv


@pytest.fixture
def client(server):
    import opik
    return opik.Opik(project_name=PROJECT)


def log_project(client, n: int = 24) -> dict[str, dict]:
    """``n`` traces: every 6th without a reference, #7 with a dict output, #11 without output,
    #13 with a numeric reference; trace id -> what was logged."""
    logged = {}
    for k in range(n):
        caption, reference = CAPTIONS[k % len(CAPTIONS)]
        caption = f"{caption} {k}"
        output = {"output": caption}
        metadata = {"reference": f"{reference} {k}"} if k % 6 else {}
        if k == 7:
            output = {"output": {"text": caption}}
        if k == 11:
            output = {"other": caption}
        if k == 13:
            metadata = {"reference": 13}
        trace = client.trace(name="caption", input={"image": f"img{k}.jpg"}, output=output, metadata=metadata,
                             tags=["prod" if k % 2 else "canary"], project_name=PROJECT)
        logged[trace.id] = {"k": k, "output": output, "metadata": metadata}
    client.flush()
    return logged
