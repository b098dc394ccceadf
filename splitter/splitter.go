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
	name        string
	seed        uint64       // layerSeed(salt)
	experiments []experiment // sorted by start; ranges are disjoint
}

type experiment struct {
	name       string
	start, end int    // owns layer buckets [start, end)
	seed       uint64 // experimentSeed(layer seed, name)
	variants   []variant
}

type variant struct {
	name, topic string
	end         int // owns variant buckets [previous end, end)
}

// Assignment places a key in a variant of an experiment of a layer. Its
// strings are those of the configuration given to New (not copies).
type Assignment struct {
	Layer      string
	Experiment string
	Variant    string
	Topic      string // the variant's topic
	// Bucket is the key's bucket in the layer, in [0, Buckets): the one
	// that put it in the experiment. It is the same for every experiment
	// of the layer and survives any change of allocations.
	Bucket int
}

// New validates layers and returns a Splitter for them. If the layers are
// invalid, the error is a Problems listing every problem (see Validate),
// which wraps ErrInvalidConfig. New keeps no reference to layers.
func New(layers []Layer) (*Splitter, error) {
	if ps := Validate(layers); len(ps) > 0 {
		return nil, ps
	}
	s := &Splitter{layers: make([]layer, len(layers))}
	for i, l := range layers {
		salt := l.Salt
		if salt == "" {
			salt = l.Name
		}
		cl := layer{name: l.Name, seed: layerSeed(salt)}
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
			for k, v := range e.Variants {
				ce.variants[k] = variant{name: v.Name, topic: v.Topic, end: ends[k]}
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
		b := bucketOf(key, l.seed)
		e := l.find(b)
		if e == nil {
			continue
		}
		v := e.pick(bucketOf(key, e.seed))
		dst = append(dst, Assignment{
			Layer:      l.name,
			Experiment: e.name,
			Variant:    v.name,
			Topic:      v.topic,
			Bucket:     b,
		})
	}
	return dst
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
