package loadgen

// Generated returns how many events Next has returned.
func (g *Generator) Generated() uint64 { return g.seq }
