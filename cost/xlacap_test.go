package cost

import "testing"

// TestXLACapacityPerDevice: a TPU7x chip's 2 JAX devices each hold half
// its XLA capacity (2 × 94.74 GiB, hw/xla_hbm.csv); a chip of one device
// (or a count below one) holds it whole.
func TestXLACapacityPerDevice(t *testing.T) {
	m := Memory{XLACapacity: 2 * 101726525849}
	for devices, want := range map[int]int64{2: 101726525849, 1: 2 * 101726525849, 0: 2 * 101726525849} {
		if got := m.XLACapacityPerDevice(devices); int64(got) != want {
			t.Errorf("%d devices: %d, want %d", devices, got, want)
		}
	}
}
