#!/usr/bin/env bash
# scripts/fuzz.sh PKG:TARGET[:Nx]... runs each fuzz target for a stated number
# of executions (`make fuzz`, part of `make test`) and prints, per target,
# the executions it really made, the wall time (building the instrumented
# test binary included), the fuzzing time as Go reports it and the new
# inputs found; then a table of all and the pass's total time.
#
#   FUZZTIME          executions per target, as Nx (default 20000x); a
#                     target given as PKG:TARGET:Nx makes at least N
#   FUZZMINIMIZETIME  bound on minimising each new input (default 100x,
#                     executions; a duration such as 1s works too)
#   FUZZTIMEOUT       go test -timeout per target (default 5m): a target
#                     that hangs fails instead of stalling make test
#
# Executions are Go's count, which includes those spent minimising new
# inputs. Minimising by time is what made fuzzing crawl: FuzzDecode made
# 55 executions in 45 s with Go's default of 60 s an input (-fuzztime 45s),
# and its 20,000 took 14 s with 1 s an input against 5 s with 100
# executions an input. A count also does the same work on a loaded machine.
#
# A target fails the run if it fails, or if it reports fewer executions
# than it was asked for. A crasher is written to the package's
# testdata/fuzz/ and becomes a regression test: commit it with the fix.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
FUZZTIME=${FUZZTIME:-20000x}
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-100x}
FUZZTIMEOUT=${FUZZTIMEOUT:-5m}
case $FUZZTIME in
*x) count=${FUZZTIME%x} ;;
*) count=0 ;; # a duration: no count to check
esac

log=$(mktemp)
trap 'rm -f "$log"' EXIT
summary=()
failed=()
# ms: milliseconds since the epoch; secs START: seconds since START, as 1.2.
ms() { date +%s%3N; }
secs() { local d=$(($(ms) - $1)); printf '%d.%d' $((d / 1000)) $((d % 1000 / 100)); }
total_start=$(ms)
for t in "$@"; do
	IFS=: read -r pkg name min <<<"$t"
	want=$count fuzztime=$FUZZTIME
	if [ -n "$min" ] && [ "$count" -gt 0 ] && [ "${min%x}" -gt "$count" ]; then
		want=${min%x} fuzztime=$min
	fi
	echo "== fuzz $name ($pkg, $fuzztime, minimising each new input for at most $FUZZMINIMIZETIME)"
	start=$(ms)
	rc=0
	"$GO" test -run '^$' -fuzz "^$name\$" -fuzztime "$fuzztime" -fuzzminimizetime "$FUZZMINIMIZETIME" \
		-timeout "$FUZZTIMEOUT" "$pkg" >"$log" 2>&1 || rc=$?
	took=$(secs "$start")
	# The coordinator's last progress line: "fuzz: elapsed: 3s, execs: 20000
	# (6523/sec), new interesting: 2 (total: 17)".
	last=$(grep -E '^fuzz: elapsed: .*, execs: [0-9]+' "$log" | tail -n1 || true)
	fuzzing=$(sed -nE 's/^fuzz: elapsed: ([^,]+),.*/\1/p' <<<"$last")
	execs=$(sed -nE 's/.*execs: ([0-9]+).*/\1/p' <<<"$last")
	new=$(sed -nE 's/.*new interesting: ([0-9]+).*/\1/p' <<<"$last")
	execs=${execs:-0} new=${new:-0} fuzzing=${fuzzing:--}
	line=$(printf '%-24s %-22s %10d %8s s %8s %5d' "$name" "$pkg" "$execs" "$took" "$fuzzing" "$new")
	if [ "$rc" -ne 0 ]; then
		cat "$log"
		line="$line   FAILED (exit $rc)"
		failed+=("$name")
	elif [ "$execs" -lt "$want" ]; then
		cat "$log"
		line="$line   FAILED: fewer than $want executions"
		failed+=("$name")
	fi
	echo "$line"
	summary+=("$line")
done
total=$(secs "$total_start")

echo
echo "== fuzz pass: $# targets, $FUZZTIME each (or as given), minimisation at most $FUZZMINIMIZETIME an input"
printf '%-24s %-22s %10s %10s %8s %5s\n' target package executions wall fuzzing new
printf '%s\n' "${summary[@]}"
echo "total $total s"
if [ ${#failed[@]} -gt 0 ]; then
	echo "fuzz: FAILED: ${failed[*]}" >&2
	exit 1
fi
