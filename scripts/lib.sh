# Steps the scripts in this folder share. Source it from the repository root:
#   cd "$(dirname "$0")/.." && . scripts/lib.sh

# Usage: log MESSAGE...   prints "[<script name>] MESSAGE" on stderr.
log() { printf '[%s] %s\n' "$(basename "$0" .sh)" "$*" >&2; }

# Usage: npm_ci_if_stale DIR   `npm ci` in DIR unless its node_modules was installed from its
# current package-lock.json.
npm_ci_if_stale() {
  local dir=$1
  if [ ! -f "$dir/node_modules/.package-lock.json" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    log "npm ci in $dir"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  fi
}

# Usage: locked_version CRATE   the version of CRATE in Cargo.lock.
locked_version() {
  awk -v name="name = \"$1\"" '$0 == name { getline; gsub(/[^0-9.]/, ""); print; exit }' Cargo.lock
}

# Usage: ensure_redis   installs redis-server from Debian's packages unless it is on PATH.
ensure_redis() {
  command -v redis-server >/dev/null 2>&1 && return
  log "installing redis-server (apt)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y redis-server >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y redis-server >/dev/null; }
  # The Debian package starts a service on 6379 where systemd runs; the tests never use it.
}
