"""A 16-turn coding-agent conversation over 40 memories, driven like the Go example
(PruneHistory -> Inject -> append), with the default config: at every turn the memory the
turn is about is in front of the model (in the new block or in a block still held), and
nothing still held is repeated."""

from __future__ import annotations

import pytest
from memsidecar.v1 import injection_pb2 as inj

from tests.injection.conftest import Serve
from tests.injection.helpers import ids, inject, put

MEMORIES = {
    "auth": "Authentication uses short-lived JWT access tokens signed with RS256.",
    "auth-refresh": "JWT refresh tokens are rotated on every use and stored hashed.",
    "auth-sso": "Single sign-on for employees goes through Okta with SAML.",
    "auth-lockout": "Accounts lock for 15 minutes after 5 failed password attempts.",
    "db": "The main database is PostgreSQL 16 with the pgvector extension.",
    "db-migrations": "Database migrations are written with Alembic, one per pull request.",
    "db-pool": "Database connections go through PgBouncer in transaction pooling mode.",
    "db-backup": "PostgreSQL backups run nightly with pgBackRest to S3.",
    "deploy": "Deploys run on GitHub Actions and ship to Kubernetes with Helm charts.",
    "deploy-window": "Production deploys are frozen on Fridays after 2pm.",
    "deploy-rollback": "A bad deploy is rolled back with helm rollback to the previous release.",
    "deploy-canary": "Every deploy goes to a 5 percent canary for 20 minutes first.",
    "tests": "Unit tests use pytest; run them with make test before pushing.",
    "tests-coverage": "Pull requests need 85 percent test coverage on changed lines.",
    "tests-fixtures": "Test fixtures that need a database use a throwaway Docker Postgres.",
    "tests-flaky": "Flaky tests are quarantined with the @flaky marker and a ticket.",
    "logging": "Logs are structured JSON via structlog, shipped to Loki.",
    "logging-levels": "Log at INFO in production; DEBUG logging is never enabled in prod.",
    "logging-pii": "Never log email addresses or tokens; the log filter masks them.",
    "style": "Python code is formatted with ruff format at line length 100.",
    "style-types": "All new Python code must pass mypy in strict mode.",
    "style-imports": "Imports are sorted by ruff; no wildcard imports.",
    "api": "The public REST API is versioned in the URL path, like /v2/invoices.",
    "api-pagination": "REST API list endpoints paginate with opaque cursor tokens.",
    "api-errors": "REST API errors follow RFC 7807 problem+json.",
    "api-ratelimit": "The public API rate limit is 100 requests per minute per key.",
    "frontend": "The frontend is React 18 with TypeScript and Vite.",
    "frontend-state": "Frontend server state is managed with TanStack Query.",
    "frontend-css": "Frontend styling uses Tailwind CSS; no CSS-in-JS.",
    "queue": "Background jobs run on Celery with Redis as the broker.",
    "queue-retries": "Celery tasks retry 3 times with exponential backoff.",
    "cache": "Redis caches rendered invoice PDFs for 24 hours.",
    "search": "Full-text search over invoices uses OpenSearch 2.",
    "secrets": "Secrets live in HashiCorp Vault; never commit them to git.",
    "oncall": "The on-call rotation changes every Monday at 10am.",
    "oncall-pager": "Pages go through PagerDuty; acknowledge within 5 minutes.",
    "review": "Every pull request needs one approving code review.",
    "review-size": "Keep pull requests under 400 changed lines.",
    "branches": "Branch names follow type/short-description, like fix/invoice-rounding.",
    "release": "Releases are tagged with semantic versions like v3.14.0.",
}

# (turn text, the memory it is about)
TURNS = [
    ("How do we do authentication with JWT access tokens?", "auth"),
    ("Which database do we use, PostgreSQL?", "db"),
    ("How do deploys to Kubernetes work?", "deploy"),
    ("How do I run the unit tests with pytest?", "tests"),
    ("Where do the structured JSON logs go?", "logging"),
    ("What formatter and line length do we use for Python code?", "style"),
    ("Remind me how JWT authentication tokens are signed?", "auth"),
    ("How are REST API versions put in the URL?", "api"),
    ("Is the main PostgreSQL database using pgvector?", "db"),
    ("And deploys again: GitHub Actions with Helm to Kubernetes?", "deploy"),
    ("What frontend framework, React?", "frontend"),
    ("Background jobs: Celery with Redis?", "queue"),
    ("Back to unit tests: pytest and make test?", "tests"),
    ("Where do secrets live, Vault?", "secrets"),
    ("Once more, how are JWT access tokens signed for authentication?", "auth"),
    ("Which database again, PostgreSQL 16?", "db"),
]


@pytest.mark.parametrize("tell", [False, True])
def test_sixteen_turns_relevant_memory_always_in_view(serve: Serve, tell: bool) -> None:
    """``tell``: PruneHistory names the channel; without it the configured K is assumed."""
    live = serve()  # defaults: max_injected_blocks_in_history = 3
    key_of = {put(live, content).id: key for key, content in MEMORIES.items()}
    history: list[tuple[inj.Message, set[str]]] = []
    came_back = []
    for n, (text, about) in enumerate(TURNS, start=1):
        pruned = live.injection.PruneHistory(inj.PruneHistoryRequest(
            messages=[m for m, _ in history], channel_id="chat" if tell else ""))
        gone = set(pruned.removed_indices)
        history = [h for i, h in enumerate(history) if i not in gone]
        held = set().union(*(keys for _, keys in history))
        reply = inject(live, text, channel="chat")
        injected = {key_of[i] for i in ids(reply)}
        assert not injected & held, (n, injected & held)  # nothing in view is repeated
        assert about in injected | held, (n, text, sorted(injected))
        if about in injected and any(about == a for _, a in TURNS[: n - 1]):
            came_back.append(n)
        if reply.block:
            history.append((inj.Message(role=inj.ROLE_USER, content=reply.block), injected))
        history += [(inj.Message(role=inj.ROLE_USER, content=text), set()),
                    (inj.Message(role=inj.ROLE_ASSISTANT, content=f"answer {n}"), set())]
    # the revisits after the first blocks were pruned got their memory again
    assert {7, 9, 10, 13, 15, 16} <= set(came_back), came_back
