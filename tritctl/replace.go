package tritctl

import (
	"fmt"
	"io"
	"os"

	"github.com/trit-iot/trit/inference/bundle"
)

// checkTrainOut says whether train may write its bundle to path. A command
// that would replace a file refuses to without --force (docs/CLI.md); train
// makes one exception, which scripts that retrain into the same file rely
// on: it replaces an unsigned bundle, what an earlier train wrote. A signed
// bundle (a release), a data file or anything else needs --force. Called
// before training, which can take minutes.
func checkTrainOut(path string, force bool) error {
	if force {
		return nil
	}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	what := "not a bundle"
	raw, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err == nil && len(raw) <= maxFileSize {
		if br, err := bundle.Inspect(raw); err == nil {
			if !br.Signed {
				return nil
			}
			what = fmt.Sprintf("a signed bundle, %s release %d", br.ModelID, br.Release)
		}
	}
	return fmt.Errorf("%s: %w and is %s (use --force to replace it; train replaces only an unsigned bundle by itself)", path, errExists, what)
}
