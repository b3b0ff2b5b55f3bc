#!/usr/bin/env bash
# Makes sure the programs the test suite runs for real are installed:
# mosquitto (integration tests start their own broker), postgresql (the
# PostgreSQL store's tests start their own server from its binaries, as
# the unprivileged user postgres when run as root), nats-server (a
# three-node cluster with JetStream and MQTT: not Debian's 2.9.10 but the
# release go.mod pins as a tool, built here from the Go module proxy by
# `go tool -n nats-server` into Go's build cache, where wire/natstest finds
# it), qemu-user-static
# (ARM builds of the tests run under it) and chromium (the web console's
# browser test drives it headless), lintian and adduser (scripts/test-dist.sh
# checks and installs the Debian packages). As root it installs what is missing
# from Debian's packages, waiting (at most TRIT_APT_LOCK_WAIT seconds,
# default 600) while another apt-get holds apt's lock (scripts/apt-wait.sh);
# otherwise it fails and says how to install them.
set -euo pipefail
cd "$(dirname "$0")"

missing=()
command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ] || missing+=(mosquitto)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || [ -n "${TRIT_PG_BIN:-}" ] || missing+=(postgresql)
command -v qemu-aarch64-static >/dev/null 2>&1 && command -v qemu-arm-static >/dev/null 2>&1 || missing+=(qemu-user-static)
command -v bzip2 >/dev/null 2>&1 || missing+=(bzip2)
command -v lintian >/dev/null 2>&1 || missing+=(lintian)
command -v adduser >/dev/null 2>&1 || [ -x /usr/sbin/adduser ] || missing+=(adduser)
command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || [ -n "${TRIT_CHROMIUM:-}" ] || missing+=(chromium)

# nats-server: the pinned release, whatever the machine has (a few
# minutes the first time on 2 cores, a lookup after).
if [ -z "${TRIT_NATS_SERVER:-}" ]; then
  nats=$(cd .. && "${GO:-go}" tool -n nats-server) || {
    echo "test-deps: building the nats-server go.mod pins failed (go tool -n nats-server)" >&2
    exit 1
  }
  "$nats" --version >&2
fi

[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "test-deps: installing ${missing[*]} from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  ./apt-wait.sh apt-get update -qq
  ./apt-wait.sh apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  exit 0
fi

echo "test-deps: missing ${missing[*]}." >&2
echo "  Install them with: sudo apt-get install ${missing[*]}" >&2
echo "  (make test runs them for real and never skips the tests that need them)" >&2
exit 1
