# trit — see README.md. `make demo` and `make test` are the two commands a new
# machine needs; everything else here is for development.

GO       ?= go
# The Go release that builds and tests trit: go1.27.3, which the go command
# fetches from the Go module proxy on its first use (about 76 MB, 10 s).
# The machine's own Go may be older: 1.26.8 has known vulnerabilities in
# net/http, crypto/tls, crypto/x509 and html/template that 1.27.3 fixes
# (`make vulncheck`). `make GOTOOLCHAIN=local …` builds with the machine's
# own Go instead.
GOTOOLCHAIN ?= go1.27.3
export GOTOOLCHAIN
# Real datasets for the accuracy checks of `make test-accuracy` (never
# committed): ../shared/data beside the checkout when it is there.
TRIT_DATA ?= $(abspath $(wildcard ../shared/data))
export TRIT_DATA

# Fuzz targets run briefly by `make test` (package:target, or
# package:target:Nx for a target that makes at least N executions): every
# decoder and parser. The bundle decoder, which reads what arrives over
# the network, gets five times the budget. A crasher found here is
# written to the package's testdata/fuzz/ and becomes a regression test:
# commit it with the fix.
FUZZ_TARGETS ?= \
	./training/data:FuzzLIBSVM ./training/data:FuzzDense ./training/data:FuzzIDX \
	./training/data:FuzzCSV ./training/data:FuzzARFF ./training/data:FuzzParseReadSpec \
	./training/linear:FuzzTrain \
	./store:FuzzDecodeSlot ./store:FuzzDecodeOutboxRecord ./store:FuzzDecodeJob ./store:FuzzDecodeU64 \
	./store:FuzzDecodeOperator ./store:FuzzDecodeAudit ./store:FuzzDecodeConsoleSession ./store:FuzzReadAuditExport \
	./store:FuzzDecodeDoc \
	./inference/bundle:FuzzDecode:100000x ./inference/bundle:FuzzKeyFile \
	./sensors:FuzzConfig ./sensors/features:FuzzSpec \
	./sensors/replay:FuzzLIBSVMLine ./sensors/replay:FuzzCSV ./sensors/replay:FuzzLIBSVMFile \
	./wire:FuzzDecodeCommand ./wire:FuzzVerifyRequest ./wire:FuzzDecodePayloads ./wire:FuzzParseTopic ./wire:FuzzLimitPackets \
	./agent:FuzzLoadConfig \
	./sensors/sensorcmd:FuzzParseConfig ./sensors/sensorcmd:FuzzParseSpec \
	./fleet/server:FuzzParseConfig ./fleet/server:FuzzParseCredentials ./fleet/server:FuzzAPI ./api:FuzzParseExpiry ./fleet/console:FuzzRolloutForm \
	./fleet/server:FuzzTrustedProxies ./fleet/server:FuzzReadCheckpoints ./fleet/server:FuzzReadToken ./api:FuzzGrammar \
	./tritctl:FuzzFeaturesTable ./tritctl:FuzzParseLabels ./tritctl:FuzzFlags
# scripts/fuzz.sh runs each target for FUZZTIME executions and prints the
# executions each really made and its time. Budgets are execution counts,
# not durations, so a loaded machine does the same work (and with
# GOTOOLCHAIN=local, Go 1.26's coordinator can report a spurious "context
# deadline exceeded" when a -fuzztime duration expires: golang/go#75804,
# fixed in the Go 1.27 make uses). Go counts the executions spent
# minimising new inputs against the budget, so minimising is capped by a
# count too (100 calls an input): with 1 s an input, FuzzDecode spent 10
# of its 14 s minimising.
# 20,000 executions a target keep the whole fuzz step to a few minutes on 2
# cores (README); fuzz longer with e.g. `make fuzz FUZZTIME=1000000x`, and
# minimise a crasher further with FUZZMINIMIZETIME=10000x. The seed corpora
# (testdata/fuzz) run as unit tests either way.
FUZZTIME ?= 20000x
FUZZMINIMIZETIME ?= 100x

.PHONY: all help build demo test test-deps test-scripts vet vulncheck unit test-arm test-dist fuzz bench bench-predict drift-real clean dist

all: build

