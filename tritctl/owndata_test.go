package tritctl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trit-iot/trit/internal/cli"
)

// TestJSONErrorsOnStdout: with --json, a failure is one JSON object on
// stdout naming the file, line and column, nothing on stderr, and the exit
// code is the one without --json (1 a failure, 2 a usage error).
func TestJSONErrorsOnStdout(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "room.csv")
	os.WriteFile(bad, []byte("Temp,CO2,room\n21.5,400,empty\nwarm,410,empty\n"), 0o644)
	model := filepath.Join(dir, "m.trit")
	for _, c := range []struct {
		args []string
		want cli.ErrorReport
	}{
		{[]string{"train", bad, "-o", model, "--json"}, cli.ErrorReport{ExitCode: 1, File: "room.csv", Line: 3, Column: 1, ColumnName: "Temp",
			Error: `room.csv:3: column 1 "Temp": invalid number "warm"`}},
		{[]string{"train", bad, "-o", model, "--json", "--label-column", "Room"}, cli.ErrorReport{ExitCode: 1, File: "room.csv", Line: 1,
			Error: `room.csv:1: data: column: label column: no column named "Room" (there is "room": names are case-sensitive)`}},
		{[]string{"train", bad, "--json"}, cli.ErrorReport{ExitCode: 2, Error: "--out is required"}},
		{[]string{"eval", model, "--json"}, cli.ErrorReport{ExitCode: 2}},
	} {
		out, stderr, code := runCtl(t, c.args...)
		var got cli.ErrorReport
		if err := json.Unmarshal([]byte(out), &got); err != nil || code != c.want.ExitCode || stderr != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d, a JSON object on stdout and nothing on stderr", c.args, code, out, stderr, c.want.ExitCode)
			continue
		}
		if c.want.Error == "" {
			c.want.Error = got.Error // the wording is cobra's
		}
		if got != c.want {
			t.Errorf("%q: got %+v\nwant %+v", c.args, got, c.want)
		}
	}
	// Without --json the same error is a line on stderr.
	out, stderr, code := runCtl(t, "train", bad, "-o", model)
	if code != 1 || out != "" || !strings.HasPrefix(stderr, `tritctl: room.csv:3: column 1 "Temp"`) {
		t.Errorf("without --json: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}
