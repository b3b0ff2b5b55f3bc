//go:build unix

package benchmark

import (
	"runtime"
	"syscall"
)

// selfMaxRSS returns this process's peak resident set size in bytes, or 0
// if the platform does not report it.
func selfMaxRSS() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss)
	}
	return int64(ru.Maxrss) * 1024
}
