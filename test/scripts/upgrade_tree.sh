#!/usr/bin/env bash
# As root: prepare the PostgreSQL tree the upgrade test runs on.
#
#   bash test/scripts/upgrade_tree.sh SRC PG_CONFIG DEST OWNER
#
# SRC is a git checkout of adk_runner; this build must already be
# installed into the tree of PG_CONFIG.  DEST becomes a private copy of
# that tree (DEST/usr/lib/postgresql/NN, DEST/usr/share/postgresql/NN)
# holding this build's extension scripts, but the library of the last
# release (built from the commit sql/releases/releases.txt names) as
# adk_runner.so (a copy in DEST/adk_runner.so.old), with this build's
# library beside the tree as DEST/adk_runner.so.new: the state of a server that has the previous
# release, before a package upgrade.  test/t/024_upgrade.pl then swaps the
# library, restarts and runs ALTER EXTENSION adk_runner UPDATE.  DEST ends
# up owned by OWNER.  Prints the install path (for Cluster.pm) last.
set -euo pipefail
src=$1 pgc=$2 dest=$3 owner=$4
release=$(grep -v '^#' "$src/sql/releases/releases.txt" | tail -n 1)
version=${release%% *}
commit=${release##* }
git -C "$src" cat-file -e "$commit^{commit}" 2>/dev/null ||
    { echo "upgrade_tree: commit $commit of release $version is not in $src (a shallow clone?)" >&2; exit 3; }
bindir=$("$pgc" --bindir)
root=$(cd "$bindir/../../../.." && pwd)	# /usr for Debian's tree
major=$(basename "$(dirname "$bindir")")
rm -rf "$dest"
mkdir -p "$dest/usr/lib/postgresql" "$dest/usr/share/postgresql"
cp -a "$root/lib/postgresql/$major" "$dest/usr/lib/postgresql/"
cp -a "$root/share/postgresql/$major" "$dest/usr/share/postgresql/"
lib=$dest/usr/lib/postgresql/$major/lib
mv "$lib/adk_runner.so" "$dest/adk_runner.so.new"
# the release's library, built from its commit (no bitcode: not needed)
build=$(mktemp -d /tmp/adk-release.XXXXXX)
trap 'rm -rf "$build"' EXIT
git -C "$src" archive "$commit" | tar -x -C "$build"
make -s -C "$build" USE_PGXS=1 PG_CONFIG="$pgc" with_llvm=no -j2 >"$build/make.log" 2>&1 ||
    { tail -n 50 "$build/make.log" >&2; exit 1; }
cp "$build/adk_runner.so" "$dest/adk_runner.so.old"
cp "$build/adk_runner.so" "$lib/adk_runner.so"
echo "$version" >"$dest/release"
chown -R "$owner" "$dest"
echo "$dest/usr/lib/postgresql/$major"
