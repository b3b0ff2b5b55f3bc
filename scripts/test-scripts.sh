#!/usr/bin/env bash
# Tests the helper scripts that `make test` relies on, without root and
# without touching the system: scripts/apt-wait.sh against a fake apt-get
# that reports a held lock, and scripts/fuzz.sh against a fake go that
# reports how many executions a fuzz target made. (scripts/test-dist.sh
# checks that building the packages leaves nothing in the checkout.)
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

# fake-go: prints $FAKE_OUT as `go test -fuzz` would, exits $FAKE_RC, and
# records its arguments in $tmp/go-args.
cat >"$tmp/fake-go" <<'FAKE'
#!/usr/bin/env bash
echo "$*" >>"$GO_ARGS"
printf '%b' "$FAKE_OUT"
exit "$FAKE_RC"
FAKE
chmod +x "$tmp/fake-go"
export GO_ARGS=$tmp/go-args
# fuzz OUT RC [TARGET...]: runs fuzz.sh with the fake on the targets
# (default ./a:FuzzA ./b:FuzzB); sets rc and out.
fuzz() {
	local o=$1 r=$2
	shift 2
	[ $# -gt 0 ] || set -- ./a:FuzzA ./b:FuzzB
	rm -f "$GO_ARGS"
	rc=0
	out=$(GO=$tmp/fake-go FAKE_OUT=$o FAKE_RC=$r FUZZTIME=20000x FUZZMINIMIZETIME= scripts/fuzz.sh "$@" 2>&1) || rc=$?
}
progress='fuzz: elapsed: 0s, gathering baseline coverage: 0/5 completed\nfuzz: elapsed: 3s, execs: 8000 (2667/sec), new interesting: 1 (total: 6)\n'

echo "== fuzz.sh: prints the executions and time of each target"
fuzz "${progress}fuzz: elapsed: 7s, execs: 20000 (2857/sec), new interesting: 3 (total: 8)\nPASS\nok\n" 0
[ "$rc" -eq 0 ] || fail "fuzz.sh failed on two passing targets: $out"
grep -qE '^FuzzA +\./a +20000 +[0-9.]+ s +7s +3$' <<<"$out" && grep -qE '^FuzzB +\./b +20000 ' <<<"$out" &&
	grep -q '^total [0-9.]* s$' <<<"$out" || fail "no executions and time per target: $out"
grep -q -- '-fuzz ^FuzzA$ -fuzztime 20000x -fuzzminimizetime 100x -timeout 5m ./a' "$GO_ARGS" ||
	fail "go test arguments: $(cat "$GO_ARGS")"

echo "== fuzz.sh: a target that makes fewer executions than asked fails the pass"
fuzz "${progress}PASS\n" 0
[ "$rc" -ne 0 ] && grep -q 'FuzzA .* 8000 .*FAILED: fewer than 20000 executions' <<<"$out" ||
	fail "rc $rc: $out"

echo "== fuzz.sh: a target given with a larger count runs, and is checked, at that count"
fuzz "fuzz: elapsed: 7s, execs: 20000 (2857/sec)\nPASS\n" 0 ./a:FuzzA ./c:FuzzC:50000x ./d:FuzzD:100x
[ "$rc" -ne 0 ] && grep -q 'FuzzC .*FAILED: fewer than 50000 executions' <<<"$out" && ! grep -q 'FuzzA .*FAILED' <<<"$out" &&
	! grep -q 'FuzzD .*FAILED' <<<"$out" || fail "rc $rc: $out"
grep -q -- '-fuzz ^FuzzC$ -fuzztime 50000x ' "$GO_ARGS" && grep -q -- '-fuzz ^FuzzD$ -fuzztime 20000x ' "$GO_ARGS" ||
	fail "go test arguments: $(cat "$GO_ARGS")"

echo "== fuzz.sh: a failing target fails the pass, with its output"
fuzz "${progress}--- FAIL: FuzzA\nFAIL\n" 1
[ "$rc" -ne 0 ] && grep -q -- '--- FAIL: FuzzA' <<<"$out" && grep -q 'FuzzA .*FAILED (exit 1)' <<<"$out" &&
	grep -q 'fuzz: FAILED: FuzzA FuzzB' <<<"$out" || fail "rc $rc: $out"

# make help: every documented target is listed with its text, and the
# targets a newcomer needs first are documented.
help=$(make -s --no-print-directory help) || fail "make help failed"
for t in help demo test test-accuracy dist; do
	grep -q "^$t: " <<<"$help" || fail "make help does not list $t"
done

echo "test-scripts: ok"
