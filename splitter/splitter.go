package splitter

// Splitter assigns keys to experiment variants. It is built by New from
// validated layers and is immutable afterwards: it is safe for concurrent
// use by any number of goroutines.
//
// The zero Splitter has no layers: Assign returns dst unchanged.
type Splitter struct {
	layers []layer
}

type layer struct {
	name   string
	scheme string // one of Schemes
	vendor bool   // scheme != SchemeThrottler, tested on the hot path
	seed   uint64 // throttler: layerSeed(salt)
	salt   []byte // statsig: the layer salt of the experiments' segments
	// experiments: throttler, sorted by start, ranges disjoint; vendor
	// schemes, in configuration order, exclusive by the vendor's rules.
	experiments []experiment
}

type experiment struct {
	name       string
	start, end int    // throttler: owns layer buckets [start, end)
	seed       uint64 // throttler: experimentSeed(layer seed, name)
	variants   []variant
	vendor     *vendorExperiment // nil in the throttler scheme
}

type variant struct {
	name, topic string
	// end closes the variant's range: throttler, its variant buckets
	// [previous end, end); optimizely, its end of range in buckets;
	// statsig, its user bucket threshold; unleash, its cumulative weight.
	end int
	gb  growthBookRange // growthbook: its range of hashes
	// share is the fraction of the experiment's keys it receives.
	share float64
}

// Assignment places a key in a variant of an experiment of a layer. Its
// strings are those of the configuration given to New (not copies).
type Assignment struct {
	Layer      string
	Experiment string
	Variant    string
	Topic      string // the variant's topic
	// Scheme is the experiment's hash scheme, one of Schemes.
	Scheme string
	// Bucket is the scheme's raw value for the key, the one that put it in
	// the variant: throttler, the key's bucket in the layer, 0 to 9999
	// (the same for every experiment of the layer, and it survives any
	// change of allocations); growthbook, GrowthBook's hash in [0, 1);
	// optimizely, Optimizely's bucket, 0 to 9999; statsig, the user bucket
	// of the experiment's salt, 0 to 999; unleash, the variant value, 1 to
	// the total weight.
	Bucket float64
}

// New validates layers and returns a Splitter for them. If the layers are
// invalid, the error is a Problems listing every problem (see Validate),
// which wraps ErrInvalidConfig. New keeps no reference to layers.
func New(layers []Layer) (*Splitter, error) {
	if ps := Validate(layers); len(ps) > 0 {
		return nil, ps
	}
	s := &Splitter{layers: make([]layer, len(layers))}
	for i := range layers {
		l := &layers[i]
		if scheme := schemeOf(&l.Experiments[0]); scheme != SchemeThrottler {
			s.layers[i] = newVendorLayer(l, scheme)
			continue
		}
		salt := l.Salt
		if salt == "" {
			salt = l.Name
		}
		cl := layer{name: l.Name, scheme: SchemeThrottler, seed: layerSeed(salt)}
		for _, e := range l.Experiments {
			start, _ := toBuckets(e.Start)
			alloc, _ := toBuckets(e.Allocation)
			ce := experiment{
				name:     e.Name,
				start:    start,
				end:      start + alloc,
				seed:     experimentSeed(cl.seed, e.Name),
				variants: make([]variant, len(e.Variants)),
			}
			ends, _ := variantEnds(e.Variants, make([]int, 0, len(e.Variants)))
			prev := 0
			for k, v := range e.Variants {
				ce.variants[k] = variant{name: v.Name, topic: v.Topic, end: ends[k], share: float64(ends[k]-prev) / Buckets}
				prev = ends[k]
			}
			cl.experiments = insertSorted(cl.experiments, ce)
		}
		s.layers[i] = cl
	}
	return s, nil
}

// insertSorted inserts e into es, kept sorted by start.
func insertSorted(es []experiment, e experiment) []experiment {
	i := len(es)
	for i > 0 && es[i-1].start > e.start {
		i--
	}
	es = append(es, experiment{})
	copy(es[i+1:], es[i:])
	es[i] = e
	return es
}

