#!/usr/bin/env bash
# apt-wait.sh COMMAND [ARG...] runs an apt-get command and, while another
# package manager (apt-get, unattended-upgrades, dpkg) holds one of apt's
# locks, waits for it instead of failing at once ("Could not get lock
# /var/lib/dpkg/lock-frontend"). apt-get's own DPkg::Lock::Timeout covers
# the dpkg lock but not `apt-get update`'s lists lock (apt 2.6), so this
# retries the whole command: a command that cannot get its lock has done
# nothing yet. It says what it waits for, retries every
# TRIT_APT_LOCK_RETRY seconds (default 5) and gives up after
# TRIT_APT_LOCK_WAIT seconds (default 600). Any other failure is returned at
# once with the command's own messages. scripts/test-scripts.sh tests it.
set -uo pipefail

max=${TRIT_APT_LOCK_WAIT:-600}
retry=${TRIT_APT_LOCK_RETRY:-5}
err=$(mktemp)
trap 'rm -f "$err"' EXIT
start=$SECONDS
said=-1
while :; do
	"$@" 2>"$err"
	rc=$?
	lock=$(grep -m1 -E 'Could not get lock|Unable to lock|Unable to acquire the dpkg frontend lock' "$err" | sed 's/^E: //')
	if [ "$rc" -eq 0 ] || [ -z "$lock" ]; then
		cat "$err" >&2
		exit "$rc"
	fi
	waited=$((SECONDS - start))
	if [ "$waited" -ge "$max" ]; then
		echo "apt-wait: gave up after ${waited} s waiting for apt's lock: $lock" >&2
		echo "  Run again once the other package manager is done, or set TRIT_APT_LOCK_WAIT (seconds)." >&2
		exit "$rc"
	fi
	if [ "$said" -lt 0 ] || [ $((waited - said)) -ge 60 ]; then
		echo "apt-wait: waiting for apt's lock (${waited} s of at most ${max} s) before $1 ${2:-}: $lock" >&2
		said=$waited
	fi
	sleep "$((max - waited < retry ? max - waited : retry))"
done
