//go:build race

package sim

// raceEnabled: the race detector slows the simulator some twenty times;
// the simulator runs on one goroutine, so the ten-seed sweeps skip under
// it (the rest of the package still runs).
const raceEnabled = true
