package hw

import "shardlab/unit"

// Sources, cited by the rows below (ids as in the project's research notes):
//
//	[gcp-v2]    https://cloud.google.com/tpu/docs/v2
//	[gcp-v3]    https://cloud.google.com/tpu/docs/v3
//	[gcp-v4]    https://cloud.google.com/tpu/docs/v4
//	[gcp-v5e]   https://cloud.google.com/tpu/docs/v5e
//	[gcp-v5p]   https://cloud.google.com/tpu/docs/v5p
//	[gcp-v6e]   https://cloud.google.com/tpu/docs/v6e
//	[gcp-7x]    https://cloud.google.com/tpu/docs/tpu7x
//	[gke-7x]    https://cloud.google.com/kubernetes-engine/docs/concepts/tpu-ironwood
//	[gcp-ms]    https://cloud.google.com/tpu/docs/multislice-introduction
//	[jax-info]  jax-ml/jax:jax/_src/pallas/mosaic/tpu_info.py @4f32df24
//	[sb-tpus]   https://jax-ml.github.io/scaling-book/tpus/ (jax-ml/scaling-book:tpus.md @54e2c439)
//	[mt-spec]   AI-Hypercomputer/maxtext:src/maxtext/utils/accelerator_to_spec_map.py @e591f30
//	[xpk-sys]   AI-Hypercomputer/xpk:src/xpk/core/system_characteristics.py @367c838
//	[cacm20]    Jouppi et al., "A Domain-Specific Supercomputer for Training Deep
//	            Neural Networks", CACM 63(7), 2020
//
// Where sources disagree the Cloud TPU page wins for capacities and peak
// FLOP/s, and the scaling book for per-link ICI bandwidth (the Cloud pages
// quote per-chip totals only for newer generations).
var catalog = [...]Chip{
	{
		Generation: V2, Name: "TPU v2", AcceleratorPrefix: "v2", Naming: CountsTensorCores,
		TensorCores:       2,                         // [gcp-v2], [jax-info]
		MXUsPerTensorCore: 1,                         // [cacm20]: one 128x128 MXU per core
		MXUDim:            128,                       // [jax-info]
		PeakBF16:          46e12,                     // [jax-info] (45 TFLOP/s in [cacm20])
		HBM:               16 * unit.GiB,             // [gcp-v2]: 16 GiB per chip
		HBMBandwidth:      716e9,                     // [jax-info]
		ICILinks:          4,                         // [sb-tpus]: 2D torus, 4 neighbours
		ICILinkBandwidth:  unit.BitsPerSecond(496e9), // [cacm20]: 496 Gbit/s per link (not re-checked here)
		TorusDims:         2,                         // [sb-tpus]
		JAXDevicesPerChip: 2,                         // [jax-info]: no megacore
		MaxSliceChips:     256, PodChips: 256,        // [gcp-v2]: v2-512 = 256 chips
		Host:    Host{MachineType: "v2-8", Chips: 4}, // [gcp-v2]: v2-8 is one host (no Compute Engine machine type)
		Sources: []string{"cloud.google.com/tpu/docs/v2", "jax tpu_info.py", "CACM 63(7) 2020"},
	},
	{
		Generation: V3, Name: "TPU v3", AcceleratorPrefix: "v3", Naming: CountsTensorCores,
		TensorCores:       2,                    // [gcp-v3]
		MXUsPerTensorCore: 2,                    // [gcp-v3]: two 128x128 MXUs per TensorCore
		MXUDim:            128,                  // [jax-info], [sb-tpus]
		PeakBF16:          123e12,               // [gcp-v3] (140e12 in [jax-info] and [sb-tpus])
		HBM:               32 * unit.GiB,        // [gcp-v3]
		HBMBandwidth:      900e9,                // [gcp-v3], [sb-tpus]
		ICILinks:          4,                    // [sb-tpus]
		ICILinkBandwidth:  100e9,                // [sb-tpus]: 1e11 B/s one way
		TorusDims:         2,                    // [gcp-v3]
		JAXDevicesPerChip: 2,                    // [jax-info]
		MaxSliceChips:     1024, PodChips: 1024, // [gcp-v3]: 1024 chips per pod (32x32 in [sb-tpus])
		Host:    Host{MachineType: "v3-8", Chips: 4}, // [sb-tpus]
		Sources: []string{"cloud.google.com/tpu/docs/v3", "scaling-book tpus.md"},
	},
	{
		Generation: V4, Name: "TPU v4", AcceleratorPrefix: "v4", Naming: CountsTensorCores,
		TensorCores:       2,             // [gcp-v4]
		MXUsPerTensorCore: 4,             // [gcp-v4]
		MXUDim:            128,           // [jax-info]
		PeakBF16:          275e12,        // [gcp-v4], [jax-info], [sb-tpus]
		PeakInt8:          275e12,        // [gcp-v4]: "275 teraflops (bf16 or int8)"
		HBM:               32 * unit.GiB, // [gcp-v4]
		HBMBandwidth:      1200e9,        // [gcp-v4], [sb-tpus]
		ICILinks:          6,             // [sb-tpus]: 3D torus
		ICILinkBandwidth:  45e9,          // [sb-tpus]: 4.5e10 B/s one way
		TorusDims:         3,             // [gcp-v4]
		// The Multislice doc's 176k-token minimum (two slices) is 8*C/W with
		// C/W = 22,000 FLOP/bit, i.e. 275 TFLOP/s over 12.5 Gbit/s per chip
		// (50 Gbit/s per 4-chip host); see collective.MinTokensPerSlice.
		DCNPerChip:        unit.BitsPerSecond(12.5e9), // [gcp-ms] (derived, see above)
		PCIe:              16e9,                       // [sb-tpus]: 16 GB/s each way
		JAXDevicesPerChip: 1,                          // [mt-spec]: megacore
		MaxSliceChips:     4096, PodChips: 4096,       // [gcp-v4]
		Host:    Host{MachineType: "ct4p-hightpu-4t", Chips: 4}, // [sb-tpus]: host 2x2x1
		Sources: []string{"cloud.google.com/tpu/docs/v4", "scaling-book tpus.md", "cloud.google.com/tpu/docs/multislice-introduction"},
	},
	{
		Generation: V5e, Name: "TPU v5e", AcceleratorPrefix: "v5litepod", Naming: CountsChips,
		TensorCores:       1,                        // [gcp-v5e]
		MXUsPerTensorCore: 4,                        // [gcp-v5e]
		MXUDim:            128,                      // [jax-info], [sb-tpus]
		PeakBF16:          197e12,                   // [gcp-v5e]
		PeakInt8:          393e12,                   // [gcp-v5e]
		HBM:               16 * unit.GiB,            // [gcp-v5e]
		HBMBandwidth:      819e9,                    // [gcp-v5e]
		ICILinks:          4,                        // [gcp-v5e]: 4 ICI ports
		ICILinkBandwidth:  45e9,                     // [sb-tpus]: 4.5e10 B/s one way
		TorusDims:         2,                        // [gcp-v5e]
		DCNPerChip:        unit.BitsPerSecond(25e9), // [gcp-v5e]: 2x100 Gbps NICs per 8-chip host
		JAXDevicesPerChip: 1,                        // [mt-spec]
		MaxSliceChips:     256, PodChips: 256,       // [gcp-v5e]: 16x16
		Host: Host{MachineType: "ct5lp-hightpu-4t", Chips: 4, VCPUs: 112, RAM: 192 * unit.GB, NUMANodes: 1}, // [gcp-v5e]
		// [gcp-v5e] VM types: "Each TPU VM in a v5e TPU slice contains 1, 4
		// or 8 chips"; its slice-shape table gives 2x4 one host and 1x1 an
		// eighth of one. (xpk @367c838 creates a GKE 2x4 as two
		// ct5lp-hightpu-4t VMs; the Cloud TPU accelerator type
		// v5litepod-8 is the one 8-chip VM.)
		SliceHosts: []Host{
			{MachineType: "ct5lp-hightpu-1t", Chips: 1, VCPUs: 24, RAM: 48 * unit.GB, NUMANodes: 1},
			{MachineType: "ct5lp-hightpu-8t", Chips: 8, VCPUs: 224, RAM: 384 * unit.GB, NUMANodes: 2},
		},
		Sources: []string{"cloud.google.com/tpu/docs/v5e", "scaling-book tpus.md"},
	},
	{
		Generation: V5p, Name: "TPU v5p", AcceleratorPrefix: "v5p", Naming: CountsTensorCores,
		TensorCores:       2,                        // [gcp-v5p]
		MXUsPerTensorCore: 4,                        // [gcp-v5p]
		MXUDim:            128,                      // [jax-info]
		PeakBF16:          459e12,                   // [gcp-v5p], [jax-info], [sb-tpus]
		PeakFP8:           459e12,                   // [gcp-v5p]: fp8 = bf16
		PeakInt8:          918e12,                   // [jax-info], [sb-tpus]
		HBM:               95 * unit.GiB,            // [gcp-v5p]
		HBMBandwidth:      2765e9,                   // [gcp-v5p]
		ICILinks:          6,                        // [sb-tpus]
		ICILinkBandwidth:  90e9,                     // [sb-tpus]: 9e10 B/s one way
		TorusDims:         3,                        // [gcp-v5p]
		DCNPerChip:        unit.BitsPerSecond(50e9), // [gcp-v5p]: 200 Gbps per 4-chip host
		PCIe:              16e9,                     // [sb-tpus]: 1.5e10–1.6e10 B/s
		JAXDevicesPerChip: 1,                        // [mt-spec]: megacore
		// [gcp-v5p]: "There are 8960 chips in a v5p Pod. The largest job
		// that can be scheduled is a 96 cube (6144 chip) job"; "The maximum
		// v5p shape is 16x16x24"; Multislice scales to 18432 chips.
		MaxSliceChips: 6144, PodChips: 8960,
		Host:    Host{MachineType: "ct5p-hightpu-4t", Chips: 4, VCPUs: 208, RAM: 448 * unit.GB}, // [gcp-v5p]
		Sources: []string{"cloud.google.com/tpu/docs/v5p", "scaling-book tpus.md", "jax tpu_info.py"},
	},
	{
		Generation: V6e, Name: "TPU v6e (Trillium)", AcceleratorPrefix: "v6e", Naming: CountsChips,
		TensorCores:       1,                         // [gcp-v6e]
		MXUsPerTensorCore: 2,                         // [gcp-v6e]
		MXUDim:            256,                       // [jax-info], [sb-tpus]
		PeakBF16:          918e12,                    // [gcp-v6e]
		PeakFP8:           918e12,                    // [gcp-7x] comparison table
		PeakInt8:          1836e12,                   // [gcp-v6e]
		HBM:               32 * unit.GiB,             // [gcp-v6e]
		HBMBandwidth:      1638e9,                    // [gcp-7x] comparison table
		ICILinks:          4,                         // [gcp-v6e]
		ICILinkBandwidth:  90e9,                      // [sb-tpus]: 9e10 B/s one way
		TorusDims:         2,                         // [gcp-v6e]
		DCNPerChip:        unit.BitsPerSecond(100e9), // [gcp-7x] table; 4x200 Gbps per 8-chip host in [gcp-v6e]
		PCIe:              32e9,                      // [sb-tpus]: 32 GB/s on v6e
		JAXDevicesPerChip: 1,                         // [mt-spec]
		MaxSliceChips:     256, PodChips: 256,        // [gcp-v6e]
		Host: Host{MachineType: "ct6e-standard-4t", Chips: 4, VCPUs: 180, RAM: 720 * unit.GB}, // [gcp-7x], [gcp-v6e]
		// [gcp-v6e] slice shapes: 2x4 is either one ct6e-standard-8t VM
		// (accelerator type v6e-8 in the TPU API, "optimized for
		// inference") or two ct6e-standard-4t VMs (GKE). Training slices
		// are costed as the two 4t VMs: that is how xpk @367c838 makes
		// v6e-8 (export's xpk target), how the published v6e-8 recipes
		// ran (tpu-recipes training/trillium Llama3.1-8B v6e-8: GKE
		// "v6e-4" nodes, topology 2x4), and the 8t's vCPUs and RAM are in
		// no stored source. Serving, which needs all 8 chips on one VM,
		// takes the 8t (SingleHost).
		// The same table makes 1x1 (v6e-1) one ct6e-standard-1t, "1/8"
		// of a host, and xpk @367c838 makes v6e-1 of the same VM
		// (core/system_characteristics.py: v6e-1x1 on ct6e-standard-1t,
		// transcribed in export/xpk-tpu-types.txt). Its vCPUs and RAM are
		// in no stored source ([gcp-v6e] and [gcp-7x] give them for the
		// 4t only), so they are 0: not published.
		SliceHosts: []Host{{MachineType: "ct6e-standard-1t", Chips: 1}},
		SingleHost: Host{MachineType: "ct6e-standard-8t", Chips: 8},
		Sources:    []string{"cloud.google.com/tpu/docs/v6e", "cloud.google.com/tpu/docs/tpu7x", "scaling-book tpus.md"},
	},
	{
		Generation: TPU7x, Name: "TPU7x (Ironwood)", AcceleratorPrefix: "tpu7x", Naming: CountsTensorCores,
		TensorCores: 2,       // [gcp-7x]
		MXUDim:      256,     // [jax-info]; MXUs per TensorCore not published
		PeakBF16:    2307e12, // [gcp-7x]
		PeakFP8:     4614e12, // [gcp-7x]
		HBM:         192 * unit.GiB,
		// [gcp-7x]: 192 GiB HBM, 7.38 TB/s
		HBMBandwidth: 7380e9,
		ICILinks:     6, // 3D torus ([mt-spec], [gke-7x]); six links per chip is implied, not stated
		// [gcp-7x]: 1.2 TB/s bidirectional ICI per chip = 6 links x 2 directions x 100 GB/s.
		ICILinkBandwidth:  100e9,
		TorusDims:         3,
		DCNPerChip:        unit.BitsPerSecond(100e9), // [gcp-7x]
		JAXDevicesPerChip: 2,                         // [mt-spec], [gcp-7x]: each TensorCore is a device
		MaxSliceChips:     9216, PodChips: 9216,      // [gcp-7x], [mt-spec]: tpu7x-18432 = 16x24x24
		Host: Host{
			MachineType: "tpu7x-standard-4t", Chips: 4, VCPUs: 224, RAM: 960 * unit.GB, NUMANodes: 2,
			BootDisk:  "Hyperdisk Balanced",
			DataDisks: []string{"Hyperdisk Balanced", "Hyperdisk ML"},
		}, // [gcp-7x], [gke-7x]
		// One chip (1x1x1, tpu7x-2) is one tpu7x-standard-1t VM:
		// [xpk-sys] makes tpu7x-1x1x1 and tpu7x-2 of that machine type,
		// one VM of 1 chip (transcribed in export/xpk-tpu-types.txt),
		// [mt-spec] compiles "tpu7x-2" as tpu7x:1x1x1 with 2 devices, and
		// tpu-inference @b8692ff0 serves on it daily
		// (.buildkite/benchmark/cases/daily/daily_qwen3_32B_random_tpu7x_2.json:
		// "v7x-2", tensor-parallel-size 2). The stored [gcp-7x] and
		// [gke-7x] pages describe only the 4-chip VM ("each Ironwood
		// (TPU7x) VM contains 4 chips and 2 NICs" is about NUMA binding)
		// and neither lists nor refutes a 1-chip one. The 1t's vCPUs, RAM
		// and NICs are in no stored source, so they are 0: not published.
		SliceHosts: []Host{{MachineType: "tpu7x-standard-1t", Chips: 1}},
		Sources:    []string{"cloud.google.com/tpu/docs/tpu7x", "cloud.google.com/kubernetes-engine/docs/concepts/tpu-ironwood", "maxtext accelerator_to_spec_map.py", "xpk system_characteristics.py"},
	},
}

