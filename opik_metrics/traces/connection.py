"""The Opik server a run scores on, checked before any metric or model loads: it answers its health
check and holds the project (a name it lacks is a usage error, not a run over nothing that exits 0).
Every message is in the words of scoring traces: a rerun is the way on, there is no local store."""
from __future__ import annotations

from typing import Any

from opik_metrics.experiments.opik_server import choose_backend, client_url, server_errors

#: How to go on when the server does not answer (the end of "Start the server or fix the URL (...), <this>.").
TRACES_ADVICE = "then run the same command again: nothing was read, scored or sent"


class ProjectNotFound(ValueError):
    """The server holds no project of that name: one line, exit 2 from the command line."""


def connect(project_name: str) -> Any:
    """A client of the configured Opik server, after checking that it answers and holds ``project_name``."""
    backend = choose_backend("opik", local_advice=TRACES_ADVICE)
    import opik
    with server_errors(backend.url, "connecting the Opik client"):
        client = opik.Opik(project_name=project_name)
    check_project(client, project_name)
    return client


def check_project(client: Any, project_name: str) -> None:
    """A ProjectNotFound unless the server ``client`` talks to holds project ``project_name``."""
    from opik.rest_api.core.api_error import ApiError

    url = client_url(client)
    with server_errors(url, f"looking up project {project_name!r}"):
        try:
            client.rest_client.projects.retrieve_project(name=project_name)
        except ApiError as exc:
            if exc.status_code != 404:
                raise
            where = f"the Opik server at {url}" if url else "the Opik server"
            workspace = getattr(getattr(client, "config", None), "workspace", None)
            raise ProjectNotFound(f"project {project_name!r} does not exist on {where}"
                                  + (f" (workspace {workspace!r})" if isinstance(workspace, str) else "")
                                  + ": check --project (names are case-sensitive); nothing was scored") from None
