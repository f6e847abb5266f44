#!/usr/bin/env bash
# Prepares a real Docker engine for the Docker backend tests; safe to run repeatedly.
#  1. Debian packages: docker.io (dockerd + containerd + runc), busybox-static (the rootfs
#     of every test image), btrfs-progs (subvolumes and qgroups for enforced disk sizes).
#  2. A loopback btrfs file system with quotas at $FRED_TEST_BTRFS (volume_data_path).
#  3. dockerd in the background with a roomy address pool (tests create many tenant
#     networks), then waits until `docker info` answers.
#  4. The locally built test images (no registry is reachable from CI).
set -euo pipefail
cd "$(dirname "$0")/.."

FRED_TEST_BTRFS="${FRED_TEST_BTRFS:-/var/lib/fred-test-btrfs}"
BTRFS_IMAGE_FILE="${FRED_TEST_BTRFS}.img"
DOCKERD_LOG="${DOCKERD_LOG:-/var/log/fred-dockerd.log}"

need_packages=()
command -v dockerd >/dev/null 2>&1 || need_packages+=(docker.io)
[ -x /bin/busybox ] && /bin/busybox --list 2>/dev/null | grep -qx httpd || need_packages+=(busybox-static)
command -v btrfs >/dev/null 2>&1 || need_packages+=(btrfs-progs)
if [ "${#need_packages[@]}" -gt 0 ]; then
  echo "== docker-setup: installing ${need_packages[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_packages[@]}" >/dev/null
fi

if ! mountpoint -q "$FRED_TEST_BTRFS"; then
  echo "== docker-setup: loopback btrfs at $FRED_TEST_BTRFS"
  mkdir -p "$FRED_TEST_BTRFS"
  if [ ! -f "$BTRFS_IMAGE_FILE" ]; then
    truncate -s 2G "$BTRFS_IMAGE_FILE"
    mkfs.btrfs -q "$BTRFS_IMAGE_FILE"
  fi
  mount -o loop "$BTRFS_IMAGE_FILE" "$FRED_TEST_BTRFS"
fi
btrfs quota enable "$FRED_TEST_BTRFS"

if ! docker info >/dev/null 2>&1; then
  echo "== docker-setup: starting dockerd (log: $DOCKERD_LOG)"
  nohup dockerd --default-address-pool base=10.210.0.0/16,size=24 >"$DOCKERD_LOG" 2>&1 &
  for _ in $(seq 1 120); do
    docker info >/dev/null 2>&1 && break
    sleep 0.5
  done
  docker info >/dev/null 2>&1 || { echo "dockerd did not answer; tail of $DOCKERD_LOG:"; tail -20 "$DOCKERD_LOG"; exit 1; }
fi

bash test/backend/docker/images/build.sh
