// Package secretfile holds the one rule on the mode of a file that holds a
// secret (a private key, a password): trit-agent's and trit-fleet's, so
// that both refuse the same files in the same words.
package secretfile

import (
	"fmt"
	"os"
	"runtime"
)

// CheckMode refuses a secret file at path that others may read or write
// — or, unless group is true, its group: the agent reads its MQTT password
// and TLS key through the service's group (docs/OPERATIONS.md: mode 0600,
// or 0640 with that group), trit-fleet its keys as their owner. An empty
// path is no file. On Windows, where modes mean nothing, it checks nothing.
func CheckMode(path string, group bool) error {
	if path == "" || runtime.GOOS == "windows" {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	perm := fi.Mode().Perm()
	switch {
	case group && perm&0o007 != 0:
		return fmt.Errorf("%s has mode %04o; a secret must not be accessible by others (chmod 600, or 640 with the service's group)", path, perm)
	case !group && perm&0o077 != 0:
		return fmt.Errorf("%s has mode %04o; a secret must not be readable by group or others (chmod 600)", path, perm)
	}
	return nil
}
