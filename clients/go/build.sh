#!/usr/bin/env bash
# Build the Go agent example offline from Debian packages, in GOPATH mode.
#   clients/go/build.sh            install missing packages, generate, build build/go-client
#   clients/go/build.sh test       the same, then `go vet` + `go test` of the wrapper package
# Generated code goes to build/go/src/memsidecar/gen/memsidecarv1 (the protos' go_package);
# nothing generated is committed.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="$ROOT/build"
GOPATH_DIR="$BUILD/go"
SRC="$GOPATH_DIR/src/memsidecar"
# golang-github-golang-protobuf-1-5-dev must be named: otherwise apt satisfies grpc-dev with
# the 1-3 package, and the client panics on the first reply.
PACKAGES=(golang-go golang-google-grpc-dev golang-google-protobuf-dev
          golang-github-golang-protobuf-1-5-dev protoc-gen-go protoc-gen-go-grpc protobuf-compiler)

missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "go-client: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  APT=($SUDO apt-get -y -q -o DPkg::Lock::Timeout=600)
  if ! "${APT[@]}" install --no-install-recommends "${missing[@]}" >&2; then
    "${APT[@]}" update >&2 && "${APT[@]}" install --no-install-recommends "${missing[@]}" >&2 || {
      echo "go-client: cannot install Debian packages: ${missing[*]}" >&2; exit 42; }
  fi
fi

rm -rf "$SRC"
mkdir -p "$GOPATH_DIR/src"
protoc -I "$ROOT/proto" --go_out="$GOPATH_DIR/src" --go-grpc_out="$GOPATH_DIR/src" \
  --go-grpc_opt=require_unimplemented_servers=false "$ROOT"/proto/memsidecar/v1/*.proto
cp -r "$ROOT/clients/go/msclient" "$ROOT/clients/go/cmd" "$SRC/"

export GO111MODULE=off GOPROXY=off GOFLAGS= GOPATH="$GOPATH_DIR:/usr/share/gocode"
export GOCACHE="$BUILD/go-cache"
cd "$GOPATH_DIR"
go build -o "$BUILD/go-client" memsidecar/cmd/agent-example
if [ "${1:-}" = test ]; then
  go vet memsidecar/msclient memsidecar/cmd/agent-example
  go test memsidecar/msclient
fi
echo "go-client: built $BUILD/go-client"