## help: the targets worth knowing and what each does (the "## " comments
## of this Makefile).
help:
	@awk '/^## [a-z-]+:/ { if (n++) print ""; sub(/^## /, ""); print; next } /^## / { sub(/^## /, "    "); print }' $(firstword $(MAKEFILE_LIST))

build:
	$(GO) build ./...

## demo: the whole product on this machine, nothing to install but Go:
## trit-fleet with its embedded MQTT broker, three trit-agents on simulated
## machines, and tritctl training, signing and rolling out a model
## (scripts/demo.sh; about 55 s on a quiet 2-core machine after the first
## build, which takes about 2 minutes; a busy machine takes longer, README).
## The in-process version is `go run ./cmd/tritctl demo`.
demo:
	GO="$(GO)" scripts/demo.sh

## test: every test on generated data, including ARM builds under qemu, the
## Debian packages (built, lintian, installed, upgraded and purged: needs
## root) and bounded fuzzing (see README for the time it takes). The
## accuracy runs on the real datasets are `make test-accuracy`.
test: test-deps test-scripts vet unit test-arm test-dist fuzz

test-deps:
	@GO="$(GO)" scripts/test-deps.sh

# test-scripts: the helper scripts' own tests (scripts/test-scripts.sh).
test-scripts:
	@scripts/test-scripts.sh

# vet: gofmt, go vet and staticcheck (its default checks, none turned off;
# the version tools/go.mod pins, a module of its own so that the linter's
# dependencies stay out of the product's).
vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	staticcheck=$$($(GO) -C tools tool -n staticcheck) && "$$staticcheck" ./...

# vulncheck: known vulnerabilities in the code's call graph, its modules
# and the Go release (govulncheck, pinned here). It reads the Go
# vulnerability database from https://vuln.go.dev, or from VULNDB (a
# file:// copy), so it is not part of make test, which needs no network
# but the module proxy.
VULNDB ?= https://vuln.go.dev
vulncheck:
	$(GO) run golang.org/x/vuln/cmd/govulncheck@v1.9.0 -db $(VULNDB) ./...

# Unit tests never read the real datasets (TRIT_DATA empty): those runs
# take many minutes and are test-accuracy's. Four packages' tests at once
# on two cores: the slowest (cmd/e2e, fleet/server, cmd/tritctl, agent)
# mostly wait on brokers, outages and timeouts (about 220 s of CPU in
# 376 s with Go's default of one per core, 279 s with four; README).
unit:
	TRIT_DATA= $(GO) test -count=1 -p 4 ./...

## test-accuracy: the accuracy bars and bundle round trips on the real
## datasets (TestUSPSAccuracy, TestBundleRoundTripRealData, the standard
## datasets' loaders in training/data); TRIT_DATA must name them (default
## ../shared/data). About 5 minutes on a 2-core machine.
.PHONY: test-accuracy
test-accuracy:
	@test -n "$(TRIT_DATA)" || { echo "test-accuracy: set TRIT_DATA to the shared datasets (see docs/DATA.md)" >&2; exit 1; }
	$(GO) test -count=1 -timeout 60m ./training/...

test-arm:
	scripts/test-arm.sh

test-dist:
	GO="$(GO)" scripts/test-dist.sh

## dist: Debian packages in dist/ with SHA256SUMS (scripts/dist.sh; nfpm,
## pinned in tools/go.mod): trit-agent for amd64, arm64, armhf and armel,
## trit-fleet and tritctl for amd64 and arm64. VERSION=x.y.z overrides the
## version in internal/buildinfo.
dist:
	GO="$(GO)" scripts/dist.sh

fuzz:
	GO="$(GO)" FUZZTIME=$(FUZZTIME) FUZZMINIMIZETIME=$(FUZZMINIMIZETIME) scripts/fuzz.sh $(FUZZ_TARGETS)

## drift-real: a model trained on eeg-eye-state's training period, on a
## real agent replaying the whole recording: its drift score rises in the
## test period (cmd/e2e TestDriftEEGReal; about a minute; needs TRIT_DATA).
drift-real:
	TRIT_E2E_REAL=1 $(GO) test -count=1 -v -run '^TestDriftEEGReal$$' ./cmd/e2e

