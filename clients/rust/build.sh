#!/usr/bin/env bash
# Build the Rust crate offline from Debian's packaged crates (/usr/share/cargo/registry).
#   clients/rust/build.sh          install missing packages, build
#                                  build/rust/{agent-loop,bench,selftest,quickstart}
#   clients/rust/build.sh test     the same, then `cargo test`
#   clients/rust/build.sh packages print the Debian packages it installs when missing
# The source replacement is passed as `cargo --config` flags here, so the crate itself stays
# an ordinary crates.io crate elsewhere. Target dir: build/rust/target (about 1 GB).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="$ROOT/build/rust"
PACKAGES=(librust-prost-dev librust-prost-build-dev librust-prost-types-dev librust-h2-dev
          librust-http-dev librust-bytes-dev librust-tokio-dev librust-futures-core-dev
          librust-rustls-dev librust-tokio-rustls-dev librust-rustls-pemfile-dev
          protobuf-compiler)
if [ "${1:-}" = packages ]; then echo "${PACKAGES[*]}"; exit 0; fi
source "$ROOT/clients/apt.sh"
apt_ensure rust-client "${PACKAGES[@]}"
# rustup installs cargo under ~/.cargo/bin, which a non-login shell may not have on PATH.
command -v cargo >/dev/null || for dir in "${CARGO_HOME:-$HOME/.cargo}/bin" /root/.cargo/bin; do
  [ -x "$dir/cargo" ] && { PATH="$dir:$PATH"; break; }
done
command -v cargo >/dev/null || { echo "rust-client: cargo is not on PATH" >&2; exit 42; }

CARGO=(cargo --offline
       --config 'source.crates-io.replace-with="debian"'
       --config 'source.debian.directory="/usr/share/cargo/registry"')
export CARGO_TARGET_DIR="$BUILD/target"
cd "$ROOT/clients/rust"
"${CARGO[@]}" build --release --quiet --bins --examples
mkdir -p "$BUILD"
cp "$BUILD"/target/release/{agent-loop,bench,selftest} \
   "$BUILD/target/release/examples/quickstart" "$BUILD/"
if [ "${1:-}" = test ]; then
  "${CARGO[@]}" test --release --quiet
fi
echo "rust-client: built $BUILD/{agent-loop,bench,selftest,quickstart}"
