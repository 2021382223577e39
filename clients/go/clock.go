// The client's clock: monotonic nanoseconds since the package loaded.
//
// time.Since on a Time that carries a monotonic reading reads only the
// monotonic clock (one vDSO call, no system call), so monoNow is cheap enough
// for every take. Expiries of buffered IDs are instants on this clock.
//
// Thread-safety: clockBase is written once, at package initialisation.
package snowid

import "time"

var clockBase = time.Now()

// monoNow: monotonic nanoseconds since clockBase.
func monoNow() int64 { return int64(time.Since(clockBase)) }

// monoTime: the time.Time (with its monotonic reading) of a monoNow instant.
func monoTime(instant int64) time.Time { return clockBase.Add(time.Duration(instant)) }
