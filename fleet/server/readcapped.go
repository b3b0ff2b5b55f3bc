package server

import (
	"errors"
	"fmt"

	"github.com/trit-iot/trit/internal/capped"
)

// Files trit-fleet reads at start — its configuration, the broker's
// password, the API token — are small; a path to a huge file or to an
// endless one (/dev/zero, a pipe that never ends) must fail, not fill the
// memory. A regular file is refused by its size before any read; anything
// else (a pipe such as <(pass show …)) is read up to the cap and one byte
// (internal/capped).

// maxConfigFile bounds trit-fleet's configuration file in bytes.
const maxConfigFile = 1 << 20

// maxPasswordFile bounds mqtt.password_file in bytes.
const maxPasswordFile = 64 << 10

// readFileCapped reads the file at path up to limit bytes; what names the
// file in the error for one too large ("mqtt.password_file").
func readFileCapped(path string, limit int64, what string) ([]byte, error) {
	raw, err := capped.ReadFile(path, limit)
	if errors.Is(err, capped.ErrTooLarge) {
		return nil, tooLarge(path, limit, what)
	}
	return raw, err
}

// tooLarge is the error for the file at path over its cap.
func tooLarge(path string, limit int64, what string) error {
	return fmt.Errorf("%s: larger than %d bytes (%d KiB), the most %s may hold", path, limit, limit>>10, what)
}
