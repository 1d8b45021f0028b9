"""Deterministic synthetic memory text (~30 words each) for benchmarks."""

from __future__ import annotations

import random

SUBJECTS = ["the auth service", "our billing pipeline", "Alice", "the mobile app",
            "the data team", "the staging cluster", "Bob", "the search index",
            "the onboarding flow", "the CI runner",
            "the marketing site", "the Postgres replica", "the support queue", "the release train"]
VERBS = ["decided to migrate", "reported a regression in", "prefers to review",
         "wants to deprecate", "finished refactoring", "scheduled maintenance for",
         "measured the latency of",
         "documented the API of", "rolled back", "added monitoring to", "asked about the cost of"]
OBJECTS = ["JWT refresh tokens", "the nightly export job", "rate limiting at the gateway",
           "Redis caching for sessions", "the invoice PDF renderer", "feature flags",
           "the GraphQL schema", "image thumbnails", "the retry policy", "TLS certificates",
           "the vector search backend", "timezone handling", "the audit log", "push notifications"]
TAILS = ["because customers complained last week", "after the incident on Tuesday",
         "before the end of the quarter", "so that on-call gets fewer pages",
         "while keeping backwards compatibility", "since the vendor raised prices",
         "to unblock the mobile release", "as agreed in the planning meeting",
         "and will report back on Friday", "pending approval from security"]


def memory_text(rng: random.Random) -> str:
    parts = [
        f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(VERBS)} {rng.choice(OBJECTS)}",
        rng.choice(TAILS),
        f"and noted that {rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}",
        f"ticket {rng.randint(100, 99999)}",
    ]
    return " ".join(parts) + "."


def corpus(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [memory_text(rng) for _ in range(n)]
