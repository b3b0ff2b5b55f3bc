package agent

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/trit-iot/trit/inference/bundle"
	"github.com/trit-iot/trit/wire"
)

// fakeBroker is an in-memory MQTT broker for unit tests: exact-topic
// subscriptions, retained messages, one connection per client.
type fakeBroker struct {
	mu       sync.Mutex
	retained map[string][]byte
	conns    []*fakeConn
	down     bool
	sent     []Message // everything published by clients
	// refuse is how many more subscriptions to bundle topics, after the
	// connection is made, fail (a clustered broker after a node failure).
	refuse int
}

func newFakeBroker() *fakeBroker { return &fakeBroker{retained: map[string][]byte{}} }

func (b *fakeBroker) Dial(_ context.Context, o DialOptions) (Conn, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.down {
		return nil, ErrNotConnected
	}
	c := &fakeConn{b: b, opt: o, subs: map[string]bool{}}
	b.conns = append(b.conns, c)
	for _, s := range o.Subscriptions {
		c.subs[s.Topic] = true
		if p, ok := b.retained[s.Topic]; ok {
			go o.OnMessage(Message{Topic: s.Topic, Payload: p, Retained: true})
		}
	}
	return c, nil
}

// publish delivers a message as another client would.
func (b *fakeBroker) publish(m Message) {
	b.mu.Lock()
	if m.Retained {
		b.retained[m.Topic] = m.Payload
	}
	var targets []*fakeConn
	for _, c := range b.conns {
		if c.subs[m.Topic] && !c.closed {
			targets = append(targets, c)
		}
	}
	b.mu.Unlock()
	for _, c := range targets {
		c.opt.OnMessage(m)
	}
}

func (b *fakeBroker) published(kind wire.Kind) []Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Message
	for _, m := range b.sent {
		if t, err := wire.ParseTopic(m.Topic); err == nil && t.Kind == kind {
			out = append(out, m)
		}
	}
	return out
}

type fakeConn struct {
	b      *fakeBroker
	opt    DialOptions
	subs   map[string]bool
	closed bool
}

func (c *fakeConn) Publish(_ context.Context, m Message) error {
	c.b.mu.Lock()
	if c.closed || c.b.down {
		c.b.mu.Unlock()
		return ErrNotConnected
	}
	c.b.sent = append(c.b.sent, m)
	c.b.mu.Unlock()
	if t, err := wire.ParseTopic(m.Topic); err == nil && t.Kind == wire.KindEvents {
		// Acknowledge events like the fleet does.
		if ev, err := wire.DecodeEvent(m.Payload); err == nil {
			ack, _ := (&wire.Ack{Device: ev.Device, IDs: []string{ev.ID}}).Marshal()
			tp, _ := wire.NewTopics(t.Fleet)
			go c.b.publish(Message{Topic: tp.Acks(ev.Device), Payload: ack, QoS: 1})
		}
	}
	return nil
}

func (c *fakeConn) Subscribe(_ context.Context, s Subscription) error {
	c.b.mu.Lock()
	if t, err := wire.ParseTopic(s.Topic); err == nil && t.Kind == wire.KindBundle && c.b.refuse > 0 {
		c.b.refuse--
		c.b.mu.Unlock()
		return errors.New("mqtt: broker refused subscription (code 0x80)")
	}
	c.subs[s.Topic] = true
	p, ok := c.b.retained[s.Topic]
	c.b.mu.Unlock()
	if ok {
		go c.opt.OnMessage(Message{Topic: s.Topic, Payload: p, Retained: true})
	}
	return nil
}

func (c *fakeConn) Unsubscribe(_ context.Context, topic string) error {
	c.b.mu.Lock()
	delete(c.subs, topic)
	c.b.mu.Unlock()
	return nil
}

func (c *fakeConn) Close() {
	c.b.mu.Lock()
	c.closed = true
	c.b.mu.Unlock()
}

// TestInstallFake runs an install and a rejection through the fake broker:
// the install logic without Mosquitto; once with a random-feature model and
// once with a tree model (a format-3 bundle: trees section, leaf columns)
// and once with trees of two leaf planes (format 4).
func TestInstallFake(t *testing.T) {
	t.Run("random-features", func(t *testing.T) { testInstallFake(t, 0, 0) })
	t.Run("trees", func(t *testing.T) { testInstallFake(t, 40, 1) })
	t.Run("tree-planes", func(t *testing.T) { testInstallFake(t, 40, 2) })
}

