package queues

import "strconv"

// A Sampler reads a discipline at successive instants (the samples of a
// trace) and gives what it held at each and counted since the previous
// one. Its zero value with Q set starts counting from the discipline's
// creation.
type Sampler struct {
	Q    Qdisc
	prev Stats
}

// Sample is a discipline at one instant: its backlog then, and what it
// counted over the interval since the previous sample.
type Sample struct {
	Bytes, Len         int    // the backlog, in wire bytes and packets
	Enqueued, Dequeued uint64 // packets
	// Sojourned is the number of packets dequeued whose sojourn was
	// measured; SojournMeanMS is their mean sojourn (0 when none), from
	// the exact sum of their sojourns in ns, so never below zero.
	Sojourned     uint64
	SojournMeanMS float64
	Drops         [NumDropReasons]uint64
	CEMarks       uint64
}

// SampleColumns name the figures Sample.AppendCSV appends, in order.
const SampleColumns = "sojourn_mean_ms,drops_overlimit,drops_aqm,drops_batch,ce_marks"

// Next reads the discipline and starts the next interval.
func (s *Sampler) Next() Sample {
	st := s.Q.Stats()
	x := Sample{
		Bytes: s.Q.Bytes(), Len: s.Q.Len(),
		Enqueued: st.Enqueued - s.prev.Enqueued, Dequeued: st.Dequeued - s.prev.Dequeued,
		Sojourned: st.Sojourn.Count() - s.prev.Sojourn.Count(),
		CEMarks:   st.CEMarks - s.prev.CEMarks,
	}
	if x.Sojourned > 0 {
		// The interval's own sum, an integer difference: a difference of
		// the running means times their counts cancels to a wrong, even
		// negative, mean.
		x.SojournMeanMS = float64(st.Sojourn.nsum-s.prev.Sojourn.nsum) / float64(x.Sojourned) / 1e6
	}
	for r := range x.Drops {
		x.Drops[r] = st.Drops[r] - s.prev.Drops[r]
	}
	s.prev = *st
	return x
}

// AppendCSV appends the figures of SampleColumns to b, each after a
// comma: the mean sojourn in ms (empty when no packet was dequeued), the
// drops of each reason and the CE marks.
func (x *Sample) AppendCSV(b []byte) []byte {
	b = append(b, ',')
	if x.Sojourned > 0 {
		b = strconv.AppendFloat(b, x.SojournMeanMS, 'f', 6, 64)
	}
	for _, v := range x.Drops {
		b = append(b, ',')
		b = strconv.AppendUint(b, v, 10)
	}
	b = append(b, ',')
	return strconv.AppendUint(b, x.CEMarks, 10)
}
