# Installs the Node.js that Fred ships on (official build from the npm registry's
# node-linux-<arch> package, plus npm) into a fixed prefix, then puts it first on PATH.
#
#   source .ci/install-node.sh   # install if missing, then use it in this shell
#   bash .ci/install-node.sh     # only install (prints the prefix)
#
# Needs an npm to bootstrap (any version: the system's is fine) and the npm registry.
# Idempotent: when the prefix already holds the pinned versions nothing is fetched.
# Bump FRED_NODE_VERSION / FRED_NPM_VERSION here to move CI to a newer release.

FRED_NODE_VERSION="${FRED_NODE_VERSION:-24.22.3}"
FRED_NPM_VERSION="${FRED_NPM_VERSION:-11.21.3}"
FRED_NODE_PREFIX="${FRED_NODE_PREFIX:-/opt/node${FRED_NODE_VERSION%%.*}}"

fred_install_node() {
  local prefix="$FRED_NODE_PREFIX" arch
  case "$(uname -m)" in
    x86_64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *)
      echo "install-node: no node-linux build for $(uname -m)" >&2
      return 1
      ;;
  esac
  if [[ "$("$prefix/bin/node" --version 2>/dev/null)" == "v$FRED_NODE_VERSION" &&
    "$("$prefix/bin/node" "$prefix/lib/node_modules/npm/bin/npm-cli.js" --version 2>/dev/null)" == "$FRED_NPM_VERSION" ]]; then
    return 0
  fi
  if ! command -v npm >/dev/null; then
    echo "install-node: an npm is needed to fetch node-linux-$arch@$FRED_NODE_VERSION" >&2
    return 1
  fi
  local tmp
  tmp="$(mktemp -d)" || return 1
  echo "install-node: fetching node-linux-$arch@$FRED_NODE_VERSION and npm@$FRED_NPM_VERSION into $prefix" >&2
  if ! (
    set -e
    cd "$tmp"
    npm pack --silent "node-linux-$arch@$FRED_NODE_VERSION" "npm@$FRED_NPM_VERSION" >/dev/null
    mkdir -p stage/lib/node_modules/npm
    tar -xzf "node-linux-$arch-$FRED_NODE_VERSION.tgz" --strip-components=1 -C stage \
      package/bin package/include package/share package/LICENSE
    tar -xzf "npm-$FRED_NPM_VERSION.tgz" --strip-components=1 -C stage/lib/node_modules/npm
    ln -s ../lib/node_modules/npm/bin/npm-cli.js stage/bin/npm
    ln -s ../lib/node_modules/npm/bin/npx-cli.js stage/bin/npx
    [[ "$(stage/bin/node --version)" == "v$FRED_NODE_VERSION" ]]
    mkdir -p "$(dirname "$prefix")"
    rm -rf "$prefix.old"
    if [[ -e "$prefix" ]]; then mv "$prefix" "$prefix.old"; fi
    mv stage "$prefix"
    rm -rf "$prefix.old"
  ); then
    rm -rf "$tmp"
    echo "install-node: install into $prefix failed" >&2
    return 1
  fi
  rm -rf "$tmp"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -euo pipefail
  fred_install_node
  echo "$FRED_NODE_PREFIX"
else
  fred_install_node || return 1
  export PATH="$FRED_NODE_PREFIX/bin:$PATH"
  # node-gyp (better-sqlite3) takes the headers from the same build: nothing is downloaded.
  export npm_config_nodedir="$FRED_NODE_PREFIX"
  hash -r
fi
