package console

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/trit-iot/trit/internal/buildinfo"
)

// screenshotsDir holds the committed screenshots (docs/FLEET.md, "The web
// console") and screenshotsFile the record of what they show.
const (
	screenshotsDir  = "../../docs/console"
	screenshotsFile = "screenshots.json"
)

// screenshotRecord is docs/console/screenshots.json, written with the
// screenshots: the version the console showed in them, and the pictures.
type screenshotRecord struct {
	Version string            `json:"version"` // trit-fleet's, as the pages' footer showed it
	Made    string            `json:"made"`    // how to make them again
	Pages   map[string]string `json:"pages"`   // file -> the console page it shows
}

// shots are the pictures: file name (without .png) and page, in the
// order they are taken. login is taken before signing in.
var shots = []struct{ name, path string }{
	{"login", "/console/login"},
	{"overview", "/console/"},
	{"devices", "/console/devices"},
	{"device", "/console/devices/gw-07"},
	{"rollouts", "/console/rollouts"},
	{"rollout", "/console/rollouts/vibration-2-north"},
	{"rollout-shadow", "/console/rollouts/vibration-3-shadow"},
	{"rollout-one-device", "/console/rollouts/lab-vibration-2"},
	{"new-rollout", "/console/new-rollout"},
	{"bundles", "/console/bundles"},
	{"audit", "/console/audit"},
}

// TestScreenshots draws docs/console/*.png: the console over the demo fleet
// (demo_test.go) in Debian's headless Chromium, 1280 pixels wide, and
// records the version they show in screenshots.json. It runs only when
// TRIT_SCREENSHOTS names the directory to write, relative to the module's
// root (make screenshots: TRIT_SCREENSHOTS=docs/console).
func TestScreenshots(t *testing.T) {
	dir := os.Getenv("TRIT_SCREENSHOTS")
	if dir == "" {
		t.Skip("TRIT_SCREENSHOTS is not set: `make screenshots` draws docs/console/*.png")
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join("../..", dir) // from the module's root, as make runs it
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f := newFixtureNamed(t, "demo", 0.05)
	demoFleet(f)
	ctx := headless(t)
	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	rec := screenshotRecord{Made: "make screenshots (fleet/console TestScreenshots: the demo fleet of demo_test.go in headless Chromium)",
		Pages: map[string]string{}}
	for _, s := range shots {
		run(s.name, chromedp.Navigate(f.srv.URL+s.path), chromedp.WaitVisible(chromedp.CSS("footer.bottom")))
		shown, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("footer.bottom").textContent.trim()`))
		if err != nil {
			t.Fatal(err)
		}
		if want := "trit-fleet " + buildinfo.Version; shown != want {
			t.Fatalf("%s: the footer says %q, want %q", s.path, shown, want)
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, s.name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
		rec.Pages[s.name+".png"] = s.path
		if s.name == "login" {
			run("sign in", chromedp.SendKeys(chromedp.ID("token"), testToken+kb.Enter), chromedp.WaitVisible(chromedp.ID("live")))
		}
	}
	rec.Version = buildinfo.Version
	raw, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, screenshotsFile), append(raw, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d screenshots of trit-fleet %s in %s", len(shots), buildinfo.Version, dir)
}

// headless starts Chromium ($TRIT_CHROMIUM, or Debian's chromium) with a
// 1280×900 window, off the network, and returns its tab.
func headless(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("TRIT_CHROMIUM")
	for _, name := range []string{"chromium", "/usr/bin/chromium", "chromium-browser"} {
		if path != "" {
			break
		}
		path, _ = exec.LookPath(name)
	}
	if path == "" {
		t.Fatal("chromium not found: `sudo apt-get install chromium`, or set TRIT_CHROMIUM")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// TestScreenshotsCurrent fails when the committed screenshots show an
// older trit-fleet than this code is (or are missing): run
// `make screenshots` after changing the version.
func TestScreenshotsCurrent(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(screenshotsDir, screenshotsFile))
	if err != nil {
		t.Fatalf("%v: docs/console has no record of what its screenshots show; run `make screenshots`", err)
	}
	var rec screenshotRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatalf("docs/console/%s: %v", screenshotsFile, err)
	}
	shown, err := parseVersion(rec.Version)
	if err != nil {
		t.Fatalf("docs/console/%s: %v", screenshotsFile, err)
	}
	code, err := parseVersion(buildinfo.Version)
	if err != nil {
		t.Fatal(err)
	}
	if olderVersion(shown, code) {
		t.Errorf("docs/console's screenshots show trit-fleet %s, the code is %s: run `make screenshots` and commit docs/console", rec.Version, buildinfo.Version)
	}
	for _, s := range shots {
		if rec.Pages[s.name+".png"] != s.path {
			t.Errorf("docs/console/%s: no %s.png of %s; run `make screenshots`", screenshotsFile, s.name, s.path)
		}
		if _, err := os.Stat(filepath.Join(screenshotsDir, s.name+".png")); err != nil {
			t.Error(err)
		}
	}
}

// parseVersion reads "major.minor.patch".
func parseVersion(v string) ([3]int, error) {
	var out [3]int
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return out, fmt.Errorf("version %q is not major.minor.patch", v)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return out, fmt.Errorf("version %q is not major.minor.patch", v)
		}
		out[i] = n
	}
	return out, nil
}

func olderVersion(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func TestOlderVersion(t *testing.T) {
	for _, tc := range []struct {
		a, b  string
		older bool
	}{{"0.2.0", "0.4.0", true}, {"0.4.0", "0.4.0", false}, {"0.10.0", "0.9.1", false}, {"1.0.0", "1.0.1", true}} {
		a, _ := parseVersion(tc.a)
		b, _ := parseVersion(tc.b)
		if got := olderVersion(a, b); got != tc.older {
			t.Errorf("%s older than %s: %v", tc.a, tc.b, got)
		}
	}
	if _, err := parseVersion("0.4"); err == nil {
		t.Error("0.4 parsed")
	}
}
