"""The Go selftest (clients/go/cmd/selftest): every RPC from Go against a real sidecar; a
module outside the repository built with the go.mod lines docs/clients.md gives."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from tests.clients.agent_loops import ROOT, run
from tests.conftest import Running

DOC = ROOT / "docs" / "clients.md"


def test_selftest_passes_on_a_fresh_store_and_again(go_built: Path, running: Running) -> None:
    for _ in range(2):
        out = run(go_built / "selftest", running.target, stdin="")
        assert out.code == 0, out.stdout
        assert "FAIL" not in out.stdout
        assert out.stdout.splitlines()[-1].endswith(" ok, 0 failed")


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
