#!/usr/bin/env bash
# Builds the Docker backend's test images from the static busybox binary with `docker
# import` (no registry is reachable in CI). Every image is a tiny rootfs: /bin/busybox plus
# an applet symlink farm, /etc/passwd with root and an unprivileged "app" user (uid 1000).
# Idempotent: an image that already exists with the current recipe hash is kept.
#
#   fred-test/httpd:1       busybox httpd serving /www on 8080 (index.html = "fred-test-httpd")
#   fred-test/crashloop:1   prints a line, then exits 3 about half a second later
#   fred-test/unhealthy:1   idles forever; its readiness file never appears, so a manifest
#                           health check on /tmp/ready never passes
#   fred-test/volume:1      idles forever and declares VOLUME /data (owned by root)
#   fred-test/seeded:1      like volume:1, but its /data (mode 0770, uid/gid 1000) holds
#                           hello.txt (root, 0644), secret.txt (1000:1000, 0640),
#                           nested/deeper/note.txt, link -> hello.txt, abs -> /etc/passwd
#   fred-test/owned:1       idles forever, no USER; VOLUME /data is empty and owned by
#                           1000:1000 (mode 0755), so it runs as 1000:1000
#   fred-test/owned-split:1 like owned:1 plus VOLUME /srv owned by 1001:1001: two owners,
#                           so it runs as root
#   fred-test/owned-user:1  like owned:1 but with USER 1001:1001, which it keeps
set -euo pipefail
SELF="$(realpath "$0")"

BUSYBOX="${BUSYBOX:-/bin/busybox}"
[ -x "$BUSYBOX" ] || { echo "build.sh: $BUSYBOX missing (apt-get install busybox-static)" >&2; exit 1; }
RECIPE_HASH="$(cat "$SELF" "$BUSYBOX" | sha256sum | cut -c1-16)"

workdir="$(mktemp -d)"
trap 'rm -rf "$workdir"' EXIT

make_rootfs() {
  local root="$1"
  mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/run" "$root/www" "$root/data" "$root/proc" \
    "$root/sys" "$root/dev"
  cp "$BUSYBOX" "$root/bin/busybox"
  for applet in $("$BUSYBOX" --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/home/app:/bin/sh\n' >"$root/etc/passwd"
  printf 'root:x:0:\napp:x:1000:\n' >"$root/etc/group"
  echo "fred-test-httpd" >"$root/www/index.html"
  chmod 1777 "$root/tmp"
}

build() {
  local rootfs="$workdir/rootfs"
  if [ "$1" = --rootfs ]; then
    rootfs="$2"
    shift 2
  fi
  local tag="$1"
  shift
  if [ "$(docker image inspect --format '{{ index .Config.Labels "fred.test.recipe" }}' "$tag" 2>/dev/null)" \
    = "$RECIPE_HASH" ]; then
    echo "== images: $tag up to date"
    return
  fi
  echo "== images: building $tag"
  tar -C "$rootfs" --numeric-owner -c . | docker import "$@" \
    --change "LABEL fred.test.recipe=$RECIPE_HASH" --change 'ENV PATH=/bin' - "$tag" >/dev/null
}

make_rootfs "$workdir/rootfs"

# The seeded image gets its own copy of the rootfs so the others keep an empty /data.
cp -a "$workdir/rootfs" "$workdir/rootfs-seeded"
seeded="$workdir/rootfs-seeded/data"
mkdir -p "$seeded/nested/deeper"
echo "seeded-hello" >"$seeded/hello.txt"
echo "app-secret" >"$seeded/secret.txt"
echo "deep-note" >"$seeded/nested/deeper/note.txt"
ln -s hello.txt "$seeded/link"
ln -s /etc/passwd "$seeded/abs"
chown 1000:1000 "$seeded/secret.txt" "$seeded"
chmod 0640 "$seeded/secret.txt"
chmod 0770 "$seeded"

# VOLUME directories owned by an unprivileged user, and two with different owners.
cp -a "$workdir/rootfs" "$workdir/rootfs-owned"
chown 1000:1000 "$workdir/rootfs-owned/data"
cp -a "$workdir/rootfs-owned" "$workdir/rootfs-split"
mkdir -p "$workdir/rootfs-split/srv"
chown 1001:1001 "$workdir/rootfs-split/srv"

build fred-test/httpd:1 --change 'EXPOSE 8080/tcp' \
  --change 'CMD ["/bin/httpd", "-f", "-v", "-p", "8080", "-h", "/www"]'
build fred-test/crashloop:1 \
  --change 'CMD ["/bin/sh", "-c", "echo crashloop starting; sleep 0.5; echo crashloop giving up; exit 3"]'
build fred-test/unhealthy:1 \
  --change 'CMD ["/bin/sh", "-c", "echo waiting forever; exec sleep 2147483647"]'
build fred-test/volume:1 --change 'VOLUME /data' \
  --change 'CMD ["/bin/sh", "-c", "echo volume ready; exec sleep 2147483647"]'
build --rootfs "$workdir/rootfs-seeded" fred-test/seeded:1 --change 'VOLUME /data' \
  --change 'CMD ["/bin/sh", "-c", "echo seeded ready; exec sleep 2147483647"]'
build --rootfs "$workdir/rootfs-owned" fred-test/owned:1 --change 'VOLUME /data' \
  --change 'CMD ["/bin/sh", "-c", "echo owned ready; exec sleep 2147483647"]'
build --rootfs "$workdir/rootfs-split" fred-test/owned-split:1 --change 'VOLUME /data' --change 'VOLUME /srv' \
  --change 'CMD ["/bin/sh", "-c", "echo owned-split ready; exec sleep 2147483647"]'
build --rootfs "$workdir/rootfs-owned" fred-test/owned-user:1 --change 'VOLUME /data' --change 'USER 1001:1001' \
  --change 'CMD ["/bin/sh", "-c", "echo owned-user ready; exec sleep 2147483647"]'
