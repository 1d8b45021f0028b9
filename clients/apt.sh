# Sourced by the client build scripts: install missing Debian packages, idempotently.
# apt_ensure NAME PACKAGE... ; exits 42 with one line when they cannot be installed.
apt_ensure() {
  local name="$1" pkg missing=()
  shift
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
      || missing+=("$pkg")
  done
  ((${#missing[@]})) || return 0
  echo "$name: installing ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  local apt=($sudo env DEBIAN_FRONTEND=noninteractive apt-get -y -q -o DPkg::Lock::Timeout=600)
  if ! "${apt[@]}" install --no-install-recommends "${missing[@]}" >&2; then
    "${apt[@]}" update >&2 && "${apt[@]}" install --no-install-recommends "${missing[@]}" >&2 || {
      echo "$name: cannot install Debian packages: ${missing[*]}" >&2; exit 42; }
  fi
}
