"""A realistic support channel for the admin page: a few hundred memories (a handful about
the questions asked, the rest a team's everyday notes) and ten turns that come back to the
same topics, so turns show cooldowns, near-duplicates and many floor cuts."""

from __future__ import annotations

from bench.corpus import corpus
from tests.conftest import Running
from tests.injection.helpers import inject, put

AGENT = "support-bot"
CHANNEL = "support-billing-7731"
FACTS = [
    "The billing service stores invoices in PostgreSQL 16 on the primary cluster.",
    "Billing keeps its invoices in a PostgreSQL 16 database on the primary cluster.",
    "Invoices are rendered to PDF by the invoice-renderer worker, which retries three times.",
    "Refunds above 500 EUR need a second approval from the finance team.",
    "The customer Acme Corp is on the Enterprise plan with a 99.9% uptime SLA.",
    "Acme Corp's account manager is Priya; escalate billing disputes to her.",
    "Card payments go through Stripe; SEPA transfers are reconciled every night at 02:00.",
    "The nightly reconciliation job failed twice last week because of a Stripe API timeout.",
    "Customers can download past invoices from Settings > Billing > History.",
    "VAT is charged by the customer's billing country, not the shipping address.",
    "The support team answers billing tickets within 4 business hours.",
    "Prefer short answers with a link to the help centre article when one exists.",
]
QUESTIONS = [
    "Hi, Acme Corp here: where can I download last month's invoice?",
    "The PDF of invoice 2291 never arrived, is the renderer broken?",
    "Which database do you keep our invoices in? Our auditors ask.",
    "Can you refund 800 EUR for the duplicate charge on our card?",
    "Who is our account manager if this dispute goes further?",
    "Why was our SEPA transfer not reconciled yesterday?",
    "Do you charge VAT based on our office in Berlin or the warehouse in Lyon?",
    "Again, where do we find the invoice history?",
    "What uptime do we have in our contract?",
    "Thanks! How fast do you usually answer billing tickets?",
]
FILLER = 300


def fill(live: Running) -> None:
    """The memories: the facts, then the team's notes (shared, not the agent's)."""
    for text in FACTS:
        put(live, text, agent_id=AGENT)
    for text in corpus(FILLER):
        put(live, text, agent_id=AGENT)


def converse(live: Running) -> None:
    for text in QUESTIONS:
        inject(live, text, channel=CHANNEL, agent_id=AGENT)
