package store

import (
	"os"
	"os/exec"
)

// selfCommand runs this test binary again with args, for the tests whose
// body must run in a process of its own (a crash, a file-size limit).
// Under an emulator (scripts/test-arm.sh runs the ARM builds under
// qemu-user, which the kernel cannot start an ARM binary without)
// TRIT_TEST_EXEC names it, and the child runs under it too.
func selfCommand(args ...string) *exec.Cmd {
	if emu := os.Getenv("TRIT_TEST_EXEC"); emu != "" {
		return exec.Command(emu, append([]string{os.Args[0]}, args...)...)
	}
	return exec.Command(os.Args[0], args...)
}
