#!/usr/bin/env bash
# Tests the helper scripts that `make test` relies on, without root and
# without touching the system: scripts/apt-wait.sh against a fake apt-get
# that reports a held lock. (scripts/test-dist.sh checks that building the
# packages leaves nothing in the checkout.)
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "test-scripts: FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# fake-apt-get LOCKED_CALLS OTHER_ERROR: fails like apt-get whose lock is
# held for its first LOCKED_CALLS calls (-1: always), then succeeds, or
# fails with OTHER_ERROR if that is set. Counts its calls in $tmp/calls.
cat >"$tmp/fake-apt-get" <<'FAKE'
#!/usr/bin/env bash
n=$(( $(cat "$CALLS" 2>/dev/null || echo 0) + 1 ))
echo "$n" >"$CALLS"
if [ "$LOCKED" -lt 0 ] || [ "$n" -le "$LOCKED" ]; then
	echo "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)" >&2
	echo "E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?" >&2
	exit 100
fi
if [ -n "$OTHER" ]; then echo "E: $OTHER" >&2; exit 100; fi
echo "installed $*"
FAKE
chmod +x "$tmp/fake-apt-get"
export CALLS=$tmp/calls TRIT_APT_LOCK_RETRY=1

# run LOCKED OTHER WAIT: runs apt-wait.sh on the fake; sets rc, out, err, calls.
run() {
	rm -f "$CALLS"
	rc=0
	LOCKED=$1 OTHER=$2 TRIT_APT_LOCK_WAIT=$3 scripts/apt-wait.sh "$tmp/fake-apt-get" install -y x \
		>"$tmp/out" 2>"$tmp/err" || rc=$?
	out=$(cat "$tmp/out") err=$(cat "$tmp/err") calls=$(cat "$CALLS")
}

echo "== apt-wait: a lock held for two tries is waited for"
run 2 "" 30
[ "$rc" -eq 0 ] && [ "$calls" -eq 3 ] && [ "$out" = "installed install -y x" ] ||
	fail "rc $rc after $calls calls, out $out, err $err"
grep -q "waiting for apt's lock .*: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)" <<<"$err" ||
	fail "does not say what it waits for: $err"

echo "== apt-wait: a lock never released is given up on in bounded time"
start=$SECONDS
run -1 "" 3
[ "$rc" -eq 100 ] && [ $((SECONDS - start)) -le 10 ] && grep -q "gave up after [0-9]* s" <<<"$err" ||
	fail "rc $rc after $((SECONDS - start)) s, err $err"

echo "== apt-wait: any other failure is returned at once, with apt's message"
run 0 "Unable to locate package x" 30
[ "$rc" -eq 100 ] && [ "$calls" -eq 1 ] && [ "$err" = "E: Unable to locate package x" ] ||
	fail "rc $rc after $calls calls, err $err"

echo "== test-deps.sh runs apt-get through apt-wait.sh"
grep -q 'apt-wait.sh apt-get update' scripts/test-deps.sh && grep -q 'apt-wait.sh apt-get install' scripts/test-deps.sh ||
	fail "scripts/test-deps.sh does not use apt-wait.sh"

echo "test-scripts: ok"
