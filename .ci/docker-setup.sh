#!/usr/bin/env bash
# Prepares a real Docker engine for the Docker backend tests; safe to run repeatedly.
#  1. Debian packages: docker.io (dockerd + containerd + runc), busybox-static (the rootfs
#     of every test image), btrfs-progs (subvolumes and qgroups for enforced disk sizes),
#     docker-registry and apache2-utils (the image tests' loopback registry with htpasswd
#     auth, test/support/registry.ts).
#  2. dockerd in the background with a roomy address pool (tests create many tenant
#     networks), then waits until `docker info` answers.
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
command -v docker-registry >/dev/null 2>&1 || need_packages+=(docker-registry)
command -v htpasswd >/dev/null 2>&1 || need_packages+=(apache2-utils)
if [ "${#need_packages[@]}" -gt 0 ]; then
  echo "== docker-setup: installing ${need_packages[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_packages[@]}" >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
  echo "== docker-setup: starting dockerd (log: $DOCKERD_LOG)"
  nohup dockerd --default-address-pool base=10.210.0.0/16,size=24 >"$DOCKERD_LOG" 2>&1 &
  for _ in $(seq 1 120); do
    docker info >/dev/null 2>&1 && break
    sleep 0.5
  done
  docker info >/dev/null 2>&1 || { echo "dockerd did not answer; tail of $DOCKERD_LOG:"; tail -20 "$DOCKERD_LOG"; exit 1; }
fi

bash test/support/docker-prepare.sh
