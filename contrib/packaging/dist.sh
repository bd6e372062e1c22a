#!/usr/bin/env bash
# make dist: Kule's release files for each of ARCHES (default amd64 and
# arm64), in DIST (default dist/):
#   kule_<version>_<arch>.deb, kule-<version>-1.<arch>.rpm — kule,
#     kule-plugins and kule-sandbox in /usr/bin, man pages, bash/zsh/fish completions and the
#     systemd user unit (nfpm, at the version pinned below);
#   kule-desktop_<version>_<arch>.deb, kule-desktop-<version>-1.<arch>.rpm —
#     the control room's window (kule-desktop, its launcher and icon), for
#     DESKTOP_ARCHES only (default: this machine's architecture): it links
#     WebKitGTK, whose C libraries for another architecture are not here;
#   kule-<version>-linux-<arch>.tar.gz — the command alone (kule, and
#     kule-plugins, which serves its built-in plugins);
#   SHA256SUMS over all of them.
# The build is reproducible: -trimpath, no build id, no VCS stamp (the
# version and commit are linked in), every time in the packages is
# SOURCE_DATE_EPOCH (the commit's time), archives sorted and owned by root.
# Two runs of one commit give the same bytes (contrib/packaging TestDist).
#
# arm64 is cross-built with cgo: it needs gcc-aarch64-linux-gnu and
# libc6-dev-arm64-cross (Debian's names; .ci/run installs them).
set -euo pipefail
cd "$(dirname "$0")/../.."

GO=${GO:-go}
VERSION=${VERSION:?make dist sets VERSION}
COMMIT=${COMMIT:-unknown}
DIST=${DIST:-dist}
ARCHES=${ARCHES:-amd64 arm64}
DESKTOP_ARCHES=${DESKTOP_ARCHES-$($GO env GOHOSTARCH)}
NFPM_VERSION=v2.45.2
NFPM=${NFPM:-"$GO run github.com/goreleaser/nfpm/v2/cmd/nfpm@$NFPM_VERSION"}
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
export TZ=UTC LC_ALL=C
umask 022

cc_for() {
	case $1 in
	"$($GO env GOHOSTARCH)") echo "${CC:-gcc}" ;;
	amd64) echo x86_64-linux-gnu-gcc ;;
	arm64) echo aarch64-linux-gnu-gcc ;;
	*) echo "dist: no C cross compiler known for $1" >&2; exit 1 ;;
	esac
}

DIST=$(mkdir -p "$DIST" && cd "$DIST" && pwd)
rm -rf "$DIST"/*.deb "$DIST"/*.rpm "$DIST"/*.tar.gz "$DIST"/SHA256SUMS "$DIST"/.stage
stage_root="$DIST/.stage"
mkdir -p "$stage_root/common"

host=$($GO env GOHOSTARCH)
for arch in $DESKTOP_ARCHES; do
	if [ "$arch" = "$host" ] && ! pkg-config --exists webkit2gtk-4.1 gtk+-3.0; then
		echo "dist: kule-desktop links WebKitGTK 4.1 and GTK 3 (Debian: apt install libwebkit2gtk-4.1-dev); or leave the desktop out: DESKTOP_ARCHES= make dist" >&2
		exit 1
	fi
done

# This machine's architecture first: its kule writes the man pages and
# completions, the same on every architecture, from the command tree.
ordered=""
for a in $ARCHES; do
	if [ "$a" = "$host" ]; then ordered="$a $ordered"; else ordered="$ordered $a"; fi
done
for arch in $ordered; do
	cc=$(cc_for "$arch")
	if ! command -v "$cc" >/dev/null; then
		echo "dist: $cc is not installed: it builds kule's C parts for $arch (Debian: apt install gcc-aarch64-linux-gnu libc6-dev-arm64-cross). Nothing was packaged for $arch." >&2
		exit 1
	fi
	stage="$stage_root/$arch"
	mkdir -p "$stage"
	GOOS=linux GOARCH=$arch CGO_ENABLED=1 CC=$cc \
		$GO build -trimpath -buildvcs=false -ldflags "-buildid= -X main.version=$VERSION -X main.commit=$COMMIT" -o "$stage/kule" ./cmd/kule
	if [ ! -d "$stage_root/common/man" ]; then
		if [ "$arch" = "$host" ]; then
			"$stage/kule" __packaging "$stage_root/common"
		else # no kule of this machine's own among ARCHES
			$GO run -trimpath -buildvcs=false -ldflags "-X main.version=$VERSION -X main.commit=$COMMIT" ./cmd/kule __packaging "$stage_root/common"
		fi
		gzip -n -9 "$stage_root/common/man/"*.1
	fi
	GOOS=linux GOARCH=$arch CGO_ENABLED=1 CC=$cc \
		$GO build -trimpath -buildvcs=false -ldflags "-buildid=" -o "$stage/kule-plugins" ./cmd/kule-plugins
	cp -r "$stage_root/common/man" "$stage_root/common/completions" "$stage/"
	cp contrib/packaging/kule.service "$stage/"
	GOOS=linux GOARCH=$arch CGO_ENABLED=1 CC=$cc \
		$GO build -trimpath -buildvcs=false -tags netgo,osusergo -ldflags "-buildid= -linkmode=external -extldflags=-static" -o "$stage/kule-sandbox" ./cmd/kule-sandbox
	find "$stage" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

	# nfpm expands variables in a few fields only: the config is written
	# out whole for this architecture.
	sed -e "s|\${STAGE}|$stage|g" -e "s|\${ARCH}|$arch|g" -e "s|\${VERSION}|$VERSION|g" contrib/packaging/nfpm.yaml >"$stage/nfpm.yaml"
	configs="$stage/nfpm.yaml"
	if [[ " $DESKTOP_ARCHES " == *" $arch "* ]]; then
		GOOS=linux GOARCH=$arch CGO_ENABLED=1 CC=$cc \
			$GO build -trimpath -buildvcs=false -ldflags "-buildid= -X main.version=$VERSION" -o "$stage/kule-desktop" ./cmd/kule-desktop
		cp contrib/packaging/kule.desktop contrib/packaging/kule.svg "$stage/"
		find "$stage" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
		sed -e "s|\${STAGE}|$stage|g" -e "s|\${ARCH}|$arch|g" -e "s|\${VERSION}|$VERSION|g" contrib/packaging/nfpm-desktop.yaml >"$stage/nfpm-desktop.yaml"
		configs="$configs $stage/nfpm-desktop.yaml"
	fi
	for config in $configs; do
		for packager in deb rpm; do
			$NFPM package --config "$config" --packager "$packager" --target "$DIST/"
		done
	done

	name="kule-$VERSION-linux-$arch"
	mkdir -p "$stage/tar/$name"
	cp "$stage/kule" "$stage/kule-plugins" "$stage/tar/$name/"
	touch -h -d "@$SOURCE_DATE_EPOCH" "$stage/tar/$name"
	tar -C "$stage/tar" --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
		--format=gnu -cf - "$name" | gzip -n -9 >"$DIST/$name.tar.gz"
done
rm -rf "$stage_root"
(cd "$DIST" && sha256sum -- *.deb *.rpm *.tar.gz >SHA256SUMS)
echo "dist: $(cd "$DIST" && ls | tr '\n' ' ')in $DIST"
