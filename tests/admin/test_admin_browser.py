"""The admin page in a real browser (chromium, scripts off) against a real sidecar."""

from __future__ import annotations

import re
from pathlib import Path

from memsidecar.v1 import memory_pb2 as m
from memsidecar.v1 import settings_pb2 as st
from memsidecar.v1 import store_pb2 as s
from playwright.sync_api import BrowserContext, Locator, Page, expect

from sidecar import __version__
from sidecar.api.server_config import ServerConfig
from sidecar.auth.config import AuthConfig
from sidecar.auth.identity import AGENT, OPERATOR
from sidecar.auth.tokens import TokenStore
from sidecar.embedding import Embedder
from tests.admin.channel import CHANNEL, QUESTIONS, converse, fill
from tests.admin.conftest import SCREENSHOT, Site, start_site
from tests.admin.screenshot import timeline
from tests.injection.helpers import inject, put

DB = "We chose PostgreSQL 16 as the main database for the billing service."
CAT = "The office cat sleeps on the windowsill every afternoon."
HOSTILE = "Deploys run nightly <img src=x onerror=alert(1)> & \"quoted\" <b>bold</b>"


def test_header_names_the_instance(site: Site, tab: Page) -> None:
    app, server = site.live.server.app, site.live.server
    for path in ("/", "/memories", "/injections?channel=none", "/no-such-page"):
        tab.goto(site.url(path))
        header = tab.locator("header #instance")
        expect(header.locator("[data-field=data]")).to_have_text(
            str(Path(app.config.data_dir).resolve()))
        expect(header.locator("[data-field=grpc]")).to_have_text(f"127.0.0.1:{server.port}")
        expect(header.locator("[data-field=version]")).to_have_text(__version__)
        expect(header.locator("[data-field=model]")).to_have_text(
            app.settings.current.embedding.model)
        expect(header.locator("[data-field=auth]")).to_have_text("off")
        expect(tab.locator("header >> text=Log out")).to_have_count(0)


def test_browse_and_search_memories(site: Site, tab: Page) -> None:
    db = put(site.live, DB, agent_id="ada")
    put(site.live, CAT, agent_id="ada")
    put(site.live, HOSTILE, agent_id="ada")
    put(site.live, "A shared note about the coffee machine.")
    tab.goto(site.url("/"))
    tab.click("main >> text=Memories")
    tab.click("main >> a:text-is('ada')")
    expect(tab.locator("table tr")).to_have_count(5)  # header + 3 of ada + 1 shared
    assert HOSTILE in tab.inner_text("main")  # shown as text, never as markup
    assert tab.locator("main img, main b:text('bold')").count() == 0
    tab.select_option("select[name=type]", "fact")
    tab.fill("input[name=channel]", "no-such-channel")
    tab.click("text=Filter")
    assert "channel=no-such-channel" in tab.url
    expect(tab.locator("main")).to_contain_text("No memories match.")
    tab.click("header >> text=Search")
    tab.fill("input[name=q]", "which database does billing use")
    tab.fill("input[name=agent]", "ada")
    tab.click("main >> button:text('Search')")
    first = tab.locator("table tr").nth(1)
    expect(first).to_contain_text(DB)
    expect(first).to_contain_text("vector #1")
    expect(first).to_contain_text("lexical #1")
    first.locator("a").click()
    expect(tab.locator("main")).to_contain_text(db.id)


def test_memory_history_forget_and_restore(site: Site, tab: Page) -> None:
    memory = put(site.live, DB, agent_id="ada")
    site.live.store.UpsertMemory(s.UpsertMemoryRequest(memory=m.Memory(
        id=memory.id, content=DB.replace("16", "17"), type=m.MEMORY_TYPE_FACT, agent_id="ada")))
    tab.goto(site.url("/memories?agent=ada"))
    tab.click(f"text={DB.replace('16', '17')}")
    history = tab.locator("table").nth(1)
    expect(history.locator("tr")).to_have_count(3)  # header + create + update
    expect(history).to_contain_text("PostgreSQL 16")
    tab.click("button:text('Forget')")
    expect(tab.locator(".ok")).to_have_text("Forgotten.")
    reply = site.live.store.GetMemory(s.GetMemoryRequest(id=memory.id, agent_id="ada"))
    assert reply.forgotten
    tab.click("button:text('Restore')")
    expect(tab.locator(".ok")).to_have_text("Restored.")
    assert not site.live.store.GetMemory(s.GetMemoryRequest(id=memory.id,
                                                             agent_id="ada")).forgotten
    expect(tab.locator("table").nth(1).locator("tr")).to_have_count(5)