// defaultTopologies lists, per generation, the topology of each accelerator
// type in chip order. v4, v5p, tpu7x, v5e and v6e: [mt-spec] (tpu7x-2 is
// 1x1x1, one chip on its own tpu7x-standard-1t VM: the chip's SliceHosts).
// v2 and v3: the slice shapes of [gcp-v2] and [gcp-v3]. Every shape is at
// most MaxSliceChips: [mt-spec] also lists v5p-13824 (12x24x24, 6912 chips)
// and v5p-17920 (16x20x28, the whole 8960-chip pod), which are left out
// because [gcp-v5p] caps a v5p slice at 16x16x24 (6144 chips).
var defaultTopologies = map[Generation]string{
	V2:  "2x2 4x4 8x8 8x16 16x16",
	V3:  "2x2 4x4 4x8 8x8 8x16 16x16 16x32 32x32",
	V4:  "2x2x1 2x2x2 2x2x4 2x4x4 4x4x4 4x4x8 4x4x12 4x8x8 8x8x8 8x8x12 8x8x16 8x16x16",
	V5e: "1x1 2x2 2x4 4x4 4x8 8x8 8x16 16x16",
	V6e: "1x1 2x2 2x4 4x4 4x8 8x8 8x16 16x16",
	V5p: "2x2x1 2x2x2 2x2x4 2x4x4 4x4x4 4x4x8 4x4x12 4x8x8 4x4x20 4x8x12 4x4x28 8x8x8 4x12x12 4x8x20 4x4x44 " +
		"8x8x12 4x4x52 4x8x28 4x12x20 8x8x16 4x4x68 8x12x12 4x4x76 8x8x20 4x12x28 4x8x44 4x4x92 8x12x16 " +
		"4x20x20 4x8x52 12x12x12 8x8x28 4x4x116 8x12x20 4x4x124 8x16x16 4x12x44 4x8x68 4x20x28 12x12x16 " +
		"4x4x148 4x8x76 4x12x52 8x16x20 4x4x164 8x12x28 4x4x172 8x8x44 12x12x20 4x8x92 4x4x188 12x16x16 " +
		"4x28x28 8x20x20 4x12x68 8x8x52 4x4x212 12x12x24 4x20x44 8x16x28 4x12x76 4x8x116 4x4x236 12x16x20 " +
		"4x4x244 4x8x124 12x12x28 16x16x16 4x20x52 8x12x44 8x8x68 4x12x92 8x20x28 12x16x24 4x8x148 " +
		"12x20x20 8x8x76 4x28x44 8x12x52 16x16x20 12x12x36 4x8x164 12x16x28 4x20x68 4x8x172 4x12x116 " +
		"8x16x44 12x20x24 4x28x52 8x8x92 4x12x124 4x8x188 4x20x76 16x16x24",
	TPU7x: "1x1x1 2x2x1 2x2x2 2x2x4 2x4x4 4x4x4 4x4x8 4x4x12 4x8x8 4x4x20 4x8x12 4x4x28 8x8x8 4x12x12 4x8x20 " +
		"4x4x44 8x8x12 4x4x52 4x8x28 4x12x20 8x8x16 4x4x68 8x12x12 4x4x76 8x8x20 4x12x28 4x8x44 4x4x92 " +
		"8x12x16 4x20x20 4x8x52 12x12x12 8x8x28 4x4x116 8x12x20 4x4x124 8x16x16 4x12x44 4x8x68 4x20x28 " +
		"12x12x16 4x4x148 4x8x76 4x12x52 8x16x20 4x4x164 8x12x28 4x4x172 8x8x44 12x12x20 4x8x92 4x4x188 " +
		"12x16x16 4x28x28 8x20x20 4x12x68 8x8x52 4x4x212 12x12x24 4x20x44 8x16x28 4x12x76 4x8x116 " +
		"4x4x236 12x16x20 4x4x244 4x8x124 12x12x28 16x16x16 4x20x52 8x12x44 8x8x68 4x12x92 8x20x28 " +
		"12x16x24 4x8x148 12x20x20 8x8x76 4x28x44 8x12x52 16x16x20 12x12x36 4x8x164 12x16x28 4x20x68 " +
		"4x8x172 4x12x116 8x16x44 12x20x24 4x28x52 8x8x92 4x12x124 4x8x188 4x20x76 16x16x24 12x24x24 " +
		"16x16x32 16x20x28 16x24x24",
}
