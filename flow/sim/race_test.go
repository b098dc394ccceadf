//go:build race

package sim

// raceEnabled: the race detector slows the simulator some twenty times,
// so the ten-seed sweeps run one seed of each scenario under it.
const raceEnabled = true