def test_timeline_after_three_injects(site: Site, tab: Page) -> None:
    db = put(site.live, DB, agent_id="ada")
    put(site.live, CAT, agent_id="ada")
    questions = ["Which database does the billing service use?",
                 "Where does the office cat sleep?",
                 "Which database does the billing service use again?"]
    for text in questions:
        inject(site.live, text, channel="support-42", agent_id="ada")
    tab.goto(site.url("/"))
    tab.click("header >> text=Injections")
    tab.click("text=support-42")
    turns = tab.locator(".turn")
    expect(turns).to_have_count(3)
    expect(turns.nth(2)).to_contain_text(questions[0])  # newest first
    expect(turns.nth(2)).to_contain_text(DB)
    expect(turns.nth(2)).to_contain_text("vector #1")
    expect(turns.nth(0)).to_contain_text("cooldown")  # turn 3: the database fact is in view
    expect(turns.nth(0).locator(f"section a[href='/memory?id={db.id}']")).to_have_count(1)
    held = turns.nth(0).locator("section.held tr", has_text=DB)
    expect(held).to_contain_text("still shown by turn 1")
    # turn 3 was searched with turns 1 and 2 as its query context
    expect(turns.nth(0).locator(".context")).to_contain_text("turn 2 (terms")
    expect(turns.nth(2).locator(".context")).to_have_count(0)
    # turn 2 leaned on its context: the focus was taken around the database fact turn 1 used
    expect(turns.nth(1).locator(".focus")).to_contain_text("around")
    expect(turns.nth(1).locator(f".focus a[href='/memory?id={db.id}']")).to_have_count(1)


def scores(rows: Locator, column: int) -> list[float]:
    return [float(rows.nth(i).locator("td").nth(column).text_content() or "")
            for i in range(rows.count())]


def test_timeline_tells_each_turn_story_first(site: Site, tab: Page) -> None:
    fill(site.live)
    converse(site.live)
    tab.goto(site.url(f"/injections?channel={CHANNEL}"))
    turns = tab.locator(".turn")
    expect(turns).to_have_count(len(QUESTIONS))
    for i in range(len(QUESTIONS)):
        turn = turns.nth(i)
        if turn.evaluate("node => node.tagName") == "DETAILS":  # nothing injected: one line
            turn.locator("> summary").click()
        order = [turn.locator(f"section.{name}").count() for name in ("injected", "held")]
        assert order == [1, 1]
        heads = turn.locator("h4").all_inner_texts()
        assert heads[0].startswith("Injected") and heads[1].startswith("Held back")
        assert all(not h.startswith("Below") for h in heads[:2])
        injected = turn.locator("section.injected tr:has(td)")
        held = turn.locator("section.held tr:has(td)")
        shown = turn.locator("section.floor > table tr:has(td)")
        for rows, column in ((injected, 3), (held, 3), (shown, 3)):
            values = scores(rows, column)
            assert values == sorted(values, reverse=True)
        assert shown.count() <= 3
        collapsed = turn.locator("section.floor details.floor-more")
        if collapsed.count():
            expect(collapsed.locator("summary")).to_have_text(
                re.compile(r"^\d+ more below the floor"))
            expect(collapsed.locator("tr:has(td)").first).to_be_hidden()
            best_hidden = scores(collapsed.locator("tr:has(td)"), 3)[0]
            assert best_hidden <= scores(shown, 3)[-1]
    renderer = tab.locator("#turn-2 section.held tr", has_text="invoice-renderer worker")
    expect(renderer).to_contain_text("cooldown still shown by turn 1")
    expect(renderer.locator("a[href='#turn-1']")).to_have_count(1)
    folded = turns.locator("details.floor-more").first
    folded.locator("summary").click()
    expect(folded.locator("tr:has(td)").first).to_be_visible()
    timeline(tab, site.base, SCREENSHOT)  # as tests/admin/screenshot.py takes the README's
    assert SCREENSHOT.stat().st_size > 10_000


def test_turns_that_injected_nothing_fold_to_one_line(site: Site, tab: Page) -> None:
    """Nine quiet turns after the one that injected: at 1280x1600 that one is still on the
    screen, each quiet turn one line that opens on its story."""
    put(site.live, DB, agent_id="ada")
    put(site.live, CAT, agent_id="ada")
    question = "Which database does the billing service use?"
    for _ in range(10):
        inject(site.live, question, channel="quiet", agent_id="ada")
    tab.set_viewport_size({"width": 1280, "height": 1600})
    tab.goto(site.url("/injections?channel=quiet"))
    expect(tab.locator("main")).to_contain_text("9 turns that injected nothing folded")
    quiet = tab.locator("details.turn")
    expect(quiet).to_have_count(9)
    line = tab.locator("main h1 + form p").bounding_box()
    assert line is not None
    for i in range(9):
        box = quiet.nth(i).bounding_box()
        assert box is not None and box["height"] < 2 * line["height"], box
        expect(quiet.nth(i).locator("> summary")).to_contain_text(
            re.compile(r"^Turn \d+ · nothing injected: all_deduped · 1 held back · \d+ below "
                       r"the floor · .* · Which database"))
    injected = tab.locator("#turn-1")
    expect(injected.locator("section.injected")).to_contain_text(DB)
    box = injected.bounding_box()
    assert box is not None and box["y"] + box["height"] <= 1600  # all of it on the screen
    expect(quiet.first.locator("section.held")).to_be_hidden()
    quiet.first.locator("> summary").click()
    expect(quiet.first.locator("section.held")).to_contain_text("still shown by turn 1")


