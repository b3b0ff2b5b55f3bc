#!/usr/bin/env bash
# Tests the Debian packages for real (part of `make test`; needs root, like
# the mosquitto install in scripts/test-deps.sh): builds every package of
# `make dist`, runs lintian on each (no errors allowed), then on this
# machine installs the amd64 packages with dpkg, runs the installed
# binaries' --version and config check, upgrades to packages rebuilt with a
# new version (the edited configuration must be kept), removes and purges
# them (nothing may be left but the files the operator added). Building
# them must leave nothing in the checkout either (git status --ignored
# before and after).
#
# Refuses to run where a trit package is already installed.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "test-dist: FAIL: $*" >&2; exit 1; }
if [ "$(id -u)" -ne 0 ]; then
	[ -n "${CI:-}" ] && fail "needs root (dpkg -i)"
	echo "test-dist: needs root (dpkg -i); skipped (CI fails instead)" >&2
	exit 0
fi
PKGS="trit-agent trit-fleet tritctl"
for p in $PKGS; do
	if dpkg-query -W -f '${db:Status-Status}' "$p" 2>/dev/null | grep -qv '^not-installed$'; then
		fail "$p is installed on this machine; the test installs and purges its own"
	fi
done

# checkout_files: the untracked and ignored files in the checkout, but for
# new .go and .md files (in a shared working tree someone may be writing
# sources meanwhile; no build writes those).
checkout_files() {
	git status --porcelain --ignored --untracked-files=all | grep -E '^(\?\?|!!) ' | grep -vE '^\?\? .*\.(go|md)$' | sort || true
}
in_git=
git rev-parse --is-inside-work-tree >/dev/null 2>&1 && in_git=1 && before=$(checkout_files)

tmp=$(mktemp -d)
user_existed=
getent passwd trit-fleet >/dev/null && user_existed=1
cleanup() {
	for p in $PKGS; do dpkg -P "$p" >/dev/null 2>&1 || true; done
	rm -rf "$tmp" /etc/trit/test-dist-*
	rmdir /etc/trit 2>/dev/null || true
	[ -n "$user_existed" ] || deluser --system --quiet trit-fleet >/dev/null 2>&1 || true
}
trap cleanup EXIT

