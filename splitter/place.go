package splitter

// Placement is where a key falls in one layer: the assignment when an
// experiment of the layer holds the key, and in every case the raw bucket
// that decided it. It answers "which variant did this key get, and why?"
// (`throttler assign`).
type Placement struct {
	// Assignment has the layer and its scheme always; Experiment, Variant
	// and Topic only when In; Bucket only when HasBucket.
	Assignment
	// In reports whether an experiment of the layer holds the key.
	In bool
	// HasBucket reports whether Bucket holds the scheme's raw value for
	// the key (see Assignment.Bucket). It does whenever the key is In. A
	// key in no experiment has one in the throttler scheme (its layer
	// bucket) and in a vendor layer of one experiment (that experiment's
	// value, even when the vendor's other rules, such as a namespace or a
	// rollout, left the key out); it has none in a vendor layer of several
	// experiments, each of which hashes the key its own way, nor for an
	// empty key in the growthbook and unleash schemes, which do not hash
	// it.
	HasBucket bool
}

// Place appends to dst one Placement for each layer, in configuration
// order, and returns the extended slice. Its assignments are those of
// Assign. Place does not allocate when dst has room for one Placement per
// layer.
func (s *Splitter) Place(key []byte, dst []Placement) []Placement {
	for i := range s.layers {
		l := &s.layers[i]
		e, v, b, ok := l.place(key)
		p := Placement{Assignment: Assignment{Layer: l.name, Scheme: l.scheme, Bucket: b}, HasBucket: ok}
		if e != nil {
			p.Experiment, p.Variant, p.Topic, p.In = e.name, v.name, v.topic, true
		}
		dst = append(dst, p)
	}
	return dst
}
