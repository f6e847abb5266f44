#!/usr/bin/env bash
# Makes the image the Dockerfile starts FROM, on a machine that reaches Debian's packages
# but no container registry (CI here). The Dockerfile names the official Node image,
# node:<FRED_NODE_VERSION>-bookworm-slim, so a machine with a registry pulls that instead
# and never runs this. The stand-in made here has the same layout: a minimal Debian 12
# (debootstrap --variant=minbase) with the official Node build and npm in /usr/local, the
# very prefix .ci/install-node.sh installs (so no second download of Node).
#
#   bash scripts/base-image.sh          # prints the tag; skips when it is already there
#
# Needs root (debootstrap), a Docker engine and Debian's mirror. An image already under the
# tag is kept when it was pulled (it carries no fred label) or when it was made by this same
# recipe; a stand-in made by an older recipe is made again.
set -euo pipefail
SELF="$(realpath "$0")"
cd "$(dirname "$SELF")/.."

# shellcheck source=../.ci/install-node.sh
source .ci/install-node.sh >/dev/null
TAG="node:${FRED_NODE_VERSION}-bookworm-slim"
MIRROR="${FRED_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# What the stand-in is made from: this script and the Node/npm pins. A change remakes it.
RECIPE="$(cat "$SELF" <(echo "$FRED_NODE_VERSION $FRED_NPM_VERSION ${NODE_EXTRA_CA_CERTS:-}") | sha256sum | cut -c1-16)"

existing="$(docker image inspect "$TAG" --format '{{ index .Config.Labels "fred.base.recipe" }}' 2>/dev/null || echo absent)"
case "$existing" in
  absent) ;;
  "$RECIPE" | "" | "<no value>")
    # Ours and current, or pulled from a registry (no fred label): use it as it is.
    echo "== base-image: $TAG is already there" >&2
    echo "$TAG"
    exit 0
    ;;
  *) echo "== base-image: $TAG was made by an older recipe ($existing); making it again" >&2 ;;
esac

for tool in debootstrap docker; do
  command -v "$tool" >/dev/null || {
    echo "base-image: $tool is needed (apt-get install debootstrap docker.io)" >&2
    exit 1
  }
done

rootfs="$(mktemp -d /var/tmp/fred-base.XXXXXX)"
trap 'rm -rf "$rootfs"' EXIT
echo "== base-image: debootstrap bookworm (minbase) from $MIRROR" >&2
debootstrap --variant=minbase --include=ca-certificates bookworm "$rootfs" "$MIRROR" >&2

# Node and npm exactly as CI runs them, under /usr/local as in the official image.
cp -a "$FRED_NODE_PREFIX/." "$rootfs/usr/local/"
# The official image reaches Debian's live mirror; the mirror this recipe targets may serve
# a snapshot whose Release files are past their Valid-Until date, which apt would refuse.
cat >"$rootfs/etc/apt/apt.conf.d/99fred-snapshot-mirror" <<'EOF'
Acquire::Check-Valid-Until "false";
EOF
# Where this machine reaches the npm registry through a TLS-inspecting proxy, its CA bundle
# (NODE_EXTRA_CA_CERTS) is what npm in the build stage must trust too.
ca_env=()
if [[ -n "${NODE_EXTRA_CA_CERTS:-}" && -f "$NODE_EXTRA_CA_CERTS" ]]; then
  cp "$NODE_EXTRA_CA_CERTS" "$rootfs/usr/local/share/fred-host-ca.pem"
  ca_env=(--change "ENV NODE_EXTRA_CA_CERTS=/usr/local/share/fred-host-ca.pem")
fi
# Slim like the official image: no package caches, lists or documentation.
chroot "$rootfs" apt-get clean
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* \
  "$rootfs"/var/cache/debconf/*-old "$rootfs"/var/log/*.log

echo "== base-image: importing as $TAG" >&2
tar -C "$rootfs" --numeric-owner -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV NODE_VERSION=$FRED_NODE_VERSION" \
  --change "LABEL fred.base.recipe=$RECIPE" \
  --change 'CMD ["node"]' "${ca_env[@]}" \
  - "$TAG" >/dev/null
echo "$TAG"
