"""Schemathesis over the served OpenAPI document: generated valid and invalid requests never get a 500, and every
answer matches the documented status codes, content types and schemas.

(Schemathesis' pytest plugin does not run under pytest 9, so the operations are driven through Hypothesis here.)
"""

from __future__ import annotations

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis.errors import Unsatisfiable  # noqa: E402
from schemathesis.generation import GenerationMode  # noqa: E402
from schemathesis.specs.openapi.checks import positive_data_acceptance  # noqa: E402

from tests.api.conftest import ADMIN_KEY, READ_KEY  # noqa: E402

pytestmark = pytest.mark.slow

MAX_EXAMPLES = 20


@pytest.fixture(scope="module")
def api_schema(kb_dirs, default_embedder):
    from culturekb.api import create_app

    app = create_app(kb_dirs["main"], embedder=default_embedder, read_keys=[READ_KEY], admin_keys=[ADMIN_KEY],
                     max_batch=32)
    return schemathesis.openapi.from_asgi("/openapi.json", app)


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["valid", "invalid"])
def test_fuzz_every_operation(api_schema, mode):
    operations = [result.ok() for result in api_schema.get_all_operations()]
    labels = {op.label for op in operations}
    assert {"POST /v1/lookup", "POST /v1/augment", "GET /v1/concepts/{culture}/{concept}",
            "POST /v1/admin/reload", "GET /readyz"} <= labels
    failures: list[str] = []
    for op in operations:
        @given(case=op.as_strategy(generation_mode=mode))
        @settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        def run(case):
            # positive_data_acceptance is left out: a schema-valid culture name that is not in the KB is a 422
            case.call_and_validate(headers={"Authorization": f"Bearer {ADMIN_KEY}"},
                                   excluded_checks=[positive_data_acceptance])

        try:
            run()
        except Unsatisfiable:
            assert mode == GenerationMode.NEGATIVE  # an operation without parameters has no invalid requests
        except BaseException as exc:  # noqa: BLE001 - collect every operation's failure, then report them together
            if isinstance(exc, KeyboardInterrupt):
                raise
            failures.append(f"{op.label}: {str(exc)[:3000]}")
    assert not failures, "\n\n".join(failures)
