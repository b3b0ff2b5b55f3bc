package e2e

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trit-iot/trit/agent"
	"github.com/trit-iot/trit/api"
	"github.com/trit-iot/trit/fleet"
	"github.com/trit-iot/trit/fleet/rollout"
	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/sensors"
	"github.com/trit-iot/trit/training"
	"github.com/trit-iot/trit/training/data"
)

// The loop's data: three features uniform on [−1, 1]; the model was
// trained where the class is the sign of x1 (concept A), and the field
// has drifted to the sign of x2 (concept B), which a gateway's label
// source reports as its truth column.
func loopRows(n int, seed uint64, concept int) (xs [][3]float64, ys []int) {
	r := rand.New(rand.NewPCG(seed, 7))
	for range n {
		x := [3]float64{r.Float64()*2 - 1, r.Float64()*2 - 1, r.Float64()*2 - 1}
		y := 0
		if x[concept] > 0 {
			y = 1
		}
		xs, ys = append(xs, x), append(ys, y)
	}
	return xs, ys
}

var loopClasses = []string{"normal", "fault"}

// loopSetup writes the original training data into the fleet's training
// directory, the field replay (with its truth column) into w.dir, and
// returns the signed bundle of model m release 1 trained on the original.
func loopSetup(t *testing.T, w *world) (trainDir, replay string, signed []byte) {
	t.Helper()
	trainDir = filepath.Join(w.dir, "training")
	if err := os.MkdirAll(trainDir, 0o700); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("x1,x2,x3,label\n")
	xs, ys := loopRows(600, 1, 0)
	for i, x := range xs {
		fmt.Fprintf(&b, "%.4f,%.4f,%.4f,%s\n", x[0], x[1], x[2], loopClasses[ys[i]])
	}
	orig := filepath.Join(trainDir, "orig.csv")
	if err := os.WriteFile(orig, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	b.WriteString("x1,x2,x3,truth\n")
	fx, fy := loopRows(400, 2, 1)
	for i, x := range fx {
		fmt.Fprintf(&b, "%.4f,%.4f,%.4f,%d\n", x[0], x[1], x[2], fy[i])
	}
	replay = filepath.Join(w.dir, "field.csv")
	if err := os.WriteFile(replay, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	ds, err := data.Load(orig, &data.Options{LabelColumn: data.Column{Name: "label"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := training.Train(ds, &training.Config{P: 256, Sigma: 1, C: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := res.Bundle(ds, training.BundleMeta{ModelID: "m", Release: 1})
	if err != nil {
		t.Fatal(err)
	}
	if signed, err = bundle.Sign(raw, w.releasePriv); err != nil {
		t.Fatal(err)
	}
	return trainDir, replay, signed
}

// loopAgent is the configuration of a gateway whose label source is the
// replay's truth column.
func (w *world) loopAgent(id, replay string, mc agent.MQTTConfig) *agent.Config {
	mc.Timeout = agent.Duration{Duration: 10 * time.Second}
	mc.ReconnectMin, mc.ReconnectMax = agent.Duration{Duration: 200 * time.Millisecond}, agent.Duration{Duration: 2 * time.Second}
	return &agent.Config{
		DeviceID: id, Fleet: fleetName, StateDir: filepath.Join(w.dir, "agents", id),
		ReleaseKeys: []string{w.releasePub}, CommandKeys: []string{w.cmdPub}, MQTT: mc,
		Install:     agent.InstallConfig{HealthCycles: 3, HealthTimeout: agent.Duration{Duration: 20 * time.Second}, DownloadTimeout: agent.Duration{Duration: 30 * time.Second}},
		Telemetry:   agent.TelemetryConfig{Interval: agent.Duration{Duration: time.Second}, AckRetry: agent.Duration{Duration: 5 * time.Second}},
		Sensors:     []sensors.Config{{Kind: "replay", Name: "field", File: replay, Rate: 20, Loop: true}},
		LabelSource: &agent.LabelSourceConfig{Name: "truth", Channel: "truth", Map: map[string]string{"0": "normal", "1": "fault"}, MaxBytes: 1 << 20},
	}
}

// labelled returns the reading times (Unix ms) of device's windows the
// fleet stores labelled by its label source, sorted.
func (w *world) labelled(device string) []int64 {
	w.t.Helper()
	var l api.WindowList
	w.call("GET", "/v1/windows?labelled=true&device="+device, nil, &l)
	var out []int64
	for _, fw := range l.Windows {
		if fw.Via == api.LabelGateway {
			out = append(out, fw.Time.UnixMilli())
		}
	}
	slices.Sort(out)
	return out
}

func (w *world) waitLabelled(device string, n int, timeout time.Duration) []int64 {
	w.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := w.labelled(device)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("%d windows of %s labelled in the store after %v, want %d", len(got), device, timeout, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// policy returns the retraining policy of model m.
func (w *world) policy() api.PolicyState {
	w.t.Helper()
	var ps []api.PolicyState
	w.call("GET", "/v1/policies", nil, &ps)
	if len(ps) != 1 {
		w.t.Fatalf("policies %+v", ps)
	}
	return ps[0]
}

func (w *world) waitPolicy(stage string, timeout time.Duration) api.PolicyState {
	w.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		p := w.policy()
		if p.Stage == stage {
			return p
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("policy %s (%s), want %s after %v", p.Stage, p.Why, stage, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// consolePage signs in to the web console with the API token and returns
// a page's HTML.
func (w *world) consolePage(path string) string {
	w.t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	get := func(p string) string {
		resp, err := c.Get("http://" + w.api + p)
		if err != nil {
			w.t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return string(raw)
	}
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(get("/console/login"))
	if m == nil {
		w.t.Fatal("no sign-in form")
	}
	resp, err := c.PostForm("http://"+w.api+"/console/login", url.Values{"csrf": {m[1]}, "token": {w.token}})
	if err != nil {
		w.t.Fatal(err)
	}
	resp.Body.Close()
	return get(path)
}

// maxGap returns the longest time between consecutive readings of ts.
func maxGap(ts []int64) time.Duration {
	var gap int64
	for i := 1; i < len(ts); i++ {
		gap = max(gap, ts[i]-ts[i-1])
	}
	return time.Duration(gap) * time.Millisecond
}

// TestClosingTheLoop: a gateway's label source labels the windows it
// classifies; the labelled windows reach the fleet's store with nothing
// lost across a SIGKILL of trit-fleet (with its embedded broker) and a
// restart of the agent; the model's accuracy on them crosses its
// policy's threshold, so the fleet trains a challenger, which waits for
// its offline signature; signed and published, it is shadowed on the
// gateway by a rollout that holds the promotion for an approval; the
// console shows the policy waiting; approved, the challenger is promoted.
func TestClosingTheLoop(t *testing.T) {
	w := newWorld(t)
	trainDir, replay, signed := loopSetup(t, w)
	const id = "gw-000"
	e := newEmbeddedFleetExtra(w, []string{id}, fmt.Sprintf(`[training]
data_dir = %q
label_pull = "500ms"
[[retrain]]
model = "m"
dataset = "orig.csv"
min_labels = 60
accuracy = 90
every = "1s"
min_windows = 20
`, trainDir))
	cfg := w.loopAgent(id, replay, agent.MQTTConfig{Broker: e.broker, Username: id, PasswordFile: e.passwords[id]})
	w.runAgent(cfg, w.logger())
	w.waitKnown([]string{id})
	hash := w.publish(signed)
	w.rollout(api.RolloutRequest{ID: "m-1", Bundle: hash, Devices: []string{id}})
	if r := w.waitRollout("m-1", time.Minute, nil); r.State != api.RolloutCompleted {
		t.Fatalf("rollout of release 1: %s %s", r.State, r.Reason)
	}
	before := w.waitLabelled(id, 20, 30*time.Second)

	// trit-fleet SIGKILLed with its embedded broker, and started again.
	e.kill()
	time.Sleep(2 * time.Second) // the agent classifies and labels on
	e.start()
	// The agent stopped and started again.
	w.waitLabelled(id, len(before)+20, time.Minute)
	w.stopAgent(id)
	stoppedAt := time.Now().UnixMilli()
	time.Sleep(time.Second)
	startedAt := time.Now().UnixMilli()
	w.runAgent(cfg, w.logger())
	var got []int64
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		got = w.labelled(id)
		if i, _ := slices.BinarySearch(got, startedAt); len(got)-i >= 40 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d windows labelled after the agent's restart", len(got))
		}
	}
	// Nothing lost: at 20 windows a second, every gap between stored
	// windows is a reading's (50 ms, some scheduling slack) but the one
	// the agent's own restart made.
	var split []int64
	for i := 1; i < len(got); i++ {
		if got[i-1] <= stoppedAt && got[i] >= startedAt {
			if g := maxGap(got[:i]); g > time.Second {
				t.Fatalf("a gap of %v in the labelled windows before the agent's restart: windows lost", g)
			}
			split = got[i:]
		}
	}
	if split == nil || maxGap(split) > time.Second {
		t.Fatalf("labelled windows after the agent's restart: %d, largest gap %v", len(split), maxGap(split))
	}
	t.Logf("%d labelled windows stored across the fleet's SIGKILL and the agent's restart, largest gap %v outside the restart", len(got), maxGap(split))

	// The policy: accuracy on the new labels about 50% < 90%.
	p := w.waitPolicy(fleet.PolicySigning, 3*time.Minute)
	t.Logf("policy: %s", p.Why)
	var job api.TrainJob
	w.call("GET", "/v1/train/"+p.Job, nil, &job)
	if job.Retrain == nil || !job.Retrain.Better || job.Retrain.Challenger.Accuracy <= job.Retrain.ActiveScores.Accuracy {
		t.Fatalf("job %+v", job.Retrain)
	}
	// Signed offline, published.
	req, _ := http.NewRequest("GET", "http://"+w.api+"/v1/train/"+p.Job+"/bundle", nil)
	req.Header.Set("Authorization", "Bearer "+w.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	unsigned, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	challenger, err := bundle.Sign(unsigned, w.releasePriv)
	if err != nil {
		t.Fatal(err)
	}
	w.publish(challenger)
	p = w.waitPolicy(fleet.PolicyShadowing, time.Minute)
	w.waitDeviceStates(p.Rollout, map[string]api.DeviceState{id: api.DeviceShadowPassed})
	time.Sleep(time.Second) // a few ticks: nothing may promote it before the approval
	var r rollout.Rollout
	w.call("GET", "/v1/rollouts/"+p.Rollout, nil, &r)
	if r.Devices[id].State != api.DeviceShadowPassed || r.Approval == nil || !r.Approval.Promotion {
		t.Fatalf("before the approval: %s, approval %+v", r.Devices[id].State, r.Approval)
	}
	page := w.consolePage("/console/labels")
	for _, want := range []string{"shadowing, waiting for approval", p.Rollout, "gateway", `id="challenger-` + p.Job + `"`, "better on the"} {
		if !strings.Contains(page, want) {
			t.Fatalf("the console's labels page lacks %q", want)
		}
	}
	w.call("POST", "/v1/rollouts/"+p.Rollout+"/approve", []byte("{}"), nil)
	if r := w.waitRollout(p.Rollout, time.Minute, nil); r.State != api.RolloutCompleted {
		t.Fatalf("the challenger's rollout: %s %s", r.State, r.Reason)
	}
	if d := w.devices()[id]; d.Model == nil || d.Model.Release != 2 {
		t.Fatalf("the gateway runs %+v, want release 2", d.Model)
	}
	w.waitPolicy(fleet.PolicyWatching, 30*time.Second)
}

// TestLabelSourceOnMosquitto: the same labels reach the store through a
// Mosquitto broker, with trit-fleet in this process.
func TestLabelSourceOnMosquitto(t *testing.T) {
	w := newWorld(t)
	trainDir, replay, signed := loopSetup(t, w)
	w.startFleetConf(func(c string) string {
		return c + fmt.Sprintf("[training]\ndata_dir = %q\nlabel_pull = \"500ms\"\n", trainDir)
	})
	const id = "gw-100"
	cfg := w.loopAgent(id, replay, agent.MQTTConfig{Broker: w.broker.URL()})
	w.runAgent(cfg, w.logger())
	w.waitKnown([]string{id})
	w.rollout(api.RolloutRequest{ID: "m-1", Bundle: w.publish(signed), Devices: []string{id}})
	if r := w.waitRollout("m-1", time.Minute, nil); r.State != api.RolloutCompleted {
		t.Fatalf("rollout: %s %s", r.State, r.Reason)
	}
	got := w.waitLabelled(id, 40, time.Minute)
	if g := maxGap(got); g > time.Second {
		t.Fatalf("largest gap %v between labelled windows", g)
	}
	var l api.WindowList
	w.call("GET", "/v1/windows?labelled=true&device="+id+"&limit=1", nil, &l)
	fw := l.Windows[0]
	if fw.LabelledBy != "gateway:"+id+"/truth" || fw.Model != "m" || fw.Release != 1 || len(fw.X) != 3 {
		t.Fatalf("window %+v", fw)
	}
	if want := map[bool]string{true: "fault", false: "normal"}[fw.X[1] > 0]; fw.Label != want {
		t.Fatalf("window x2=%v labelled %q, want %q", fw.X[1], fw.Label, want)
	}
}
