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

# Fails (with `fail`, which the caller defines) when a process other than this shell still
# carries BREAKWATER_DEMO_RUN=<marker> in its environment (workerd included: Miniflare passes the
# environment on). `what` names who started them.
fail_if_left_running() {
  local marker=$1 what=$2 env pid
  local left=()
  for env in /proc/[0-9]*/environ; do
    if { tr '\0' '\n' <"$env"; } 2>/dev/null | grep -qx "BREAKWATER_DEMO_RUN=$marker"; then
      pid=${env#/proc/}
      pid=${pid%/environ}
      [ "$pid" = "$$" ] && continue
      left+=("$pid $({ tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | cut -c1-80)")
    fi
  done
  if [ ${#left[@]} -gt 0 ]; then
    printf '  left running: %s\n' "${left[@]}" >&2
    fail "${#left[@]} process(es) started by $what are still running"
  fi
}