def test_settings_edit_shows_in_get_config_and_reverts(site: Site, tab: Page) -> None:
    def get_config() -> st.GetConfigResponse:
        return site.live.settings.GetConfig(st.GetConfigRequest(agent_id="ada"))

    tab.goto(site.url("/settings"))
    tab.fill("input[name=agent]", "ada")
    tab.click("main >> button:text('Show')")
    tab.fill("input[name=max_total]", "7")
    tab.select_option("select[name=ambient_enabled]", "true")
    tab.fill("input[name=pinned_types]", "todo, goal")
    tab.click("button:text('Save')")
    expect(tab.locator(".ok")).to_contain_text("max_total")
    reply = get_config()
    assert reply.memory_injection_overridden and reply.memory_injection.max_total == 7
    assert list(reply.memory_injection.pinned_types) == ["todo", "goal"]
    expect(tab.locator("tr:has(code:text-is('max_total')) .over")).to_have_count(1)
    expect(tab.locator("tr:has(code:text-is('search_limit')) .over")).to_have_count(0)
    tab.fill("input[name=max_total]", "0")  # out of range: refused as UpdateConfig refuses it
    tab.click("button:text('Save')")
    expect(tab.locator(".err")).to_contain_text("max_total")
    assert get_config().memory_injection.max_total == 7
    tab.click("button:text('Revert to the defaults')")
    expect(tab.locator(".ok")).to_contain_text("Reverted")
    reply = get_config()
    assert not reply.memory_injection_overridden and reply.memory_injection.max_total == 25


def test_vault_accept_and_dismiss(site: Site, tab: Page) -> None:
    a = put(site.live, "The deploy pipeline runs on GitHub Actions every night at 2am.",
            agent_id="ada", importance=0.9)
    b = put(site.live, "Every night at 2am, the deploy pipeline runs on GitHub Actions.",
            agent_id="ada", importance=0.5)
    tab.goto(site.url("/vault"))
    tab.click("main >> a:text-is('ada')")
    pairs, proposals = tab.locator("#pairs"), tab.locator("#proposals")
    expect(pairs.locator("tr")).to_have_count(2)
    pairs.locator("button:text('Dismiss')").click()
    expect(tab.locator(".ok")).to_have_text("Dismissed.")
    expect(tab.locator("main")).to_contain_text("No near-duplicate pairs.")
    proposal = proposals.locator("tr", has_text="NEAR_DUPLICATE")
    expect(proposal).to_contain_text(b.content)  # the less important one goes
    proposal.locator("button:text('Accept: forget it')").click()
    expect(tab.locator(".ok")).to_have_text(f"Forgot {b.id}.")
    assert site.live.store.GetMemory(s.GetMemoryRequest(id=b.id, agent_id="ada")).forgotten
    assert not site.live.store.GetMemory(s.GetMemoryRequest(id=a.id,
                                                             agent_id="ada")).forgotten


def test_login_with_auth_on(tmp_path: Path, embedder: Embedder, config: ServerConfig,
                            browser: BrowserContext, tab: Page) -> None:
    tokens = TokenStore(Path(config.data_dir))
    operator, agent = tokens.add(OPERATOR)[0], tokens.add(AGENT, "ada")[0]
    site = start_site(ServerConfig(data_dir=config.data_dir, auth=AuthConfig(enabled=True)),
                      embedder)
    try:
        tab.goto(site.url("/memories"))
        assert tab.url.endswith("/login")
        for wrong in (agent, "msk_00000000_wrong"):
            tab.fill("input[name=token]", wrong)
            tab.click("button:text('Log in')")
            expect(tab.locator(".err")).to_contain_text("not an operator token")
        tab.fill("input[name=token]", operator)
        tab.click("button:text('Log in')")
        expect(tab.locator("h1")).to_have_text("memsidecar")
        expect(tab.locator("header [data-field=auth]")).to_have_text("on")
        (cookie,) = browser.cookies()
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        assert operator not in cookie["value"]
        tab.click("header >> text=Log out")
        tab.goto(site.url("/vault"))
        assert tab.url.endswith("/login")
    finally:
        site.live.close()



def test_an_agent_id_with_an_override_does_not_reverse_the_next_one(site: Site, tab: Page
                                                                     ) -> None:
    """Rendered: on the Vault page's line of scopes, the agent after an id holding U+202E
    (RIGHT-TO-LEFT OVERRIDE) is drawn after it, left to right, and the id shows the override
    as an escape."""
    reverser, second = "ops\u202eredro", "zeta-agent"
    for agent in (reverser, second):
        put(site.live, f"Deploys of {agent} run on Fridays", agent_id=agent)
    tab.goto(site.url("/vault"))
    line = tab.locator("main p", has_text="Scopes:")
    first, after = line.locator("a").nth(0), line.locator("a").nth(1)
    expect(first).to_have_text("ops\\u202eredro")
    expect(after).to_have_text(second)
    a, b = first.bounding_box(), after.bounding_box()
    assert a is not None and b is not None
    assert b["x"] >= a["x"] + a["width"], (a, b)  # drawn after it, not inside its override
