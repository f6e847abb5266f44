#!/usr/bin/env bash
# `npm run release`: writes dist/release/ with everything a provider downloads and verifies
# (docs/releasing.md):
#
#   fred-<version>.tgz         the npm package (npm pack: prebuilt bundle, shrinkwrap)
#   fred-<version>-image.tar   the container image fred:<version>, made from that package (docker save)
#   sbom.cdx.json              CycloneDX SBOM of the production dependencies (npm sbom)
#   SHA256SUMS                 sha256sum of the three files above
#   SHA256SUMS.minisig         minisign signature of SHA256SUMS
#   release.pub                the public key that signature verifies with
#
# FRED_RELEASE_SECRET_KEY=<file> signs with the release key, whose public half is
# keys/fred-release.pub (the release is refused if they do not match). Without it a
# throwaway key pair signs, release.pub is that throwaway public key, and the release is
# UNOFFICIAL (said loudly here and in dist/release/UNOFFICIAL).
#
# Needs npm, a Docker engine and minisign. Where the base image cannot be pulled, it is made
# from Debian's packages first (scripts/base-image.sh, needs debootstrap and root).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=dist/release
VERSION="$(node -p 'require("./package.json").version')"
IMAGE="fred:$VERSION"
REPO_KEY=keys/fred-release.pub

for tool in docker minisign sha256sum; do
  command -v "$tool" >/dev/null || {
    echo "release: $tool is needed (Debian: apt-get install docker.io minisign coreutils)" >&2
    exit 1
  }
done
docker info >/dev/null 2>&1 || {
  echo "release: no Docker engine answers (docker info)" >&2
  exit 1
}
if [[ -n "${FRED_RELEASE_SECRET_KEY:-}" && ! -r "$FRED_RELEASE_SECRET_KEY" ]]; then
  echo "release: FRED_RELEASE_SECRET_KEY=$FRED_RELEASE_SECRET_KEY is not a readable file" >&2
  exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
rm -rf "$OUT"
mkdir -p "$OUT"
step() { echo "== release: $*" >&2; }

step "package fred-$VERSION.tgz"
npm pack --silent --pack-destination "$OUT" >/dev/null
[[ -f "$OUT/fred-$VERSION.tgz" ]] || {
  echo "release: npm pack wrote no $OUT/fred-$VERSION.tgz" >&2
  exit 1
}

step "image $IMAGE"
base="$(sed -n 's/^FROM \(node:.*\) AS build$/\1/p' Dockerfile)"
base="${base//\$\{NODE_VERSION\}/$(sed -n 's/^ARG NODE_VERSION=//p' Dockerfile)}"
if ! docker image inspect "$base" >/dev/null 2>&1 && command -v debootstrap >/dev/null; then
  step "no $base here: making it from Debian's packages"
  bash scripts/base-image.sh >/dev/null
fi
# The build context is exactly what the Dockerfile reads: no stray tarball from an earlier pack.
mkdir -p "$work/context/deploy/container"
cp Dockerfile .dockerignore "$work/context/"
cp deploy/container/healthcheck.mjs "$work/context/deploy/container/"
cp "$OUT/fred-$VERSION.tgz" "$work/context/"
docker build --force-rm -t "$IMAGE" "$work/context" >"$work/build.log" 2>&1 || {
  echo "release: docker build failed; the end of its output:" >&2
  tail -40 "$work/build.log" >&2
  exit 1
}
# Earlier builds' images (untagged by this one) and the build stage's image are left behind
# by the builder: only those, recognised by the Dockerfile's fred.stage label, are removed.
docker image prune --force --filter label=fred.stage >/dev/null
docker save -o "$OUT/fred-$VERSION-image.tar" "$IMAGE"
chmod 0644 "$OUT/fred-$VERSION-image.tar" # docker save writes 0600; every artifact is public

step "SBOM (CycloneDX, production dependencies)"
# Made from the tree the package installs, not from this checkout: in a checkout, `npm sbom
# --omit dev` drops production packages (ws among them: the devDependency "fred": "file:"
# links the checkout into itself). The tarball is unpacked, its shrinkwrapped production
# tree installed without running install scripts, and described without the devDependencies
# it does not install (npm sbom refuses a tree missing a declared dependency).
mkdir -p "$work/sbom"
tar -xzf "$OUT/fred-$VERSION.tgz" -C "$work/sbom" --strip-components=1
(
  cd "$work/sbom"
  node -e '
    const fs = require("node:fs");
    const pkg = JSON.parse(fs.readFileSync("package.json", "utf8"));
    delete pkg.devDependencies;
    fs.writeFileSync("package.json", JSON.stringify(pkg, null, 2));'
  npm ci --omit=dev --ignore-scripts --no-audit --no-fund --silent >/dev/null
  npm sbom --sbom-format cyclonedx
) |
  node -e '
    // npm names the root component after the directory; the package name is meant.
    let text = "";
    process.stdin.on("data", (d) => (text += d)).on("end", () => {
      const sbom = JSON.parse(text);
      sbom.metadata.component.name = process.argv[1];
      sbom.metadata.component.type = "application";
      process.stdout.write(`${JSON.stringify(sbom, null, 2)}\n`);
    });' fred >"$OUT/sbom.cdx.json"

step "SHA256SUMS and its signature"
(cd "$OUT" && sha256sum "fred-$VERSION.tgz" "fred-$VERSION-image.tar" sbom.cdx.json >SHA256SUMS)
comment="fred $VERSION SHA256SUMS"
if [[ -n "${FRED_RELEASE_SECRET_KEY:-}" ]]; then
  minisign -S -s "$FRED_RELEASE_SECRET_KEY" -m "$OUT/SHA256SUMS" -t "$comment" >&2
  cp "$REPO_KEY" "$OUT/release.pub"
  minisign -V -q -p "$REPO_KEY" -m "$OUT/SHA256SUMS" || {
    echo "release: FRED_RELEASE_SECRET_KEY is not the key of $REPO_KEY; the signature was not kept" >&2
    rm -f "$OUT/SHA256SUMS.minisig" "$OUT/release.pub"
    exit 1
  }
  step "done: $OUT, signed with the release key ($REPO_KEY)"
else
  minisign -G -W -p "$OUT/release.pub" -s "$work/throwaway.key" >/dev/null
  minisign -S -s "$work/throwaway.key" -m "$OUT/SHA256SUMS" -t "$comment (UNOFFICIAL)" >&2
  cat >"$OUT/UNOFFICIAL" <<EOF
This release was signed with a throwaway key (release.pub), not the release key in
$REPO_KEY: FRED_RELEASE_SECRET_KEY was not set. Do not publish it.
EOF
  cat >&2 <<EOF

!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!
!!! UNOFFICIAL RELEASE: FRED_RELEASE_SECRET_KEY is not set, so SHA256SUMS is signed
!!! with a throwaway key ($OUT/release.pub). Providers verify releases against
!!! $REPO_KEY, and this one does not verify with it. Do not publish it.
!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!

EOF
  step "done: $OUT (UNOFFICIAL)"
fi
ls -l "$OUT" >&2
