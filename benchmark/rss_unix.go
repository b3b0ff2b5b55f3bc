//go:build unix

package benchmark

import (
	"os"
	"runtime"
	"syscall"
)

// maxRSS returns the peak resident set size of a finished child in bytes,
// or 0 if the platform does not report it.
func maxRSS(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss) // bytes on macOS
	}
	return int64(ru.Maxrss) * 1024 // KiB on Linux and the BSDs
}
