"""A PUT of JSON serialised once, through the SDK's own transport (its HTTP client, auth and
workspace headers, gzip setting) and its own retry rules, as the SDK's bulk experiment upload
sends its bodies: the generated REST client runs every body through its models' encoder
(``jsonable_encoder``, about 35 us a feedback score), which was most of the writer thread's time.
"""
from __future__ import annotations

import gzip
import json
from typing import Any, Callable


def json_put(rest_client: Any, path: str) -> Callable[[Any], None]:
    """A function that PUTs a JSON payload to ``path`` (e.g. ``v1/private/traces/feedback-scores``)
    of the server ``rest_client`` talks to; an answer of 300 or more raises the REST client's
    ``ApiError``, after the SDK's retries of the ones it retries (5xx, 429, a lost connection)."""
    from opik import config, httpx_client
    from opik.rest_api.core.api_error import ApiError
    from opik.rest_client_configurator import retry_decorator

    transport, base_url = httpx_client.upload_transport(rest_client)
    headers = httpx_client.wrapper_headers(rest_client)
    gzipped = httpx_client.compresses_json_requests(transport, default=config.OpikConfig().enable_json_request_compression)
    level = getattr(transport, "compression_level", httpx_client.DEFAULT_COMPRESSION_LEVEL)

    def put(payload: Any) -> None:
        body = json.dumps(payload, allow_nan=False).encode("utf-8")
        if gzipped and len(body) >= httpx_client.MIN_COMPRESSED_ENTITY_BYTES:   # as OpikHttpxClient does
            body = gzip.compress(body, level)       # zlib lets the scoring thread run meanwhile

        def once() -> None:
            response = httpx_client.send_prepared_json(transport, base_url, path, body, headers=headers)
            if response.status_code >= 300:     # the body as the generated client gives it: JSON, else text
                try:
                    answer = response.json()
                except ValueError:
                    answer = response.text
                raise ApiError(status_code=response.status_code, headers=dict(response.headers), body=answer)

        retry_decorator.opik_rest_retry(once)()
    return put