## scale: the 10,000-agent measurement of docs/SCALING.md (minutes, not
## part of make test): a three-phase rollout to simulated agents (real MQTT
## sessions and wire protocol) against one Mosquitto, and the fleet tick
## with 10,000 finished rollouts. It fails when a goal docs/SCALING.md
## states is missed (the rollout within a minute, no message dropped,
## trit-fleet under 200 MB; SCALE_GOALS=0 measures only) and says the
## machine's load. SCALE_AGENTS=N for another size, SCALE_QUEUE
## the fleet's mqtt.queue (0: its default, 65,536). The fd
## limit is raised to the hard limit for the broker's connections.
## scale-nats: the same on a three-node NATS cluster with two trit-fleet
## replicas on PostgreSQL (mqtt.nats).
SCALE_AGENTS ?= 10000
SCALE_QUEUE ?= 0
SCALE_GOALS ?= 1
.PHONY: scale scale-nats
scale:
	ulimit -n $$(ulimit -Hn) && TRIT_E2E_SIM=$(SCALE_AGENTS) TRIT_E2E_SIM_QUEUE=$(SCALE_QUEUE) TRIT_E2E_SIM_GOALS=$(SCALE_GOALS) $(GO) test -count=1 -run '^TestScaleSim$$' -v -timeout 60m ./cmd/e2e
	$(GO) test -run '^$$' -bench '^BenchmarkTick$$' -benchmem ./fleet
scale-nats:
	ulimit -n $$(ulimit -Hn) && TRIT_E2E_SIM=$(SCALE_AGENTS) TRIT_E2E_SIM_NATS=1 TRIT_E2E_SIM_QUEUE=$(SCALE_QUEUE) TRIT_E2E_SIM_GOALS=$(SCALE_GOALS) $(GO) test -count=1 -run '^TestScaleSim$$' -v -timeout 60m ./cmd/e2e

## bench: the benchmarks recorded in docs/BENCHMARKS.md.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./inference/...
	$(GO) test -run '^$$' -bench 'Sweep' ./training/ternary
	$(GO) test -run '^$$' -bench 'TrainUSPS' -benchtime 3x ./training
	$(GO) test -run '^$$' -bench 'PredictVsMLP' -benchmem ./benchmark

## bench-ablation: from the paper's setting to trit's default, one change
## at a time (docs/BENCHMARKS.md "Accuracy per byte"); ABLATION_SETS picks
## the standard datasets. Tens of minutes on a small machine.
ABLATION_SETS ?= usps wall-following occupancy eeg-eye-state
.PHONY: bench-ablation
bench-ablation:
	scripts/ablation.sh $(ABLATION_SETS)

## bench-paper: the paper's comparison (trit-bench paper) on every standard
## dataset with the paper's full grid; hours on a small machine. Pass e.g.
## BENCH_PAPER_FLAGS="--grid coarse --search-rows 10000" for a shorter run.
.PHONY: bench-paper bench-peers bench-peers-curve bench-peers-deps bench-peers-test
BENCH_PAPER_FLAGS ?=
bench-paper:
	$(GO) run ./cmd/trit-bench paper --standard usps,mnist,covtype,ijcnn1,cod-rna,a9a,w8a $(BENCH_PAPER_FLAGS)

## bench-peers: trit at its default 30 KiB budget against an int8 MLP,
## XGBoost and linear and RBF SVMs on the same splits and scaling
## (trit-bench peers; docs/BENCHMARKS.md "Peers"). Needs python3-sklearn and
## python3-xgboost: installed with apt when run as root. Results go to
## PEERS_OUT (JSON) and the Markdown table to stdout. Hours for all sets;
## pass PEERS_SETS=usps,occupancy for fewer.
PEERS_SETS ?= usps,occupancy,wall-following,eeg-eye-state,electricity,noaa-weather,ozone-eighthr,ijcnn1,a9a,w8a,cod-rna,mnist,covtype
PEERS_OUT ?= peers.json
PEERS_CURVE_SETS ?= usps,mnist,wall-following
PEERS_CURVE ?= 512,1024,2048,4096,8192,16384,30720
PEERS_FLAGS ?=
bench-peers: bench-peers-deps
	$(GO) run ./cmd/trit-bench peers --standard $(PEERS_SETS) -o $(PEERS_OUT) --force $(PEERS_FLAGS)

