// Decoding IDs under a node's layout (GET /v1/info's "layout"): where the
// timestamp, datacenter, worker and sequence sit, the epoch and the time
// unit. Mirrors snowid's own decode (src/core/decode.cc, bit_fields.h):
//
//	sign (0) | timestamp | datacenter | worker | sequence   (sequence_position "low")
//	sign (0) | timestamp | sequence | datacenter | worker   (sequence_position "high")
//
// Thread-safety: Layout and Fields are plain values; Layout.Decode is pure.
package snowid

import (
	"fmt"
	"time"
)

// Layout is a node's ID layout.
type Layout struct {
	TimestampBits  int
	DatacenterBits int
	WorkerBits     int
	SequenceBits   int
	TimeUnit       time.Duration // length of one timestamp unit (1 ms for Twitter's layout)
	Epoch          time.Time     // the instant of timestamp 0
	SequenceHigh   bool          // the sequence sits above the node fields (Sonyflake)
}

// Fields are the parts of an ID.
type Fields struct {
	Time        time.Time // start of the ID's time unit, UTC
	TimestampMs int64     // the same, in Unix milliseconds
	Datacenter  int64
	Worker      int64
	Sequence    int64
}

// layoutJSON is /v1/info's "layout" object.
type layoutJSON struct {
	TimestampBits    int    `json:"timestamp_bits"`
	DatacenterBits   int    `json:"datacenter_bits"`
	WorkerBits       int    `json:"worker_bits"`
	SequenceBits     int    `json:"sequence_bits"`
	TimeUnitMs       int64  `json:"time_unit_ms"`
	EpochMs          int64  `json:"epoch_ms"`
	SequencePosition string `json:"sequence_position"`
}

func (j layoutJSON) layout() (Layout, error) {
	l := Layout{
		TimestampBits:  j.TimestampBits,
		DatacenterBits: j.DatacenterBits,
		WorkerBits:     j.WorkerBits,
		SequenceBits:   j.SequenceBits,
		TimeUnit:       time.Duration(j.TimeUnitMs) * time.Millisecond,
		Epoch:          time.UnixMilli(j.EpochMs).UTC(),
		SequenceHigh:   j.SequencePosition == "high",
	}
	total := l.TimestampBits + l.DatacenterBits + l.WorkerBits + l.SequenceBits
	if l.TimestampBits < 1 || l.DatacenterBits < 0 || l.WorkerBits < 0 || l.SequenceBits < 0 ||
		total > 63 || l.TimeUnit <= 0 ||
		(j.SequencePosition != "low" && j.SequencePosition != "high") {
		return Layout{}, fmt.Errorf("/v1/info reports a layout snowid cannot have: %+v", j)
	}
	return l, nil
}

// Decode splits id under the layout. ErrInvalidArgument if id is negative
// or has bits above the layout's total.
func (l Layout) Decode(id int64) (Fields, error) {
	total := l.TimestampBits + l.DatacenterBits + l.WorkerBits + l.SequenceBits
	if id < 0 || uint64(id)>>total != 0 {
		return Fields{}, newError(ErrInvalidArgument,
			fmt.Sprintf("ID %d is not in 0..2^%d-1 (the layout's bits)", id, total))
	}
	field := func(shift, bits int) int64 { return (id >> shift) & (1<<bits - 1) }
	var f Fields
	if l.SequenceHigh {
		f.Worker = field(0, l.WorkerBits)
		f.Datacenter = field(l.WorkerBits, l.DatacenterBits)
		f.Sequence = field(l.WorkerBits+l.DatacenterBits, l.SequenceBits)
	} else {
		f.Sequence = field(0, l.SequenceBits)
		f.Worker = field(l.SequenceBits, l.WorkerBits)
		f.Datacenter = field(l.SequenceBits+l.WorkerBits, l.DatacenterBits)
	}
	units := field(l.SequenceBits+l.WorkerBits+l.DatacenterBits, l.TimestampBits)
	// In milliseconds: 2^62 units of a time.Duration (ns) would overflow.
	f.TimestampMs = l.Epoch.UnixMilli() + units*l.TimeUnit.Milliseconds()
	f.Time = time.UnixMilli(f.TimestampMs).UTC()
	return f, nil
}
