#!/usr/bin/env bash
# The container engine kind runs on, found or installed, and the kind CLI.
#
#   hack/container-engine.sh up     use a running Docker (or Podman); else, as root
#                                   on Debian, install Debian's docker.io with apt and
#                                   start dockerd, recording that we started it.
#                                   Prints the provider (docker|podman) on stdout.
#   hack/container-engine.sh down   stop dockerd if (and only if) `up` started it.
#   hack/container-engine.sh check  exit 0 if `up` can give an engine (one runs, or
#                                   root, apt-get and a node image build are possible);
#                                   else print why not and exit 1. Starts nothing.
#   hack/container-engine.sh kind   build the kind CLI (pinned, from the Go module
#                                   proxy, cached) and print its path.
#
# Without a running engine, root or apt, `up` fails within seconds and says
# what is missing. The record of a dockerd we started is
# $OUTPUT_DIR/engine/dockerd.pid; its log is next to it.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUTPUT_DIR=${OUTPUT_DIR:-$ROOT/_output}
state=$OUTPUT_DIR/engine
# Where the runc wrapper goes when it is needed (root-owned; see up).
ENGINE_RUNTIME_DIR=${ENGINE_RUNTIME_DIR:-/usr/local/lib/was-harness}
log() { printf '[engine %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf '[engine] ERROR: %s\n' "$*" >&2; exit 2; }

# Heavy steps take only idle CPU: other work (timed test runs) may share the machine.
idle() { if command -v ionice >/dev/null; then nice -n 19 ionice -c3 "$@"; else nice -n 19 "$@"; fi; }

up() {
  if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
    log "using the running Docker ($(docker version -f '{{.Server.Version}}' 2>/dev/null))"; echo docker; return
  fi
  if command -v podman >/dev/null && podman info >/dev/null 2>&1; then
    log "using Podman (kind: KIND_EXPERIMENTAL_PROVIDER=podman)"; echo podman; return
  fi
  # Nothing runs: install and start Docker ourselves, if we may.
  local missing=()
  ((EUID == 0)) || missing+=("root (we are uid $EUID)")
  command -v apt-get >/dev/null || missing+=("apt-get (not a Debian-like system)")
  if ((${#missing[@]})); then
    die "no running Docker or Podman, and cannot install one: missing ${missing[*]}.
  Start Docker (docker info must succeed) or Podman, or run as root on Debian so that docker.io can be installed."
  fi
  if ! command -v dockerd >/dev/null; then
    log "installing Debian's docker.io (apt-get)"
    local t0=$SECONDS
    idle env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends docker.io >"$state.apt.log" 2>&1 ||
      { idle apt-get update >>"$state.apt.log" 2>&1 &&
        idle env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends docker.io >>"$state.apt.log" 2>&1; } ||
      die "apt-get install docker.io failed; see $state.apt.log"
    log "installed docker.io in $((SECONDS - t0))s"
  fi
  mkdir -p "$state"
  local args=()
  missing_caps=$(missing_capabilities)
  if [[ -n $missing_caps ]]; then
    # Docker grants a --privileged container (a kind node) every capability
    # it knows; runc fails with "unable to apply caps: operation not
    # permitted" when the bounding set lacks one. A runc wrapper
    # (hack/runc-capfilter) drops those.
    # The wrapper becomes the runtime of a root dockerd, so it lives where
    # only root can write, never in the (user-writable) checkout.
    local runtime=$ENGINE_RUNTIME_DIR/runc-capfilter
    log "this host's capability bounding set lacks $missing_caps: dockerd runs containers through $runtime"
    command -v jq >/dev/null || die "jq is needed for the runc wrapper (apt-get install jq)"
    install -d -o 0 -g 0 -m 0755 "$ENGINE_RUNTIME_DIR"
    install -o 0 -g 0 -m 0755 "$ROOT/hack/runc-capfilter" "$runtime"
    local json; json=$(printf '"%s",' $missing_caps); echo "[${json%,}]" >"$runtime.missing.new"
    chown 0:0 "$runtime.missing.new" && chmod 0644 "$runtime.missing.new" && mv "$runtime.missing.new" "$runtime.missing"
    args+=(--add-runtime "capfilter=$runtime" --default-runtime capfilter)
  fi
  log "starting dockerd ${args[*]} (log: $state/dockerd.log); 'hack/container-engine.sh down' stops it"
  # setsid: dockerd outlives this script, and is stopped by pid, not by name.
  setsid dockerd "${args[@]}" >"$state/dockerd.log" 2>&1 </dev/null &
  echo $! >"$state/dockerd.pid"
  local deadline=$((SECONDS + 60))
  until docker info >/dev/null 2>&1; do
    kill -0 "$(cat "$state/dockerd.pid")" 2>/dev/null || { rm -f "$state/dockerd.pid"; die "dockerd exited; see $state/dockerd.log:
$(tail -5 "$state/dockerd.log")"; }
    ((SECONDS < deadline)) || die "dockerd did not answer within 60s; see $state/dockerd.log"
    sleep 1
  done
  log "dockerd $(docker version -f '{{.Server.Version}}') is up ($(docker info -f '{{.Driver}}, cgroup {{.CgroupVersion}} {{.CgroupDriver}}'))"
  echo docker
}

# The capabilities the kernel knows (0..cap_last_cap) that this process's
# bounding set lacks, as CAP_ names, space-separated.
missing_capabilities() {
  local names=(CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP LINUX_IMMUTABLE
    NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER SYS_MODULE SYS_RAWIO SYS_CHROOT SYS_PTRACE
    SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE AUDIT_WRITE
    AUDIT_CONTROL SETFCAP MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ PERFMON BPF
    CHECKPOINT_RESTORE)
  local bnd last i out=()
  bnd=$((16#$(awk '/^CapBnd:/{print $2}' /proc/self/status)))
  last=$(cat /proc/sys/kernel/cap_last_cap 2>/dev/null || echo 40)
  for ((i = 0; i <= last && i < ${#names[@]}; i++)); do
    (((bnd >> i) & 1)) || out+=("CAP_${names[i]}")
  done
  echo "${out[*]}"
}

check() {
  if command -v docker >/dev/null && docker info >/dev/null 2>&1; then return; fi
  if command -v podman >/dev/null && podman info >/dev/null 2>&1; then return; fi
  local missing=()
  ((EUID == 0)) || missing+=("root (we are uid $EUID)")
  command -v apt-get >/dev/null || missing+=("apt-get (not a Debian-like system)")
  ((${#missing[@]} == 0)) && return
  echo "no running Docker or Podman, and none can be installed here: missing ${missing[*]}"
  return 1
}

down() {
  [[ -f $state/dockerd.pid ]] || { log "no dockerd started by us; nothing to stop"; return; }
  local pid exe; pid=$(cat "$state/dockerd.pid")
  [[ $pid =~ ^[0-9]+$ ]] || { log "$state/dockerd.pid holds no pid ($pid): nothing stopped"; rm -f "$state/dockerd.pid"; return; }
  # The record is a file in the checkout: kill only what is still dockerd.
  exe=$(readlink "/proc/$pid/exe" 2>/dev/null || true); exe=${exe% (deleted)}
  if [[ -n $exe && ${exe##*/} != dockerd ]]; then
    log "pid $pid is not dockerd any more ($exe): not stopping it; removing the stale record"
    rm -f "$state/dockerd.pid"
    return
  fi
  if kill -0 "$pid" 2>/dev/null; then
    log "stopping the dockerd we started (pid $pid)"
    kill "$pid"
    for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    kill -0 "$pid" 2>/dev/null && { log "dockerd $pid still runs after 60s; killing it"; kill -9 "$pid"; }
  fi
  rm -f "$state/dockerd.pid"
}

kind_cli() {
  idle "$ROOT/hack/build-node-binaries.sh" kind >&2
  echo "$OUTPUT_DIR/bin/kind-node/${KUBE_VERSION:-$("$ROOT/hack/versions.sh" kube)}/kind"
}

case ${1:-} in
  up) up ;;
  check) check ;;
  down) down ;;
  kind) kind_cli ;;
  *) echo "usage: $0 up|check|down|kind" >&2; exit 2 ;;
esac
