//go:build !unix

package ctl

import "os"

// maxRSS is not measured on this platform: bench reports 0.
func maxRSS(*os.ProcessState) int64 { return 0 }
