#!/usr/bin/env bash
# Prepares a real Docker engine for the Docker backend tests; safe to run repeatedly.
#  1. Debian packages: docker.io (dockerd + containerd + runc), busybox-static (the rootfs
#     of every test image), btrfs-progs (subvolumes and qgroups for enforced disk sizes),
#     nftables (the nft command that loads the tenant egress rules).
#     docker-registry and apache2-utils (the image tests' loopback registry with htpasswd
#     auth, test/support/registry.ts).
#  2. dockerd in the background with a roomy address pool (tests create many tenant
#     networks) and user-namespace remapping (--userns-remap=default: container root is the
#     unprivileged `dockremap` range, as production_mode requires), then waits until
#     `docker info` answers. In CI (CI=true) an engine already answering without remapping
#     is restarted with it; elsewhere it is left alone, and the suites that need remapping
#     skip with a one-line reason (REQUIRE_USERNS=1 makes that a failure).
#     A developer whose plain engine must keep running can run the suites under remapping on
#     a second engine (DOCKER_HOST=unix:///<its socket>; the fixtures, the lock and the
#     engine-restart tests follow it): give it its own -H, --data-root, --exec-root,
#     --pidfile and address pool, --iptables=false (with iptables on, its start flushes the
#     DOCKER chains the first engine shares), and a bridge of its own made beforehand
#     (--bridge=<name>). Never --bridge=none: on start, dockerd then deletes the host's
#     docker0, the first engine's default network.
#  3. test/support/docker-prepare.sh, which `npm test` also runs as root when something is
#     missing: a loopback btrfs file system with quotas at $FRED_TEST_BTRFS
#     (volume_data_path) and the locally built test images (no registry is reachable from CI).
set -euo pipefail
cd "$(dirname "$0")/.."

DOCKERD_LOG="${DOCKERD_LOG:-/var/log/fred-dockerd.log}"

need_packages=()
command -v dockerd >/dev/null 2>&1 || need_packages+=(docker.io)
[ -x /bin/busybox ] && /bin/busybox --list 2>/dev/null | grep -qx httpd || need_packages+=(busybox-static)
command -v btrfs >/dev/null 2>&1 || need_packages+=(btrfs-progs)
command -v nft >/dev/null 2>&1 || need_packages+=(nftables)
command -v docker-registry >/dev/null 2>&1 || need_packages+=(docker-registry)
command -v htpasswd >/dev/null 2>&1 || need_packages+=(apache2-utils)
if [ "${#need_packages[@]}" -gt 0 ]; then
  echo "== docker-setup: installing ${need_packages[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_packages[@]}" >/dev/null
fi

# The remap user and its subordinate ranges: dockerd makes them itself on first start, but
# only with useradd and a free range; made here explicitly so the start does not depend on it.
ensure_remap_user() {
  id dockremap >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin dockremap
  local file
  for file in /etc/subuid /etc/subgid; do
    touch "$file"
    grep -q '^dockremap:' "$file" || echo "dockremap:100000:65536" >>"$file"
  done
}

remaps() {
  docker info --format '{{json .SecurityOptions}}' 2>/dev/null | grep -q 'name=userns'
}

if docker info >/dev/null 2>&1 && ! remaps && [ "${CI:-}" = true ]; then
  pid="$(cat /var/run/docker.pid 2>/dev/null || true)"
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    echo "== docker-setup: the engine does not remap user namespaces; restarting it with --userns-remap=default"
    kill "$pid"
    for _ in $(seq 1 120); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.5
    done
  fi
fi

if ! docker info >/dev/null 2>&1; then
  ensure_remap_user
  echo "== docker-setup: starting dockerd with --userns-remap=default (log: $DOCKERD_LOG)"
  nohup dockerd --userns-remap=default --default-address-pool base=10.210.0.0/16,size=24 >"$DOCKERD_LOG" 2>&1 &
  for _ in $(seq 1 120); do
    docker info >/dev/null 2>&1 && break
    sleep 0.5
  done
  docker info >/dev/null 2>&1 || { echo "dockerd did not answer; tail of $DOCKERD_LOG:"; tail -20 "$DOCKERD_LOG"; exit 1; }
fi
remaps || echo "== docker-setup: the engine does not remap user namespaces; the userns suites will skip (REQUIRE_USERNS=1 fails them)"

bash test/support/docker-prepare.sh
