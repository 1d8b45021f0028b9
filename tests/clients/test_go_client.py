"""The Go selftest (clients/go/cmd/selftest): every RPC from Go against a real sidecar; a
module outside the repository built with the go.mod lines docs/clients.md gives."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from sidecar.api.server_config import ServerConfig
from sidecar.config import CONFIG_FILENAME
from sidecar.embedding import Embedder
from sidecar.memory.erasure import Erased
from sidecar.records import MemoryDraft, MemoryType
from tests.clients.agent_loops import ROOT, run
from tests.conftest import Running, start_server

DOC = ROOT / "docs" / "clients.md"


def test_selftest_passes_on_a_fresh_store_and_again(go_built: Path, running: Running) -> None:
    for _ in range(2):
        out = run(go_built / "selftest", running.target, stdin="")
        assert out.code == 0, out.stdout
        assert "FAIL" not in out.stdout
        assert out.stdout.splitlines()[-1].endswith(" ok, 0 failed")


def test_selftest_passes_against_a_sidecar_that_captures(go_built: Path, config: ServerConfig,
                                                        embedder: Embedder) -> None:
    """With capture on, the user's Inject calls leave captured memories of theirs: ForgetUser
    erases those too, and the selftest's check expects them. The background writer may or
    may not have written them when ForgetUser comes: here it has (each ForgetUser first writes
    what is pending), the case a check that expects the stored memory alone fails."""
    data = Path(config.data_dir)
    data.mkdir(parents=True)  # a config file of the data dir: the selftest's UpdateConfig keeps it
    (data / CONFIG_FILENAME).write_text('[defaults.memory_injection]\ncapture = "user"\n')
    live = start_server(config, embedder)
    app = live.server.app
    assert app.eraser is not None and app.injector.capture is not None
    drain, forget_user = app.injector.capture.drain, app.eraser.forget_user

    def captures_written_first(agent_id: str, user_id: str) -> Erased:
        drain.flush()  # the user's captured turns are memories by now
        erased.append(forget_user(agent_id, user_id))
        return erased[-1]

    erased: list[Erased] = []

    app.eraser.forget_user = captures_written_first  # type: ignore[method-assign]
    try:
        out = run(go_built / "selftest", live.target, stdin="")
    finally:
        live.close()
    assert out.code == 0, out.stdout
    assert "FAIL" not in out.stdout
    first = erased[0].counts()
    assert first["captures"] >= 1 and first["memories"] >= 2, first  # what was captured went


def test_selftest_fails_when_forget_user_leaves_a_memory(go_built: Path, running: Running
                                                         ) -> None:
    """A ForgetUser that leaves a memory of the user (one written back as it ends: a fault no
    real call produces on demand) fails the selftest's check."""
    app = running.server.app
    assert app.eraser is not None
    forget_user, left = app.eraser.forget_user, []

    def leaves_one(agent_id: str, user_id: str) -> Erased:
        erased = forget_user(agent_id, user_id)
        if not left:
            left.append(app.memories.upsert(MemoryDraft(
                content="Alice keeps her spare keys in the blue drawer.", type=MemoryType.FACT,
                agent_id=agent_id, user_id=user_id)).memory.id)
        return erased

    app.eraser.forget_user = leaves_one  # type: ignore[method-assign]
    out = run(go_built / "selftest", running.target, stdin="")
    assert out.code == 1, out.stdout
    failed = [line for line in out.stdout.splitlines() if line.startswith("FAIL")]
    assert len(failed) == 2 and "ForgetUser leaves no memory of the user" in failed[0], failed
    assert left[0] in failed[0] and "a second time erases nothing" in failed[1], failed


def test_selftest_reports_an_unreachable_sidecar(go_built: Path) -> None:
    out = run(go_built / "selftest", "127.0.0.1:1", "--timeout", "1s", stdin="")
    assert out.code == 2 and "cannot reach the sidecar at 127.0.0.1:1" in out.stderr


CONSUMER = '''package main

import (
	"context"
	"fmt"
	"os"
	"time"

	pb "github.com/memsidecar/memsidecar/clients/go/memsidecarv1"
	"github.com/memsidecar/memsidecar/clients/go/msclient"
)

func main() {
	c, err := msclient.Dial(os.Args[1], msclient.WithDialTimeout(0))
	if err == nil {
		err = c.WaitReady(context.Background(), time.Minute)
	}
	if err != nil {
		panic(err)
	}
	request := &pb.InjectRequest{ChannelId: "consumer", Text: "hello"}
	reply, err := c.Inject(context.Background(), request)
	if err != nil {
		panic(err)
	}
	fmt.Println("skip:", reply.SkipReason)
}
'''


def test_a_module_outside_the_repository_builds_offline_with_the_documented_go_mod(
        go_built: Path, running: Running, tmp_path: Path) -> None:
    """docs/clients.md's go.mod lines, as written, build and vet a consumer module offline."""
    (lines,) = re.findall(r"```go\.mod\n(.*?)```", DOC.read_text(), flags=re.S)
    (tmp_path / "memsidecar").symlink_to(ROOT)  # the checkout at ../memsidecar
    module = tmp_path / "myagent"
    module.mkdir()
    (module / "go.mod").write_text(f"module example.com/myagent\n\ngo 1.19\n\n{lines}")
    (module / "main.go").write_text(CONSUMER)
    env = {**os.environ, "GOPROXY": "off", "GOFLAGS": "", "GOWORK": "off",
           "GOCACHE": str(ROOT / "build" / "go-cache"), "GOPATH": str(tmp_path / "gopath")}
    for command in (["go", "build", "-o", "myagent", "."], ["go", "vet", "."]):
        done = subprocess.run(command, cwd=module, env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr
    done = subprocess.run([str(module / "myagent"), running.target], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("skip:"), done.stderr