v1=$(sed -n 's/^var Version = "\(.*\)"/\1/p' internal/buildinfo/buildinfo.go)
v2=${v1%.*}.$((${v1##*.} + 1))

echo "== build every package ($v1)"
VERSION=$v1 DIST=$tmp/v1 DIST_WORK=$tmp/work scripts/dist.sh
(cd "$tmp/v1" && sha256sum --quiet -c SHA256SUMS) || fail "SHA256SUMS do not match"
[ "$(ls "$tmp"/v1/*.deb | wc -l)" -eq 8 ] || fail "want 8 packages, got: $(ls "$tmp/v1")"

echo "== the ARM agents run on their CPUs (qemu-user: ARM1176 for armel, Cortex-A7 for armhf)"
for a in armel:arm1176:arm armhf:cortex-a7:arm arm64:cortex-a53:aarch64; do
	IFS=: read -r arch cpu q <<<"$a"
	dpkg-deb -x "$tmp/v1/trit-agent_${v1}_$arch.deb" "$tmp/x-$arch"
	got=$("qemu-$q-static" -cpu "$cpu" "$tmp/x-$arch/usr/bin/trit-agent" --version) || fail "trit-agent $arch on $cpu: exit $?"
	[ "$got" = "trit-agent version $v1" ] || fail "trit-agent $arch on $cpu --version: $got"
done

echo "== lintian"
lintian --fail-on error --tag-display-limit 0 "$tmp"/v1/*.deb || fail "lintian reports errors"

echo "== install $v1"
dpkg -i "$tmp"/v1/{trit-agent,trit-fleet,tritctl}_"$v1"_amd64.deb
for p in $PKGS; do
	got=$("/usr/bin/$p" --version)
	[ "$got" = "$p version $v1" ] || fail "$p --version: $got"
	man -w "$p" >/dev/null 2>&1 || [ -f "/usr/share/man/man1/$p.1.gz" ] || fail "$p: no man page"
done
[ -f /lib/systemd/system/trit-agent.service ] && [ -f /lib/systemd/system/trit-fleet.service ] || fail "units not installed"
getent passwd trit-fleet >/dev/null || fail "no trit-fleet user"
# The packaged configurations are commented examples: not valid, so the
# services were not started.
if trit-agent check-config --config /etc/trit/agent.toml 2>"$tmp/err"; then fail "the example agent.toml passed check-config"; fi
grep -q "device_id" "$tmp/err" || fail "agent check-config does not name device_id: $(cat "$tmp/err")"
if trit-fleet check-config --config /etc/trit/fleet.toml 2>"$tmp/err"; then fail "the example fleet.toml passed check-config"; fi

echo "== first configuration (as an operator would)"
tritctl keys gen --out /etc/trit/test-dist-release >/dev/null
tritctl keys gen --out /etc/trit/test-dist-command >/dev/null
head -c 24 /dev/urandom | base64 >/etc/trit/test-dist-token && chmod 600 /etc/trit/test-dist-token
cat >>/etc/trit/agent.toml <<CONF
device_id = "gw-test"
fleet = "main"
release_keys = ["/etc/trit/test-dist-release.pub"]
command_keys = ["/etc/trit/test-dist-command.pub"]
[mqtt]
broker = "tcp://127.0.0.1:1"
[[sensor]]
kind = "synthetic"
name = "accel"
rate = 1000.0
CONF
cat >>/etc/trit/fleet.toml <<CONF
[mqtt]
broker = "tcp://127.0.0.1:1"
[api]
token_file = "/etc/trit/test-dist-token"
[keys]
command_key = "/etc/trit/test-dist-command.key"
release_keys = ["/etc/trit/test-dist-release.pub"]
CONF
trit-agent check-config --config /etc/trit/agent.toml || fail "agent check-config on a valid config"
trit-fleet check-config --config /etc/trit/fleet.toml || fail "fleet check-config on a valid config"
cp /etc/trit/agent.toml "$tmp/agent.toml" && cp /etc/trit/fleet.toml "$tmp/fleet.toml"

echo "== upgrade to $v2"
VERSION=$v2 DIST=$tmp/v2 DIST_WORK=$tmp/work DIST_ONLY="trit-agent:amd64 trit-fleet:amd64 tritctl:amd64" scripts/dist.sh
dpkg -i "$tmp"/v2/*.deb </dev/null
for p in $PKGS; do
	got=$("/usr/bin/$p" --version)
	[ "$got" = "$p version $v2" ] || fail "after upgrade, $p --version: $got"
	[ "$(dpkg-query -W -f '${Version}' "$p")" = "$v2" ] || fail "dpkg has $p at $(dpkg-query -W -f '${Version}' "$p")"
done
cmp /etc/trit/agent.toml "$tmp/agent.toml" || fail "upgrade changed the edited agent.toml"
cmp /etc/trit/fleet.toml "$tmp/fleet.toml" || fail "upgrade changed the edited fleet.toml"
trit-agent check-config --config /etc/trit/agent.toml >/dev/null || fail "agent config invalid after upgrade"

echo "== remove"
dpkg -r $PKGS
for p in $PKGS; do [ ! -e "/usr/bin/$p" ] || fail "/usr/bin/$p left after remove"; done
[ -f /etc/trit/agent.toml ] || fail "remove deleted the conffile (only purge may)"

echo "== purge"
dpkg -P $PKGS
for p in $PKGS; do
	dpkg-query -W "$p" >/dev/null 2>&1 && [ "$(dpkg-query -W -f '${db:Status-Status}' "$p")" != not-installed ] &&
		fail "$p still known to dpkg after purge"
	for f in /usr/bin/$p /lib/systemd/system/$p.service /usr/share/doc/$p /usr/share/man/man1/$p.1.gz \
		/usr/share/lintian/overrides/$p /var/lib/$p /var/lib/private/$p; do
		[ ! -e "$f" ] || fail "$f left after purge"
	done
done
left=$(cd /etc/trit && ls -A | grep -v '^test-dist-' || true)
[ -z "$left" ] || fail "purge left in /etc/trit: $left"
[ -f /etc/trit/test-dist-release.key ] || fail "purge deleted the operator's own files"

echo "== nothing left in the checkout"
if [ -n "$in_git" ]; then
	left=$(comm -13 <(echo "$before") <(checkout_files))
	[ -z "$left" ] || fail "building the packages left in the checkout:
$left"
else
	echo "test-dist: not a git checkout; not checked" >&2
fi
echo "test-dist: ok (8 packages lintian-clean; amd64 install, $v1 -> $v2 upgrade with the edited configuration kept, remove, purge)"
