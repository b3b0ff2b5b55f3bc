#!/usr/bin/env bash
# The ablation of docs/BENCHMARKS.md: from the paper's setting to trit's
# default, one change at a time, on a standard dataset (test split).
#   scripts/ablation.sh usps [more datasets...]
# Needs TRIT_DATA (or ../shared/data) and a built tritctl (TRITCTL, default:
# go run ./cmd/tritctl). Prints one Markdown row per variant; the JSON of
# each run is kept in ${OUT:-ablation}/DATASET-VARIANT.json.
set -euo pipefail
data=${TRIT_DATA:-../shared/data}
out=${OUT:-ablation}
mkdir -p "$out"
tritctl=${TRITCTL:-}
if [ -z "$tritctl" ]; then
  tritctl="$out/tritctl"
  go build -o "$tritctl" ./cmd/tritctl
fi
variants=(
  "paper|--p 2048 --weights ternary --scaling minmax --search grid"
  "halving|--p 2048 --weights ternary --scaling minmax"
  "budget|--embedding kernel --weights ternary --scaling minmax"
  "robust|--embedding kernel --weights ternary"
  "binary|--embedding kernel --weights binary"
  "mix|--embedding mix"
  "thresholds|--embedding thresholds"
  "projection|--embedding projection"
  "default|"
)
echo "| dataset | variant | flags | accuracy % | balanced % | bytes | structure | σ | C | train s | fit s |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for ds in "$@"; do
  for v in "${variants[@]}"; do
    name=${v%%|*}; flags=${v#*|}
    json="$out/$ds-$name.json"
    if [ ! -s "$json" ]; then
      # shellcheck disable=SC2086
      if ! "$tritctl" train --standard "$ds" --data-dir "$data" $flags -o "$out/$ds-$name.trit" --json >"$json.tmp" 2>"$out/$ds-$name.log"; then
        echo "| $ds | $name | \`$flags\` | failed: $(tail -1 "$out/$ds-$name.log") | | | | | | | |"
        rm -f "$json.tmp"; continue
      fi
      mv "$json.tmp" "$json"
    fi
    jq -r --arg ds "$ds" --arg name "$name" --arg flags "$flags" '
      def st: .structure | (if .p == 0 then "\(.thresholds) thresholds/feature"
        elif .projection > 0 then "p=\(.p) on \(.projection) directions"
        elif .thresholds > 0 then "p=\(.p) + \(.thresholds) thresholds (ρ=\(.threshold_weight // 1))"
        else "p=\(.p)" end) + (if .binary then ", binary" else ", ternary" end);
      "| \($ds) | \($name) | `\($flags)` | \(.accuracy*100|round/100) | \(.balanced_accuracy*100|round/100) | \(.model_bytes) | \(st) | \(.sigma) | \(.c) | \(.train_seconds|round) | \(.fit_seconds*10|round/10) |"' "$json"
  done
done
