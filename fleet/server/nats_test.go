package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/trit-iot/trit/wire"
	"github.com/trit-iot/trit/wire/mqtttest"

	"github.com/trit-iot/trit/store/postgres/pgtest"
	"github.com/trit-iot/trit/wire/natstest"
)

// TestFleetOverNATSCluster runs TestFleetOverMosquitto's rollout on a
// three-node NATS cluster (JetStream, MQTT) with the fleet's state in
// PostgreSQL: trit-fleet on node 0, six devices spread over the three
// nodes. Commands, bundles (retained) and events cross the cluster.
func TestFleetOverNATSCluster(t *testing.T) {
	c := natstest.Start(t, 3)
	testFleetOver(t, pgtest.Database(t), c.Node(0).MQTTURL(), c.MQTTURLs())
}

// TestNATSPerDevicePermissions runs the rollout on a three-node cluster
// where trit-fleet and every device log in with their own passwords and
// permissions, trit-fleet taking device messages from NATS with only the
// permissions that needs (natstest.Auth); then checks that a device cannot read another's
// commands or write another's state.
func TestNATSPerDevicePermissions(t *testing.T) {
	devices := map[string]string{}
	for i := range 6 {
		devices[fmt.Sprintf("sim-%d", i)] = fmt.Sprintf("device-secret-%d", i)
	}
	auth := natstest.Auth("it", "fleet-secret", devices)
	// An observer that reads every trit topic, for the checks below.
	auth = strings.Replace(auth, "  users = [\n", "  users = [\n    {user: \"observer\", password: \"observer-secret\", permissions: {publish: [], subscribe: [\"trit.v1.>\"]}}\n", 1)
	c := natstest.StartConfig(t, 3, auth)
	edit := func(dir, config string) string {
		pw := filepath.Join(dir, "mqtt.pass")
		if err := os.WriteFile(pw, []byte("fleet-secret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return strings.Replace(config, "[mqtt]\n", fmt.Sprintf("[mqtt]\nusername = \"trit-fleet\"\npassword_file = %q\nnats = [%q, %q]\n",
			pw, c.Node(0).NATSURL(), c.Node(1).NATSURL()), 1)
	}
	login := func(id string) []func(*mqtt.ClientOptions) {
		return []func(*mqtt.ClientOptions){func(o *mqtt.ClientOptions) { o.SetUsername(id).SetPassword(devices[id]) }}
	}
	testFleetOverWith(t, "", c.Node(0).MQTTURL(), c.MQTTURLs(), edit, login)

	// sim-0 tries sim-1's topics.
	got := make(chan string, 4)
	o := mqtt.NewClientOptions().AddBroker(c.Node(1).MQTTURL()).SetClientID("sim-0-probe").SetUsername("sim-0").SetPassword(devices["sim-0"]).
		SetDefaultPublishHandler(func(_ mqtt.Client, m mqtt.Message) { got <- m.Topic() })
	cl := mqtt.NewClient(o)
	if tok := cl.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("sim-0 connect: %v", tok.Error())
	}
	defer cl.Disconnect(100)
	topics, _ := wire.NewTopics("it")
	tok := cl.Subscribe(topics.Desired("sim-1"), 1, nil)
	tok.WaitTimeout(10 * time.Second)
	if granted := tok.(*mqtt.SubscribeToken).Result()[topics.Desired("sim-1")]; granted != 0x80 {
		t.Errorf("sim-0's subscription to sim-1's commands granted QoS %d, want refused (0x80)", granted)
	}
	// QoS 0: on 2.9.10 another QoS 1 subscriber to device topics can make
	// the fleet's shared consumers miss messages (docs/SCALING.md).
	watch := mqtt.NewClient(mqtt.NewClientOptions().AddBroker(c.Node(2).MQTTURL()).SetClientID("watch").SetUsername("observer").SetPassword("observer-secret").
		SetDefaultPublishHandler(func(_ mqtt.Client, m mqtt.Message) { got <- string(m.Payload()) }))
	if tok := watch.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("watcher connect: %v", tok.Error())
	}
	defer watch.Disconnect(100)
	if tok := watch.Subscribe(topics.Events("sim-1"), 0, nil); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	// "$MQTT.sub.>", which every device needs, names the delivery subjects
	// of every session; as an MQTT topic it is refused.
	leak := cl.Subscribe("$MQTT/sub/#", 1, nil)
	leak.WaitTimeout(10 * time.Second)
	if granted := leak.(*mqtt.SubscribeToken).Result()["$MQTT/sub/#"]; granted != 0x80 {
		t.Errorf("sim-0's subscription to $MQTT/sub/# granted QoS %d, want refused (0x80)", granted)
	}
	cl.Publish(topics.Events("sim-1"), 1, false, []byte("forged")).WaitTimeout(10 * time.Second)
	select {
	case m := <-got:
		t.Fatalf("sim-0 wrote sim-1's events: %q arrived", m)
	case <-time.After(2 * time.Second):
	}
}

// TestFleetBrokersFailover: trit-fleet given several addresses of a
// broker (mqtt.brokers) connects through the next when the first is down,
// and the rollout runs. (Two Mosquittos stand for two nodes: on a NATS
// cluster with a node down, new subscriptions are refused for a while,
// which the test's simple devices do not retry; docs/SCALING.md.)
func TestFleetBrokersFailover(t *testing.T) {
	down, up := mqtttest.Start(t), mqtttest.Start(t)
	down.Stop()
	edit := func(_, config string) string {
		return strings.Replace(config, "[mqtt]\n", fmt.Sprintf("[mqtt]\nbrokers = [%q]\n", up.URL()), 1)
	}
	testFleetOverWith(t, "", down.URL(), []string{up.URL()}, edit, nil)
}

// TestBrokersConfigChecked: mqtt.brokers is refused with the embedded
// broker and with a scheme that differs from mqtt.broker's.
func TestBrokersConfigChecked(t *testing.T) {
	for _, tc := range []struct{ edit, want string }{
		{`broker = "embedded"` + "\nbrokers = [\"tcp://b:1883\"]", "embedded"},
		{`broker = "ssl://a:8883"` + "\nbrokers = [\"tcp://b:1883\"]", "TLS"},
		{`broker = "ssl://a:8883"` + "\nbrokers = [\"http://b\"]", "want tcp"},
	} {
		conf := strings.Replace(minimalConfig, `broker = "ssl://broker.example:8883"`, tc.edit, 1)
		_, err := ParseConfig("fleet.toml", conf)
		if err == nil || !strings.Contains(err.Error(), "mqtt.brokers") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error on mqtt.brokers saying %q", tc.edit, err, tc.want)
		}
	}
	c, err := ParseConfig("fleet.toml", strings.Replace(minimalConfig, `broker = "ssl://broker.example:8883"`,
		`broker = "ssl://a:8883"`+"\nbrokers = [\"ssl://b:8883\", \"tls://c:8883\"]", 1))
	if err != nil || len(c.MQTT.Brokers) != 2 {
		t.Fatalf("two more TLS addresses: %v, %v", c, err)
	}
}
