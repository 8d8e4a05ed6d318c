#!/bin/sh
# Refreshes t/web/axe/axe.min.js, the axe-core that t/web/120-axe.t runs in
# chromium, from npm as package-lock.json pins it (docs/testing.md).  To
# move to a newer axe-core: change the version in package.json, run
# `npm install --package-lock-only` here, then this, and commit the three
# files.  The suite itself never needs the network: axe.min.js is committed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tent-axe-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
cp "$here/package.json" "$here/package-lock.json" "$tmp/"
(cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund)
cp "$tmp/node_modules/axe-core/axe.min.js" "$here/axe.min.js"
cp "$tmp/node_modules/axe-core/LICENSE" "$here/LICENSE.axe-core"
echo "axe-core $(node -p "require('$tmp/node_modules/axe-core/package.json').version") -> $here/axe.min.js"