func testInstallFake(t *testing.T, trees, planes int) {
	k := newKeys(t)
	b := newFakeBroker()
	cfg := testConfig(t, k, "tcp://fake:1883")
	startAgent(t, cfg, &Options{Dialer: b})
	tp, _ := wire.NewTopics(testFleet)

	data := makeBundle(t, bundleOpts{release: 3, signer: k.release, trees: trees, planes: planes})
	if v, want := data[len(bundle.Magic)], byte(2+planes); trees > 0 && v != want {
		t.Fatalf("a bundle with trees of %d planes is format %d, want %d", planes, v, want)
	}
	h := hashOf(data)
	b.publish(Message{Topic: tp.Bundle(h), Payload: data, Retained: true})
	deploy := func(hash string, seq uint64) {
		c := &wire.Command{Fleet: testFleet, Device: testDevice, Bundle: hash, Rollout: "r", Seq: seq,
			IssuedAt: time.Now().Unix() - 1, ExpiresAt: time.Now().Unix() + 600}
		if err := c.Sign(k.command); err != nil {
			t.Fatal(err)
		}
		p, _ := c.Marshal()
		b.publish(Message{Topic: tp.Desired(testDevice), Payload: p, Retained: true})
	}
	waitEvent := func(seq uint64) *wire.Event {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			for _, m := range b.published(wire.KindEvents) {
				ev, err := wire.DecodeEvent(m.Payload)
				if err != nil {
					t.Fatal(err)
				}
				if ev.Seq == seq && ev.State.Terminal() {
					return ev
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("no terminal event for seq %d", seq)
		return nil
	}
	// Wait for the agent's connection before deploying.
	for deadline := time.Now().Add(5 * time.Second); len(b.published(wire.KindState)) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("agent never published its state")
		}
		time.Sleep(10 * time.Millisecond)
	}
	deploy(h, 1)
	if ev := waitEvent(1); ev.State != wire.JobSucceeded {
		t.Fatalf("install: %+v", ev)
	}
	// A stale sequence is refused.
	deploy(h, 1)
	other := makeBundle(t, bundleOpts{release: 4, signer: k.release})
	b.publish(Message{Topic: tp.Bundle(hashOf(other)), Payload: other, Retained: true})
	deploy(hashOf(other), 5)
	if ev := waitEvent(5); ev.State != wire.JobSucceeded {
		t.Fatalf("second install: %+v", ev)
	}
	deploy(h, 2) // older than 5
	if ev := waitEvent(2); ev.State != wire.JobRejected || ev.Code != wire.CodeSuperseded || ev.HighestSeq != 5 {
		t.Fatalf("stale sequence: %+v, want REJECTED superseded with highest_seq 5", ev)
	}
	// The retained state says the highest sequence and the database's
	// instance, so a fleet whose counter fell behind moves past it.
	var st *wire.State
	for _, m := range b.published(wire.KindState) {
		if s, err := wire.DecodeState(m.Payload); err == nil && s.Online {
			st = s
		}
	}
	if st == nil || st.HighestSeq != 5 || len(st.Instance) != 16 {
		t.Fatalf("state %+v, want highest_seq 5 and an instance", st)
	}
}

// TestDispatchNeverBlocks floods the handler with commands and acks while
// nothing consumes them: it must return at once every time.
func TestDispatchNeverBlocks(t *testing.T) {
	a := &Agent{cfg: &Config{DeviceID: testDevice, Fleet: testFleet}, log: testLogger(t)}
	a.topics, _ = wire.NewTopics(testFleet)
	a.inst = &installer{a: a, box: newInbox()}
	a.pub = newPublisher(a)
	done := make(chan struct{})
	go func() {
		for range 10000 {
			a.dispatch(Message{Topic: a.topics.Desired(testDevice), Payload: []byte("x")})
			a.dispatch(Message{Topic: a.topics.Acks(testDevice), Payload: []byte("x")})
			a.dispatch(Message{Topic: a.topics.Bundle(hashOf([]byte("b"))), Payload: []byte("b")})
			a.dispatch(Message{Topic: "elsewhere", Payload: []byte("b")})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("dispatch blocked")
	}
	if got := a.inst.box.takeDesired(); string(got) != "x" {
		t.Errorf("latest desired = %q", got)
	}
}
