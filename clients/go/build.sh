#!/usr/bin/env bash
# Build the Go module offline from Debian's Go packages.
#   clients/go/build.sh            install missing packages, check the generated code, build
#   clients/go/build.sh test       the same, then `go vet` + `go test ./...`
#   clients/go/build.sh generate   regenerate memsidecarv1/ from proto/ (commit the result)
#   clients/go/build.sh packages   print the Debian packages it installs when missing
# Binaries: build/go/agent-loop, build/go/selftest, build/go/quickstart (docs/clients.md),
# build/go-client (the latency suite's client).
# go.mod is the module's real go.mod; the build uses a copy of it with `replace` lines to
# /usr/share/gocode/src (GOFLAGS=-modfile), so no module proxy is needed.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
MODULE_DIR="$ROOT/clients/go"
MODULE="github.com/memsidecar/memsidecar/clients/go"
BUILD="$ROOT/build"
GOCODE=/usr/share/gocode/src
# golang-github-golang-protobuf-1-5-dev must be named: otherwise apt satisfies grpc-dev with
# the 1-3 package, and the client panics on the first reply.
PACKAGES=(golang-go golang-google-grpc-dev golang-google-protobuf-dev
          golang-github-golang-protobuf-1-5-dev golang-golang-x-net-dev golang-golang-x-sys-dev
          golang-golang-x-text-dev golang-google-genproto-dev
          protoc-gen-go protoc-gen-go-grpc protobuf-compiler)
if [ "${1:-}" = packages ]; then echo "${PACKAGES[*]}"; exit 0; fi
source "$ROOT/clients/apt.sh"
apt_ensure go-client "${PACKAGES[@]}"

generate() {  # $1: output directory that receives memsidecarv1/
  protoc -I "$ROOT/proto" -I /usr/include \
    --go_out="$1" --go_opt=module="$MODULE" \
    --go-grpc_out="$1" --go-grpc_opt=module="$MODULE" \
    "$ROOT"/proto/memsidecar/v1/*.proto
}

if [ "${1:-}" = generate ]; then
  rm -rf "$MODULE_DIR/memsidecarv1"
  generate "$MODULE_DIR"
  echo "go-client: regenerated clients/go/memsidecarv1"
  exit 0
fi

fresh="$(mktemp -d)"
trap 'rm -rf "$fresh"' EXIT
generate "$fresh"
if ! diff -r "$fresh/memsidecarv1" "$MODULE_DIR/memsidecarv1" >&2; then
  echo "go-client: clients/go/memsidecarv1 is stale; run clients/go/build.sh generate" >&2
  exit 1
fi

mkdir -p "$BUILD/go"
MODFILE="$BUILD/go/go.build.mod"
{
  cat "$MODULE_DIR/go.mod"
  for mod in google.golang.org/grpc google.golang.org/protobuf github.com/golang/protobuf \
             golang.org/x/net golang.org/x/sys golang.org/x/text google.golang.org/genproto; do
    echo "replace $mod => $GOCODE/$mod"
  done
} > "$MODFILE"
: > "$BUILD/go/go.build.sum"

export GOFLAGS="-modfile=$MODFILE" GOPROXY=off GOSUMDB=off GOWORK=off GO111MODULE=on
export GOCACHE="$BUILD/go-cache" GOPATH="$BUILD/go/path"
cd "$MODULE_DIR"
go build -o "$BUILD/go/agent-loop" ./cmd/agent-loop
go build -o "$BUILD/go/selftest" ./cmd/selftest
go build -o "$BUILD/go-client" ./cmd/bench
go build -o "$BUILD/go/quickstart" ./examples/quickstart
if [ "${1:-}" = test ]; then
  go vet ./...
  go test ./...
fi
echo "go-client: built $BUILD/go/{agent-loop,selftest,quickstart} $BUILD/go-client"
