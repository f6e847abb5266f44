#!/usr/bin/env bash
# Prepares what the Docker suites need on a machine whose engine already runs, as root:
#  1. a loopback btrfs file system with quotas at $FRED_TEST_BTRFS (the suites' volume_data_path);
#  2. the fred-test/* images (test/backend/docker/images/build.sh), when the engine answers.
# Safe to run repeatedly; a prepared machine costs a mountpoint check and the images' check.
# Run by .ci/docker-setup.sh (after it installs the packages and starts dockerd) and by
# `npm test` (scripts/run-tests.mjs) when a Docker suite's piece is missing.
set -euo pipefail
cd "$(dirname "$0")/../.."

FRED_TEST_BTRFS="${FRED_TEST_BTRFS:-/var/lib/fred-test-btrfs}"
BTRFS_IMAGE_FILE="${FRED_TEST_BTRFS}.img"

if ! mountpoint -q "$FRED_TEST_BTRFS"; then
  echo "== docker-prepare: loopback btrfs at $FRED_TEST_BTRFS"
  mkdir -p "$FRED_TEST_BTRFS"
  if [ ! -f "$BTRFS_IMAGE_FILE" ]; then
    truncate -s 2G "$BTRFS_IMAGE_FILE"
    mkfs.btrfs -q "$BTRFS_IMAGE_FILE"
  fi
  mount -o loop "$BTRFS_IMAGE_FILE" "$FRED_TEST_BTRFS"
fi
btrfs quota enable "$FRED_TEST_BTRFS"

if docker info >/dev/null 2>&1; then
  bash test/backend/docker/images/build.sh
else
  # The btrfs-only suites can run; the images wait for an engine (.ci/docker-setup.sh starts one).
  echo "== docker-prepare: no Docker engine answers, test images not built" >&2
fi
