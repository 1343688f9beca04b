#!/usr/bin/env bash
# Builds the release archives: one mcpgate_VERSION_OS_ARCH.tar.gz per platform in
# RELEASE_PLATFORMS (default: linux and darwin, amd64 and arm64) under DIST (default
# dist/), and DIST/SHA256SUMS.
#
# Reproducible: the same commit and Go version give the same bytes on any machine.
# Static CGO_ENABLED=0 binaries built with -trimpath, no VCS stamp and an empty build
# id; tar entries sorted by name, owned by 0:0, with one mtime (SOURCE_DATE_EPOCH,
# default the commit's time); gzip without a name or time stamp.
#
# Each archive holds mcpgate, LICENSE, NOTICE, README.md and the docs/ it links to,
# the shipped policies and their examples, and the service units of deploy/. The
# platforms build side by side; each says when it starts and when it is done.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${VERSION:-dev}
commit=${COMMIT:-}
dist=${DIST:-dist}
platforms=${RELEASE_PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
case $version in *[!A-Za-z0-9._+-]*) echo "release: VERSION $version: want letters, digits and . _ + -" >&2; exit 1;; esac

mkdir -p "$dist"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
# build_one OS ARCH NAME: one platform's binary and archive.
build_one() {
  local os=$1 arch=$2 name=$3 root=$stage/$3 t0=$SECONDS
  mkdir -p "$root/policies/examples" "$root/deploy" "$root/docs"
  echo "release: $name: building"
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch GOFLAGS= go build -trimpath -buildvcs=false \
    -ldflags "-s -w -buildid= -X main.version=$version -X main.commit=$commit" \
    -o "$root/mcpgate" ./cmd/mcpgate
  cp LICENSE NOTICE README.md "$root/"
  cp docs/*.md "$root/docs/"
  cp policies/*.js "$root/policies/"
  cp policies/examples/*.js "$root/policies/examples/"
  cp deploy/mcpgate.service deploy/com.example.mcpgate.plist "$root/deploy/"
  # Modes do not depend on the umask.
  find "$root" -type d -exec chmod 0755 {} +
  find "$root" -type f -exec chmod 0644 {} +
  chmod 0755 "$root/mcpgate"
  tar -C "$stage" --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner \
    --format=gnu -cf - "$name" | gzip -9 -n >"$dist/$name.tar.gz"
  echo "release: $name: done in $((SECONDS - t0)) s"
}

names=() pids=()
for p in $platforms; do
  os=${p%/*} arch=${p#*/}
  name=mcpgate_${version}_${os}_${arch}
  build_one "$os" "$arch" "$name" &
  pids+=($!) names+=("$name.tar.gz")
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
[ "$failed" -eq 0 ] || { echo "release: a platform failed to build (above)" >&2; exit 1; }
(cd "$dist" && sha256sum "${names[@]}" >SHA256SUMS)
echo "release: $dist/SHA256SUMS"
cat "$dist/SHA256SUMS"
