"""Caller strings that hold bidi controls (U+202E RIGHT-TO-LEFT OVERRIDE, the isolates) are
valid ids and text, but on the admin pages they must not reorder what follows them: each is
shown in a <bdi> of its own, with its reordering characters as escapes (``\\u202e``), while
form fields and links keep the exact value."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import parse_qs, quote, urlencode, urlsplit

from tests.admin.conftest import Site
from tests.admin.test_admin_scopes import get
from tests.injection.helpers import inject, put

# RLO first: sorted before the second agent, so the old page printed it just before that one.
REVERSER = "ops\u202eredro"
SECOND = "zeta-agent"
USER = "u\u2067ana"  # an unclosed first-strong isolate
CHANNEL = "chan\u202enepo"
CONTENT = "The invoice total is \u202e0001 EUR, due Friday"
REORDERING = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
VOID = {"br", "input", "meta", "img", "hr", "link"}


class Texts(HTMLParser):
    """Every text node with the element it sits in; every attribute value."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []
        self.texts: list[tuple[str, str]] = []  # (the isolating element or "", text)
        self.attrs: list[tuple[str, str, str]] = []  # (element, attribute, value)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.attrs += [(tag, name, value or "") for name, value in attrs]
        if tag not in VOID:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.open:
            while self.open.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        """A text node is isolated when its element is a <bdi>, or a link in a <bdi>."""
        if data.strip():
            inner = self.open[-2:] if self.open[-1:] == ["a"] else self.open[-1:]
            self.texts.append(("bdi" if inner[:1] == ["bdi"] else "".join(inner), data))


def parsed(site: Site, path: str) -> Texts:
    status, text = get(site, path)
    assert status == 200, text
    page = Texts()
    page.feed(text)
    return page


def shown(value: str) -> str:
    return REORDERING.sub(lambda c: f"\\u{ord(c.group()):04x}", value)


def assert_isolated(page: Texts, *values: str) -> None:
    """No reordering character in any text node; each value whole, in logical order, in a
    <bdi> of its own."""
    raw = [text for _, text in page.texts if REORDERING.search(text)]
    assert not raw, raw
    for value in values:
        assert ("bdi", shown(value)) in page.texts, (value, page.texts)


def test_an_override_in_an_agent_id_reorders_nothing_after_it(site: Site) -> None:
    for agent in (REVERSER, SECOND):
        put(site.live, f"Deploys of {agent} run on Fridays", agent_id=agent)
    memory = put(site.live, CONTENT, agent_id=REVERSER, user_id=USER)
    vault = parsed(site, f"/vault?{urlencode({'scope': REVERSER})}")
    assert_isolated(vault, REVERSER, SECOND, USER)
    links = [value for tag, name, value in vault.attrs if tag == "a" and name == "href"]
    scopes = [parse_qs(urlsplit(h).query).get("scope", [""])[0] for h in links
              if h.startswith("/vault?")]
    assert REVERSER in scopes and SECOND in scopes  # the links keep the exact ids
    assert_isolated(parsed(site, "/"), REVERSER, SECOND)
    memories = parsed(site, f"/memories?{urlencode({'agent': REVERSER, 'user': USER})}")
    assert_isolated(memories, REVERSER, SECOND, USER, CONTENT)
    values = [value for tag, name, value in memories.attrs if tag == "input" and name == "value"]
    assert REVERSER in values and USER in values  # submitted again exactly as they are
    ask = {"q": "invoice total", "agent": REVERSER, "user": USER}
    search = parsed(site, f"/search?{urlencode(ask)}")
    assert_isolated(search, REVERSER, USER, CONTENT)
    assert_isolated(parsed(site, f"/memory?id={memory.id}"), REVERSER, USER, CONTENT)


def test_a_channel_and_a_query_with_overrides_on_the_injections_pages(site: Site) -> None:
    put(site.live, CONTENT, agent_id=SECOND)
    inject(site.live, f"what is the invoice total? {CHANNEL}", channel=CHANNEL, agent_id=SECOND)
    listing = parsed(site, "/injections")
    assert_isolated(listing, CHANNEL, SECOND)
    timeline = parsed(site, f"/injections?channel={quote(CHANNEL)}")
    assert_isolated(timeline, CHANNEL)
    title = [text for tag, text in timeline.texts if tag in ("title", "h1")]  # plain text
    assert all(shown(CHANNEL) in text for text in title) and len(title) == 2, title
