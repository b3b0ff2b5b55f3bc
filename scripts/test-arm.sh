#!/usr/bin/env bash
# Cross-compiles the gateway-side tests (inference and its bundle package,
# and store, which keeps the agent's state) for linux/arm64, linux/arm
# GOARM=6 (Pi Zero/1) and GOARM=7, and runs them under qemu-user. The
# golden tests in them pin the embeddings and predictions recorded on
# amd64, so a pass means bit-identical results; store's run its document
# codec and bbolt on 32- and 64-bit ARM. TRIT_TEST_EXEC tells the tests
# that start the test binary again (store's crash tests) to start it under
# the emulator as well. CGO_ENABLED=0 and -trimpath are scripts/dist.sh's
# flags: the standard library and the dependencies compiled here for each
# ARM target are then the ones the Debian packages' builds reuse (a cold
# build of trit-agent for arm64 after this step: 15 s instead of 51 s).
set -euo pipefail
pkgs=${ARM_PKGS:-./inference/... ./store}
status=0
for target in arm64: arm:6 arm:7; do
  arch=${target%%:*} goarm=${target#*:}
  qemu=qemu-aarch64-static
  [ "$arch" = arm ] && qemu=qemu-arm-static
  label="linux/$arch${goarm:+ GOARM=$goarm}"
  echo "== $label (under $qemu)"
  if ! TRIT_TEST_EXEC=$qemu CGO_ENABLED=0 GOOS=linux GOARCH=$arch GOARM=$goarm go test -count=1 -trimpath -exec "$qemu" $pkgs; then
    echo "FAILED on $label" >&2
    status=1
  fi
done
exit $status
