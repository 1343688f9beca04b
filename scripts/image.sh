#!/usr/bin/env bash
# Builds the container image IMAGE (default mcpgate:VERSION) from Containerfile with
# podman, else buildah. The binary is the linux/ARCH (default: this machine's) build
# of scripts/release.sh, taken from its archive in DIST, so the image holds exactly
# the released bytes. IMAGE_ARCHIVE=FILE also saves the image there as an OCI
# archive. Nothing is pulled: the image is FROM scratch, with no RUN step.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${VERSION:-dev}
arch=${ARCH:-$(go env GOARCH)}
dist=${DIST:-dist}
image=${IMAGE:-mcpgate:$version}
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
if command -v podman >/dev/null 2>&1; then
  tool=podman
elif command -v buildah >/dev/null 2>&1; then
  tool=buildah
else
  echo "image: neither podman nor buildah is installed (apt-get install podman)" >&2
  exit 1
fi

name=mcpgate_${version}_linux_${arch}
[ -f "$dist/$name.tar.gz" ] || RELEASE_PLATFORMS=linux/$arch DIST=$dist bash scripts/release.sh >/dev/null
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
tar -C "$ctx" -xzf "$dist/$name.tar.gz"
src=$ctx/$name
root=$ctx/rootfs
mkdir -p "$root/usr/local/bin" "$root/etc/mcpgate/policies" "$root/usr/share/mcpgate/examples" \
  "$root/tmp" "$root/var/lib" "$ctx/state"
cp "$src/mcpgate" "$root/usr/local/bin/mcpgate"
cp "$src"/policies/*.js "$root/etc/mcpgate/policies/"
cp "$src"/policies/examples/*.js "$src/LICENSE" "$src/NOTICE" "$root/usr/share/mcpgate/examples/"
cp deploy/image/config.json "$root/etc/mcpgate/config.json"
# Remote upstreams, OTLP and PostgreSQL over TLS need the CA bundle.
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  mkdir -p "$root/etc/ssl/certs"
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
fi
find "$root" -type d -exec chmod 0755 {} +
find "$root" -type f -exec chmod 0644 {} +
chmod 0755 "$root/usr/local/bin/mcpgate"
chmod 1777 "$root/tmp"
chmod 0700 "$ctx/state"
cp Containerfile "$ctx/Containerfile"

args=(--file "$ctx/Containerfile" --tag "$image" --build-arg "VERSION=$version"
  --build-arg "REVISION=${COMMIT:-}" --timestamp "$epoch")
echo "image: $tool build $image ($name)"
if [ $tool = podman ]; then
  podman build --quiet --pull=never "${args[@]}" "$ctx" >/dev/null
else
  buildah bud --quiet --pull-never "${args[@]}" "$ctx" >/dev/null
fi
if [ -n "${IMAGE_ARCHIVE:-}" ]; then
  rm -f "$IMAGE_ARCHIVE"
  $tool push --quiet "$image" "oci-archive:$IMAGE_ARCHIVE"
  echo "image: $IMAGE_ARCHIVE"
fi
echo "image: $image"