## bench-peers-curve: accuracy against bytes (PEERS_CURVE budgets) for trit,
## the int8 MLP and XGBoost, then docs/figures/peers_curve_*.png from it.
## mnist's XGBoost tuning on 20,000 rows of 784 features takes over an hour:
## docs/BENCHMARKS.md's mnist curve was run alone with
## PEERS_CURVE_SETS=mnist PEERS_FLAGS=--tune-rows=5000.
bench-peers-curve: bench-peers-deps
	$(GO) run ./cmd/trit-bench peers --standard $(PEERS_CURVE_SETS) --methods mlp-int8,xgboost \
	  --curve $(PEERS_CURVE) -o peers-curve.json --force $(PEERS_FLAGS)
	$(GO) run ./cmd/trit-bench figures --peers peers-curve.json --out docs/figures

## bench-suite: the shift suite (trit-bench suite; docs/BENCHMARKS.md "The
## shift suite"): trit's default on the later and unseen rows of every
## recorded or group-shifted dataset, beside the int8 MLP, XGBoost, logistic
## regression, one threshold and the majority class tuned on the same folds,
## with leave-one-dataset-out over the selection presets (SUITE_VARIANTS).
## Hours; the peers' results are kept in SUITE_WORK and reused.
SUITE_VARIANTS ?= default,balanced-floor0,mean,every-kind,offsets,mean-offsets
SUITE_WORK ?= .suite-work
SUITE_OUT ?= suite.json
.PHONY: bench-suite
bench-suite: bench-peers-deps
	$(GO) run ./cmd/trit-bench suite --variants $(SUITE_VARIANTS) --work-dir $(SUITE_WORK) -o $(SUITE_OUT) --force $(SUITE_FLAGS)

## bench-loop: the replay of closing the loop (trit-bench loop;
## docs/BENCHMARKS.md "Closing the loop"): each recording's test period in
## LOOP_BLOCKS blocks, the static model against trit's retraining and the
## int8 MLP and XGBoost refitted on 1, 5 and 20% labels per block. Hours.
LOOP_SETS ?= ozone-eighthr,occupancy,wall-following-chrono,eeg-eye-state,noaa-weather,electricity,seismic-bumps
LOOP_BLOCKS ?= 6
LOOP_OUT ?= loop.json
.PHONY: bench-loop
bench-loop: bench-peers-deps
	$(GO) run ./cmd/trit-bench loop --standard $(LOOP_SETS) --blocks $(LOOP_BLOCKS) -o $(LOOP_OUT) --force $(LOOP_FLAGS)

bench-peers-deps:
	@if /usr/bin/python3 -c 'import sklearn, xgboost' 2>/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ]; then apt-get install -y python3-sklearn python3-xgboost; \
	else echo "bench-peers needs python3-sklearn and python3-xgboost: sudo apt-get install python3-sklearn python3-xgboost (or run make as root)"; exit 1; fi

## bench-peers-test: the test that runs scripts/peers/peers.py (not in make test).
bench-peers-test: bench-peers-deps
	TRIT_PEERS_PY=1 $(GO) test -count=1 -run TestPeersScript ./benchmark

## screenshots: docs/console/*.png, the web console over a seeded demo fleet
## in headless Chromium (fleet/console TestScreenshots; needs Debian's
## chromium), with docs/console/screenshots.json saying which trit-fleet
## version they show: a unit test fails once the code's is newer. About 15 s.
.PHONY: screenshots figures
screenshots:
	TRIT_SCREENSHOTS=docs/console $(GO) test -count=1 -run '^TestScreenshots$$' -v ./fleet/console

## figures: docs/figures/*.png redrawn from the JSON in docs/figures/bench-json
## (no benchmark runs again). init_objective.png trains usps twice (seconds)
## and needs TRIT_DATA; without it that figure is left as it is.
FIG_JSON = docs/figures/bench-json
figures:
	$(GO) run ./cmd/trit-bench figures --out docs/figures \
	  --from $(FIG_JSON)/usps.json,$(FIG_JSON)/covtype-n10000.json,$(FIG_JSON)/covtype-n50000.json,$(FIG_JSON)/covtype-n100000.json,$(FIG_JSON)/covtype.json \
	  --sweep-from $(FIG_JSON)/sweep-usps.json --peers $(FIG_JSON)/peers-curve.json,$(FIG_JSON)/peers-coverage-usps.json,$(FIG_JSON)/peers-coverage-mnist.json $(if $(TRIT_DATA),,--only p,bytes,time,circles,peers)

clean:
	$(GO) clean -testcache