// Assign appends to dst one Assignment for each layer, in configuration
// order, whose experiments include key, and returns the extended slice. It
// appends nothing when key is in no experiment: the caller then sends the
// event to its output topic. Route picks the destination topic from the
// result.
//
// Assign does not allocate when dst has room for one Assignment per layer.
// A nil key is treated as an empty key; every keyless event hashes alike,
// so callers should route keyless events without calling Assign, or key
// them by another field.
func (s *Splitter) Assign(key []byte, dst []Assignment) []Assignment {
	for i := range s.layers {
		l := &s.layers[i]
		var e *experiment
		var v *variant
		var b float64
		if !l.vendor { // throttlerPlace, written out: the hot path
			lb := bucketOf(key, l.seed)
			if e = l.find(lb); e == nil {
				continue
			}
			v, b = e.pick(bucketOf(key, e.seed)), float64(lb)
		} else {
			e, v, b, _ = l.vendorLayerPlace(key)
		}
		if e == nil {
			continue
		}
		dst = append(dst, Assignment{
			Layer:      l.name,
			Experiment: e.name,
			Variant:    v.name,
			Topic:      v.topic,
			Scheme:     l.scheme,
			Bucket:     b,
		})
	}
	return dst
}

// place returns the experiment and variant of the layer that hold key (nil
// when none does) and the scheme's raw bucket for the key, ok false when
// there is none to report (see Placement).
func (l *layer) place(key []byte) (e *experiment, v *variant, bucket float64, ok bool) {
	if !l.vendor {
		e, v, b := l.throttlerPlace(key)
		return e, v, float64(b), true
	}
	return l.vendorLayerPlace(key)
}

// throttlerPlace is place in the throttler scheme, with the layer bucket.
func (l *layer) throttlerPlace(key []byte) (*experiment, *variant, int) {
	b := bucketOf(key, l.seed)
	e := l.find(b)
	if e == nil {
		return nil, nil, b
	}
	return e, e.pick(bucketOf(key, e.seed)), b
}

// vendorLayerPlace is place in a vendor scheme: the first experiment of
// the layer that holds the key (by validation, the only one).
func (l *layer) vendorLayerPlace(key []byte) (e *experiment, v *variant, bucket float64, ok bool) {
	for i := range l.experiments {
		e = &l.experiments[i]
		k, b, ok := e.vendorPlace(l, key)
		if k >= 0 {
			return e, &e.variants[k], b, ok
		}
		if len(l.experiments) == 1 {
			return nil, nil, b, ok
		}
	}
	return nil, nil, 0, false
}

// find returns the experiment whose range holds bucket b, or nil.
func (l *layer) find(b int) *experiment {
	// Binary search for the first experiment that ends after b.
	lo, hi := 0, len(l.experiments)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if l.experiments[m].end <= b {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(l.experiments) && l.experiments[lo].start <= b {
		return &l.experiments[lo]
	}
	return nil
}

// pick returns the variant that owns variant bucket vb.
func (e *experiment) pick(vb int) *variant {
	for k := range e.variants[:len(e.variants)-1] {
		if vb < e.variants[k].end {
			return &e.variants[k]
		}
	}
	return &e.variants[len(e.variants)-1]
}

// Route returns the topic of an event given its assignments (the result of
// Assign): the Topic of the first assignment, that is of the earliest
// configured layer that has the key in an experiment. ok is false when
// there are no assignments, and the event goes to the output topic.
func Route(assignments []Assignment) (topic string, ok bool) {
	if len(assignments) == 0 {
		return "", false
	}
	return assignments[0].Topic, true
}

// Topics returns the distinct topics the splitter's variants route to, in
// the order of the layers, experiments and variants (for creating them).
func (s *Splitter) Topics() []string {
	if s == nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, l := range s.layers {
		for _, e := range l.experiments {
			for _, v := range e.variants {
				if !seen[v.topic] {
					seen[v.topic] = true
					out = append(out, v.topic)
				}
			}
		}
	}
	return out
}
