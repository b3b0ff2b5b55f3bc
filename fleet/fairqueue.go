package fleet

import "sync"

// fairQueue is the fleet's incoming queue: one FIFO per device, served
// round-robin, with two bounds on the total: messages and bytes. One
// device cannot monopolise it: while others have messages waiting, it gets
// one turn in each round, and when the queue is full the messages dropped
// are those of the device holding the most.
//
// Invariants (mu held):
//   - total is the sum of the devices' queue lengths, and total <= max.
//   - bytes is the sum of the queued messages' sizes (topic and payload),
//     and bytes <= maxBytes unless the queue holds one message (a message
//     is at most wire.MaxPacket bytes).
//   - A device is in by, and once in ring, exactly while its queue is not
//     empty; so memory is bounded by max messages, maxBytes and max
//     devices.
//   - byLen[n] is the set of devices holding exactly n messages (n >= 1),
//     and longest the largest such n (0 when empty).
//   - A message is dropped only when the queue is full (the new message
//     would pass a bound), and then it is a
//     message of the device that would hold the most: the newcomer's own
//     device if it would hold at least as many as any other (its oldest
//     message goes, or the new one if it holds none), else the oldest
//     message of a device holding the most. A device never loses a message
//     while another holds more than it would.
type fairQueue struct {
	mu       sync.Mutex
	max      int // messages
	maxBytes int
	total    int
	bytes    int
	by       map[string]*deviceQueue
	ring     []string // devices with messages, in serving order, from ring[head]
	head     int
	byLen    map[int]map[string]struct{}
	longest  int
	dropped  map[string]uint64 // per device, since the last takeDropped
	ready    chan struct{}     // signalled (never blocking) when messages are added
}

type deviceQueue struct {
	msgs []message
}

func newFairQueue(max, maxBytes int) *fairQueue {
	return &fairQueue{max: max, maxBytes: maxBytes, by: map[string]*deviceQueue{}, byLen: map[int]map[string]struct{}{},
		dropped: map[string]uint64{}, ready: make(chan struct{}, 1)}
}

// setLen moves device from length from to length to in byLen.
func (q *fairQueue) setLen(device string, from, to int) {
	if from > 0 {
		delete(q.byLen[from], device)
		if len(q.byLen[from]) == 0 {
			delete(q.byLen, from)
		}
	}
	if to > 0 {
		s := q.byLen[to]
		if s == nil {
			s = map[string]struct{}{}
			q.byLen[to] = s
		}
		s[device] = struct{}{}
	}
	// Lengths move by one (from = to ± 1), so when the longest set
	// empties, the device that left it now holds the next longest.
	switch {
	case to > q.longest:
		q.longest = to
	case from == q.longest && q.byLen[from] == nil:
		q.longest = to
	}
}

// size is what a message counts against the queue's byte bound.
func (m message) size() int { return len(m.topic) + len(m.payload) }

// push adds m for device and returns the devices whose messages were
// dropped to make room, one entry a message (none if there was room): at
// most one for the message bound, more when a large message needs the room
// of several under the byte bound.
func (q *fairQueue) push(device string, m message) (dropped []string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	size := m.size()
	for q.total >= q.max || q.total > 0 && q.bytes+size > q.maxBytes {
		dq := q.by[device]
		n := 0
		if dq != nil {
			n = len(dq.msgs)
		}
		if n+1 >= q.longest {
			// device would hold the most: it pays.
			q.countDrop(device)
			dropped = append(dropped, device)
			if n == 0 {
				return dropped // the new message goes
			}
			q.popOldest(device, dq)
			continue
		}
		var victim string
		for id := range q.byLen[q.longest] {
			victim = id
			break
		}
		q.popOldest(victim, q.by[victim]) // it held longest >= n+2 >= 2: still not empty
		q.countDrop(victim)
		dropped = append(dropped, victim)
	}
	dq := q.by[device]
	n := 0
	if dq == nil {
		dq = &deviceQueue{}
		q.by[device] = dq
		q.ring = append(q.ring, device)
	} else {
		n = len(dq.msgs)
	}
	dq.msgs = append(dq.msgs, m)
	q.total++
	q.bytes += size
	q.setLen(device, n, n+1)
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return dropped
}

// popOldest removes device's oldest message; its queue keeps at least one.
func (q *fairQueue) popOldest(device string, dq *deviceQueue) {
	n := len(dq.msgs)
	q.bytes -= dq.msgs[0].size()
	dq.msgs[0] = message{}
	dq.msgs = dq.msgs[1:]
	q.total--
	q.setLen(device, n, n-1)
}

// maxDropCounted bounds the devices whose drops wait for takeDropped.
const maxDropCounted = 1 << 16

func (q *fairQueue) countDrop(device string) {
	if _, ok := q.dropped[device]; ok || len(q.dropped) < maxDropCounted {
		q.dropped[device]++
	}
}

// take removes up to n messages, one per device in turn (round-robin,
// resuming where the previous take stopped).
func (q *fairQueue) take(n int) []message {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []message
	for len(out) < n && q.total > 0 {
		device := q.ring[q.head]
		q.ring[q.head] = ""
		q.head++
		dq := q.by[device]
		k := len(dq.msgs)
		out = append(out, dq.msgs[0])
		q.bytes -= dq.msgs[0].size()
		dq.msgs[0] = message{}
		dq.msgs = dq.msgs[1:]
		q.total--
		q.setLen(device, k, k-1)
		if k > 1 {
			q.ring = append(q.ring, device)
		} else {
			delete(q.by, device)
		}
	}
	if q.head > len(q.ring)/2 { // compact: the served prefix is dead
		q.ring = append(q.ring[:0], q.ring[q.head:]...)
		q.head = 0
	}
	return out
}

// takeDropped returns the drops per device since the last call.
func (q *fairQueue) takeDropped() map[string]uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.dropped) == 0 {
		return nil
	}
	out := q.dropped
	q.dropped = map[string]uint64{}
	return out
}

// len returns the messages queued.
func (q *fairQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.total
}
