#!/usr/bin/env bash
# Builds the Debian packages (`make dist`): trit-agent for amd64, arm64, armhf
# (ARMv7) and armel (ARMv6: Pi Zero/1); trit-fleet and tritctl for amd64
# and arm64. Packages and SHA256SUMS go to $DIST (default dist/).
#
# nfpm (pinned in tools/go.mod, a module of its own so that its
# dependencies stay out of trit's go.mod) builds the packages through
# tools/mkdeb. Environment:
#   VERSION    package and binary version (default: internal/buildinfo)
#   DIST       output directory (default dist)
#   DIST_ONLY  space-separated "package:debarch" list to build a subset,
#              e.g. "trit-agent:amd64 trit-fleet:amd64"
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
DIST=${DIST:-dist}
VERSION=${VERSION:-$(sed -n 's/^var Version = "\(.*\)"/\1/p' internal/buildinfo/buildinfo.go)}
[ -n "$VERSION" ] || { echo "dist: no version (internal/buildinfo)" >&2; exit 1; }
WORK=${DIST_WORK:-build/dist}
DEFAULT="trit-agent:amd64 trit-agent:arm64 trit-agent:armhf trit-agent:armel trit-fleet:amd64 trit-fleet:arm64 tritctl:amd64 tritctl:arm64"
TARGETS=${DIST_ONLY:-$DEFAULT}

mkdir -p "$DIST" "$WORK"
WORK=$(cd "$WORK" && pwd) # absolute: tools/mkdeb is built from tools/ (go -C)
MKDEB=$WORK/mkdeb
"$GO" -C tools build -o "$MKDEB" ./mkdeb

ldflags="-s -w -X github.com/trit-iot/trit/internal/buildinfo.Version=$VERSION"

# goenv DEBARCH: the Go target of a Debian architecture.
goenv() {
	case $1 in
	amd64) echo "GOARCH=amd64" ;;
	arm64) echo "GOARCH=arm64" ;;
	armhf) echo "GOARCH=arm GOARM=7" ;;
	armel) echo "GOARCH=arm GOARM=6" ;;
	*) echo "dist: unknown architecture $1" >&2; return 1 ;;
	esac
}

# manpage BIN NAME: a man page of the program's --help and each command's.
manpage() {
	local bin=$1 name=$2 cmds c
	cmds=$("$bin" --help | awk '/^Available Commands:/{on=1;next} /^$/{on=0} on{print $1}' | grep -vx 'help\|completion' || true)
	{
		printf '.TH %s 1 "" "%s %s" "trit"\n' "$(echo "$name" | tr a-z A-Z)" "$name" "$VERSION"
		printf '.SH NAME\n%s \\- %s\n' "$name" "$("$bin" --help | head -n1 | sed 's/\\/\\\\/g')"
		printf '.SH SYNOPSIS\n.nf\n'; "$bin" --help | sed 's/\\/\\e/g; s/^[.'"'"']/\\\&&/'; printf '.fi\n'
		for c in $cmds; do
			printf '.SH "%s %s"\n.nf\n' "$(echo "$name" | tr a-z A-Z)" "$(echo "$c" | tr a-z A-Z)"
			"$bin" "$c" --help | sed 's/\\/\\e/g; s/^[.'"'"']/\\\&&/'
			printf '.fi\n'
		done
		printf '.SH SEE ALSO\nThe documentation in /usr/share/doc/%s and https://github.com/trit-iot/trit/tree/main/docs\n' "$name"
	} | gzip -9n >"$3"
}

rm -f "$DIST"/*.deb "$DIST"/SHA256SUMS
for t in $TARGETS; do
	pkg=${t%%:*} arch=${t#*:}
	build=$WORK/$pkg-$arch
	rm -rf "$build" && mkdir -p "$build"
	echo "== $pkg $VERSION $arch"
	env CGO_ENABLED=0 GOOS=linux $(goenv "$arch") "$GO" build -trimpath -ldflags "$ldflags" -o "$build/$pkg" "./cmd/$pkg"
	host=$WORK/host/$pkg
	if [ ! -x "$host" ] || [ "$("$host" --version)" != "$pkg version $VERSION" ]; then
		mkdir -p "$WORK/host"
		CGO_ENABLED=0 "$GO" build -trimpath -ldflags "$ldflags" -o "$host" "./cmd/$pkg"
	fi
	manpage "$host" "$pkg" "$build/$pkg.1.gz"
	conf=/etc/trit/${pkg#trit-}.toml
	adduser=/dev/null
	[ "$pkg" = trit-fleet ] && adduser=packaging/scripts/adduser.in
	for s in postinst prerm postrm; do
		sed -e "/^#ADDUSER\$/{r $adduser" -e 'd;}' -e "s|@NAME@|$pkg|g" -e "s|@CONF@|$conf|g" \
			"packaging/scripts/$s.in" >"$build/$s"
	done
	sed "s|@NAME@|$pkg|g" packaging/lintian-overrides >"$build/lintian-overrides"
	{
		printf '%s (%s) unstable; urgency=medium\n\n' "$pkg" "$VERSION"
		printf '  * Release %s; see the project'"'"'s git history for changes.\n\n' "$VERSION"
		printf ' -- trit maintainers <maintainers@trit-iot.invalid>  %s\n' \
			"$(date -u -R -d "@${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}")"
	} | gzip -9n >"$build/changelog.gz"
	DEB_ARCH=$arch VERSION=$VERSION BUILD=$build "$MKDEB" -config "packaging/$pkg.yaml" -target "$DIST"
done
(cd "$DIST" && sha256sum -- *.deb >SHA256SUMS)
echo "dist: $(ls "$DIST"/*.deb | wc -l) package(s) and SHA256SUMS in $DIST"
