//go:build !unix

package benchmark

import "os"

// maxRSS is not measured on this platform: bench reports 0.
func maxRSS(*os.ProcessState) int64 { return 0 }
