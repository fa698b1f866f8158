#!/usr/bin/env bash
# Installs and starts the two container engines the container runtime is tested on, and builds
# the local base image our env Dockerfiles take as BASE_IMAGE. Idempotent: each step is skipped
# when its result is already there, so CI and developers can run it every time.
#
#   sudo bash scripts/container_engines.sh           # engines + base image on Docker and Podman
#   BASE_TAG=my/python:3.11 bash scripts/...         # another base image name
#
# Why each step:
# - docker.io from Debian is a full engine; dockerd is started in the background when no daemon
#   answers yet (it may be shared with other users of the machine: we never stop it).
# - Podman refuses to start containers here until its default ulimits are cleared, and it talks
#   the Docker API on its own socket, which we start with `podman system service`.
# - No image can be pulled from a registry, so the base image is a Debian 12 (bookworm) root made
#   by debootstrap from the Debian mirror apt already uses (read from apt's sources at run time),
#   with the host's CA bundle copied in (the network may re-sign TLS: pip inside a build needs it).
set -euo pipefail

BASE_TAG=${BASE_TAG:-openenv-train-base:py3.11-bookworm}
PODMAN_SOCK=${PODMAN_SOCK:-/run/podman/podman.sock}
CACHE=${OPENENV_TRAIN_CACHE:-/var/cache/openenv-train}
log() { echo "[container_engines] $*"; }

need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v podman >/dev/null || need+=(podman)
command -v debootstrap >/dev/null || need+=(debootstrap)
# Podman's --init (every env container runs under an init that reaps orphans) needs catatonit.
[ -x /usr/libexec/podman/catatonit ] || need+=(catatonit)
if ((${#need[@]})); then
  log "installing ${need[*]}"
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    --no-install-recommends "${need[@]}" >/dev/null
fi

wait_for() {  # wait_for SECONDS DESCRIPTION CMD...
  local secs=$1 what=$2; shift 2
  for _ in $(seq $((secs * 4))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.25; done
  log "error: $what did not come up within ${secs}s"; return 1
}

# The daemons start from / and outlive this script: one started from a checkout that is later
# deleted (a CI clone) keeps a deleted working directory, and Podman's conmon then fails every
# container start ("write child: broken pipe"). One found in that state is stopped first.
stop_if_cwd_deleted() {  # $1: process name
  local pid
  for pid in $(pgrep -x "$1"); do
    if [[ "$(readlink "/proc/$pid/cwd")" == *" (deleted)" ]]; then
      log "stopping $1 (pid $pid): it runs in a deleted directory"
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
  done
}
stop_if_cwd_deleted podman
stop_if_cwd_deleted dockerd

# ---- Docker -------------------------------------------------------------------------------------
if ! docker info >/dev/null 2>&1; then
  log "starting dockerd (log: /var/log/dockerd.log)"
  nohup env -C / dockerd >/var/log/dockerd.log 2>&1 &
  wait_for 60 dockerd docker info || { tail -20 /var/log/dockerd.log; exit 1; }
fi

# ---- Podman -------------------------------------------------------------------------------------
if ! grep -qs '^default_ulimits *= *\[\]' /etc/containers/containers.conf; then
  mkdir -p /etc/containers
  if [ -s /etc/containers/containers.conf ] && grep -q '^\[containers\]' /etc/containers/containers.conf; then
    sed -i '/^\[containers\]/a default_ulimits = []' /etc/containers/containers.conf
  else
    printf '[containers]\ndefault_ulimits = []\n' >>/etc/containers/containers.conf
  fi
fi
podman_up() {
  python3 - "$PODMAN_SOCK" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(3); s.connect(sys.argv[1])
s.sendall(b"GET /_ping HTTP/1.0\r\nHost: d\r\n\r\n")
sys.exit(0 if b" 200 " in s.recv(64) else 1)
PY
}
if ! podman_up >/dev/null 2>&1; then
  log "starting the Podman API service on unix://$PODMAN_SOCK (log: /var/log/podman-service.log)"
  mkdir -p "$(dirname "$PODMAN_SOCK")"
  rm -f "$PODMAN_SOCK"
  nohup env -C / podman system service --time=0 "unix://$PODMAN_SOCK" \
    >/var/log/podman-service.log 2>&1 &
  wait_for 60 "podman service" podman_up || { tail -20 /var/log/podman-service.log; exit 1; }
fi

# ---- Local base image (Debian 12 + python3 3.11 + venv) -----------------------------------------
mirror() {  # the first Debian mirror apt uses (deb822 sources or one-line sources.list)
  local m
  m=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | grep -v security | head -1)
  [ -n "$m" ] || m=$(grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
    | awk '$3 == "bookworm" {print $2}' | head -1)
  [ -n "$m" ] || { log "error: no Debian mirror found in apt's sources"; return 1; }
  echo "$m"
}
tarball="$CACHE/base-rootfs.tar"
have_docker=$(docker image inspect "$BASE_TAG" >/dev/null 2>&1 && echo 1 || echo 0)
have_podman=$(podman image exists "$BASE_TAG" && echo 1 || echo 0)
if [ "$have_docker$have_podman" != 11 ] && [ ! -s "$tarball" ]; then
  mkdir -p "$CACHE"
  root=$(mktemp -d "$CACHE/rootfs.XXXXXX")
  trap 'rm -rf "$root"' EXIT
  url=$(mirror)
  log "debootstrap bookworm from $url (about a minute)"
  debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    bookworm "$root" "$url" >"$CACHE/debootstrap.log" 2>&1 \
    || { tail -20 "$CACHE/debootstrap.log"; exit 1; }
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
  rm -rf "$root"; trap - EXIT
fi
if [ "$have_docker" != 1 ]; then
  log "importing $BASE_TAG into Docker"
  docker import -c 'CMD ["python3"]' "$tarball" "$BASE_TAG" >/dev/null
fi
if [ "$have_podman" != 1 ]; then
  log "importing $BASE_TAG into Podman"
  podman import -c 'CMD ["python3"]' "$tarball" "$BASE_TAG" >/dev/null
fi
log "ready: docker $(docker version --format '{{.Server.Version}}'), podman $(podman version --format '{{.Version}}'), base $BASE_TAG"
